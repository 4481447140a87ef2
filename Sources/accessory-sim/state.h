/*
 * accessory-sim: virtual USB accessories on a umockdev testbed.
 *
 * The lowest layer: the types every layer shares, the one Sim (state.c),
 * logging, instance references, specs (spec.c), reading an instance's
 * descriptors (descriptors.c) and umockdev's worker thread (worker.c).
 * The layers above, lowest first (scripts/check-sim-layers enforces it):
 * uevent_guard.c, topology.c, materialization (testbed.c, materialize.c),
 * the kinds (loopback.c, hub.c, android.c, kinds.c), the usbdevfs handler
 * (urbs.c, clients.c, ch9.c, usbfs.c), plug/unplug (devices.c), the control
 * socket (commands.c, control.c) and main.c (with ctl_client.c and
 * privdir.c). No file calls a file above it; news travels upward through
 * handlers that the layer above registers.
 *
 * Threads: the GLib default main context (main thread) runs the control
 * socket, child supervision and every testbed change (add/remove/uevent).
 * umockdev runs the usbdevfs ioctl emulation on its own worker thread
 * ("umockdev-testbed-worker"). All simulator state is guarded by sim.lock,
 * a recursive mutex. Never call a umockdev testbed function while holding
 * sim.lock: the testbed may need the worker thread, which may be waiting
 * for the lock.
 *
 * An instance's life (one owner, one place where it dies):
 *  - sim.instances owns every Instance, from instance_register() (plug) to
 *    instance_release() (state.c), the one function that frees one. Nothing
 *    else frees an instance, and nothing counts references to it.
 *  - While it is plugged, the main thread may use it freely: only the main
 *    thread unplugs, and only an unplugged instance can die.
 *  - An unplug marks it gone and unbinds it from its /dev node (usbfs.c's
 *    nodes: clients that connect from then on get ENODEV), removes it from
 *    the testbed, and then departs it (usbfs_instance_depart): the main
 *    thread's last touch. The worker fails what it has pending and releases
 *    it; it dies there, or, if clients (open file descriptors) still hold
 *    it, when the last of them closes (clients.c). Both run on the worker
 *    with sim.lock held (on the main thread only when no client has ever
 *    connected, so that no worker context is known).
 *  - Code that comes back later (an idle, a worker call) carries the
 *    instance's id and looks it up (instance_lookup, topology_find_id),
 *    never a pointer.
 */
#ifndef ACCESSORY_SIM_STATE_H
#define ACCESSORY_SIM_STATE_H

#include <glib.h>
#include <umockdev.h>

/* Buses (host controllers, each with its root hub usbN): --buses N, 1-16. */
#define SIM_MAX_BUSES 16
/* A root hub's ports in its hub descriptor, with sysfs port directories and
 * power switching (ports 1-31: a hub's power state is a 32-bit mask). */
#define SIM_ROOT_HUB_PORTS 31
/* The most interfaces an instance has (a kind's descriptors decide how many,
 * up to this; 18d1:2d01 has two). Claims, kernel drivers and the sysfs
 * interface directories are per interface. */
#define SIM_NIFACES 8
/* Bulk OUT data that has not been read back yet. Past this, bulk OUT URBs
 * are NAKed (they stay pending) until IN transfers drain the FIFO. */
#define SIM_FIFO_LIMIT (32u * 1024u * 1024u)

/* What an accessory is: its descriptors and what it does with transfers and
 * vendor requests. */
typedef enum {
    KIND_LOOPBACK = 0,   /* one vendor interface; bulk (or ",interrupt") OUT 0x01 echoed on IN 0x81 */
    KIND_PHONE,          /* ",android": an MTP-like phone that speaks Android Open Accessory 2 */
    KIND_PHONE_ACCESSORY, /* what a phone becomes on START: 18d1:2d01, accessory + adb */
    KIND_HUB              /* "plug-hub": a USB 2.0 hub with hub_ports downstream ports */
} Kind;

/* How a hub's ports switch power (its descriptor's wHubCharacteristics bits 1:0). */
typedef enum {
    POWER_PER_PORT = 0, /* 01: one by one (the default) */
    POWER_GANGED,       /* 00: all ports together */
    POWER_NONE          /* 1x: not at all */
} PowerSwitching;

/* The recovery step that cures a wedged device ("wedge --cured-by"); a step
 * cures it when it is this one or a later one. */
typedef enum {
    WEDGE_NONE = 0,
    WEDGE_RESET,
    WEDGE_REAUTHORIZE,
    WEDGE_POWER_CYCLE,
    WEDGE_NEVER
} Wedge;

typedef struct {
    guint16 vid;
    guint16 pid;
    char *serial;   /* NULL: no serial number */
    char *protocol; /* interface string (iInterface) */
    guint8 interface; /* ",interface=N": the protocol interface's bInterfaceNumber */
    gboolean interrupt; /* ",interrupt": interrupt endpoints instead of bulk */
    gboolean noname;    /* ",noname": iInterface 0, the interface has no string */
    Kind kind;
    guint8 hub_ports; /* KIND_HUB: downstream ports */
    PowerSwitching power; /* KIND_HUB: how its ports switch */
    gboolean superspeed;  /* KIND_HUB: the USB 3 half of a hub (descriptor type 0x2A) */
    gboolean paired;      /* KIND_HUB: one half of a USB 3 hub; the other is at the same
                           * place on the next bus (SuperSpeed) or the one before */
    gboolean no_disable;  /* KIND_HUB: its ports have no sysfs `disable` (a kernel before 6.0) */
    Wedge wedge;          /* "wedge": transfers time out until this step (travels with the device) */
} Spec;

/* The interfaces of an instance live in slots 0..nifaces-1 of the
 * per-interface arrays; this maps a bInterfaceNumber from a client to its
 * slot, or to SIM_NIFACES (no such interface). */
#define IFACE_SLOT(inst, n) iface_slot((inst), (unsigned int)(n))

typedef enum { FAULT_NONE = 0, FAULT_STALL, FAULT_TIMEOUT } FaultKind;

/* One bulk OUT transfer's data in the echo FIFO. The data stays in the OUT
 * URB's resolved buffer (no copy); len 0 is a zero-length packet. */
typedef struct {
    UMockdevIoctlData *data; /* NULL for a zero-length packet */
    gsize off;
    gsize len;
} Chunk;

typedef struct Instance Instance;
typedef struct Client Client;
typedef struct Urb Urb;

/* One enumeration of a device: a bus address, a sysfs directory and a /dev
 * node (whose usbdevfs listener binds its clients to it). A replug creates a
 * new Instance for the same port. */
struct Instance {
    guint64 id;    /* unique for the run (sim.instances' key); 0: not registered */
    gboolean root_hub;
    Spec spec;
    char *port;    /* sysfs name: "usb1" or "1-1", "1-1.4", ... */
    int bus;
    int addr;
    char *syspath; /* "/sys/devices/usb1/1-1" */
    guint nifaces;
    guint8 ifnums[SIM_NIFACES];        /* bInterfaceNumber by slot */
    char *ifnames[SIM_NIFACES];        /* "1-1:1.0" by slot */
    char *devnode; /* "/dev/bus/usb/001/002" */
    GBytes *descriptors; /* device descriptor + full configuration */
    char *strings[8];    /* string descriptors by index (NULL: none) */

    /* Everything below is guarded by sim.lock. */
    gboolean gone;           /* detached: ioctls fail with ENODEV */
    gboolean departed;       /* the main thread is done with it: it dies with its last client */
    gboolean kernel_order;   /* gone in the kernel's order: pending URBs fail with
                              * -EPROTO (IN) / -ESHUTDOWN (OUT), not -ENODEV */
    gboolean vanish_pending; /* unplug-after budget reached */
    GList *clients;          /* Client*: open file descriptors */
    GQueue fifo;             /* Chunk*: echo data not yet read back */
    gsize fifo_bytes;
    GQueue in_pending;       /* Urb*: bulk IN waiting for data */
    GQueue out_pending;      /* Urb*: bulk OUT NAKed (FIFO full) */
    GQueue parked;           /* Urb*: never complete until discarded */
    gboolean halted_out;
    gboolean halted_in;
    gboolean halted_other; /* any endpoint but 0x01 and 0x81 */
    char *aoa_strings[6];  /* Android Open Accessory strings received */
    FaultKind fault;
    gint64 unplug_after; /* < 0: none */
    int config;
    Client *claim_owner[SIM_NIFACES];
    char *kdriver[SIM_NIFACES];      /* pretend kernel driver, NULL: none */
    char *kdriver_last[SIM_NIFACES]; /* for USBDEVFS_CONNECT */

    /* statistics for "ctl ioctl-log" */
    guint opens, claims, releases, dropped, resets, urbs;
    guint bulk_urbs, interrupt_urbs, control_urbs;
    guint64 bytes_out, bytes_in;

    /* hubs: bit n set = port n powered off (ports 1-31) */
    guint32 ports_off;
};

typedef struct {
    UMockdevTestbed *testbed;
    char *root;            /* testbed root directory */
    GRecMutex lock;
    GMainContext *worker_ctx; /* umockdev's ioctl thread (set once at start-up) */
    GHashTable *instances;    /* id -> Instance*: every live instance, plugged or departed (the owner) */
    guint64 next_instance_id;
    GPtrArray *accessories;   /* Instance*: present devices (plugged hubs too, not root hubs) */
    int nbuses;
    Instance *root_hubs[SIM_MAX_BUSES + 1]; /* by bus number */
    gboolean addr_used[SIM_MAX_BUSES + 1][128];
    int devnum_next[SIM_MAX_BUSES + 1];
    gboolean debug;
    /* --kernel-order[=MS]: every plain unplug (unplug, replug, storm) goes in the
     * kernel's order, the uevent MS ms late; < 0: off (the contract's plain order). */
    int kernel_order_ms;
    /* Port power: one "PORT off" / "PORT on" line per change, in order ("ctl power-log"),
     * and the devices waiting on unpowered ports (topology.c's parked list). */
    GPtrArray *power_log; /* char* */
    GPtrArray *parked;    /* Parked* */
} Sim;

extern Sim sim;

/* state.c: logging (ACCESSORY_SIM_DEBUG) and instances' lives (see above) */
void sim_log(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* Gives a new instance its id and puts it in sim.instances (sim.lock held). */
void instance_register(Instance *inst);
/* The live instance with this id, or NULL once it has died (sim.lock held). */
Instance *instance_lookup(guint64 id);
/* Frees inst if it has departed and no client holds it (sim.lock held): the
 * one place where an instance dies. TRUE if it did: inst is gone for good. */
gboolean instance_release(Instance *inst);
/* Frees the echo FIFO (sim.lock held; the worker thread, where URB data lives,
 * unless no client ever talked to the instance). */
void instance_fifo_clear(Instance *inst);

/* A root hub or a plugged hub: it answers hub class requests and has ports. */
static inline gboolean is_hub(const Instance *inst)
{
    return inst->root_hub || inst->spec.kind == KIND_HUB;
}

/* The kinds that answer Android Open Accessory requests (android.c). */
static inline gboolean is_android(const Instance *inst)
{
    return inst->spec.kind == KIND_PHONE || inst->spec.kind == KIND_PHONE_ACCESSORY;
}

static inline unsigned int iface_slot(const Instance *inst, unsigned int n)
{
    for (unsigned int i = 0; i < inst->nifaces; i++)
        if (inst->ifnums[i] == n)
            return i;
    return SIM_NIFACES;
}

/* spec.c: parsing VID:PID[:SERIAL[:PROTOCOL]][,OPTION]... */
gboolean spec_parse(const char *text, Spec *out, char **error);
void spec_clear(Spec *spec);
void spec_copy(Spec *dst, const Spec *src);

/* descriptors.c: what an instance's descriptors say (immutable: any thread) */
static inline unsigned le16(const guint8 *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}
static inline const guint8 *desc_bytes(const Instance *inst)
{
    return g_bytes_get_data(inst->descriptors, NULL);
}
/* The interface descriptor (alternate setting 0) of a slot, NULL: none. */
const guint8 *interface_desc(const Instance *inst, unsigned int slot);
/* What the descriptors say about one endpoint. */
typedef struct {
    gboolean exists;
    unsigned int slot;  /* the interface that owns it */
    gboolean interrupt; /* an interrupt endpoint (else bulk) */
} EndpointInfo;
EndpointInfo endpoint_info(const Instance *inst, guint8 ep);

/* worker.c: umockdev's ioctl thread, whose main context sim.worker_ctx is */
/* Learns umockdev's worker context by connecting to devnode's ioctl socket
 * (main thread, at start-up). */
gboolean worker_capture(const char *devnode);
/* Notes the calling thread's context as the worker's (worker thread). */
void worker_note_context(void);
/* Waits until the worker thread has run everything queued so far. */
void worker_barrier(void);
/* Runs fn(data) on the worker thread, after everything queued so far, and
 * waits for it up to timeout_us: TRUE if it ran in time. destroy(data) runs
 * once both are done with it (the wait, and the worker's call, which may come
 * after a wait that gave up). FALSE at once when no worker context is known. */
gboolean worker_run(void (*fn)(gpointer data), gpointer data, GDestroyNotify destroy, gint64 timeout_us);

#endif
