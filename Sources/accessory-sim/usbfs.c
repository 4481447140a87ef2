/*
 * accessory-sim: usbdevfs emulation behind each /dev/bus/usb/BBB/DDD node.
 *
 * umockdev forwards every ioctl of a client (one open file descriptor) to
 * the "handle-ioctl" signal of the handler attached to the node; that runs
 * on umockdev's worker thread. Client memory is reached through
 * UMockdevIoctlData: resolve() copies it in, and local changes are written
 * back when the ioctl is completed.
 *
 * The loopback: bulk OUT 0x01 data goes into a per-device FIFO of chunks,
 * one chunk per OUT transfer, and comes back on bulk IN 0x81 in order. An IN
 * URB completes when it is full or when the chunk it is reading ends (a
 * transfer boundary ends the IN transfer as a short packet), so an IN URB
 * smaller than the queued data takes part of it and the next IN URB gets the
 * rest. A zero-length OUT transfer is echoed as a zero-length IN transfer.
 * IN URBs without data stay pending until data arrives. OUT URBs are NAKed
 * (stay pending) while more than SIM_FIFO_LIMIT bytes wait to be read.
 *
 * Scripted faults ("ctl fault") apply to the next bulk URB submitted, in
 * either direction: "stall" completes it with -EPIPE and leaves that
 * endpoint halted (later URBs on it stall too) until CLEAR_HALT (or
 * SET_INTERFACE, SET_CONFIGURATION, RESET); "timeout" parks it: it never
 * completes (an OUT URB's data is not echoed) until DISCARDURB, which
 * completes it with -ENOENT as usual. "unplug-after=BYTES" lets BYTES more
 * bulk OUT bytes through (they are echoed); the URB that crosses the limit
 * completes with -ENODEV and the bytes it got in, and the device is then
 * removed as by "ctl unplug" (with uevents). BYTES=0 removes it at the next
 * bulk OUT URB.
 *
 * URBs and claims belong to the client that made them and are dropped when
 * it closes the node (umockdev 0.17 never emits "client-vanished"; the
 * client's "connected" property changes instead). On detach every pending URB completes with -ENODEV;
 * REAPURB/REAPURBNDELAY still return completed URBs, then fail with ENODEV,
 * like the kernel. Not emulated: USBDEVFS_BULK (synchronous bulk),
 * isochronous URBs, streams.
 */
#define _GNU_SOURCE
#include "sim.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/usb/ch9.h>
#include <linux/usbdevice_fs.h>

#define CLIENT_KEY "accessory-sim-client"
#define HUB_DESCRIPTOR_TYPE 0x29

#define SIM_CAPS                                                                                    \
    (USBDEVFS_CAP_ZERO_PACKET | USBDEVFS_CAP_BULK_CONTINUATION | USBDEVFS_CAP_NO_PACKET_SIZE_LIM | \
     USBDEVFS_CAP_BULK_SCATTER_GATHER | USBDEVFS_CAP_REAP_AFTER_DISCONNECT)

struct Client {
    UMockdevIoctlClient *ioc; /* not owned: the client owns us */
    Instance *inst;           /* owned reference */
    GQueue completed;         /* Urb*: ready to be reaped */
    gboolean reap_waiting;    /* blocked in USBDEVFS_REAPURB */
    gboolean closed;
};

struct Urb {
    Client *client;
    UMockdevIoctlData *urbd; /* the struct usbdevfs_urb */
    UMockdevIoctlData *buf;  /* its buffer, NULL if empty */
    gulong addr;             /* client address of the URB, for DISCARDURB */
    guint8 type;
    guint8 ep;
    guint flags;
    gsize len;
    gsize actual;
    int status;
};

/* ---- helpers --------------------------------------------------------------- */

static void reply(UMockdevIoctlClient *ioc, long res, int err)
{
    umockdev_ioctl_client_complete(ioc, res, err);
}

static void fail(UMockdevIoctlClient *ioc, int err)
{
    umockdev_ioctl_client_complete(ioc, -1, err);
}

static UMockdevIoctlData *resolve(UMockdevIoctlData *parent, gsize offset, gsize len)
{
    GError *err = NULL;
    UMockdevIoctlData *d = umockdev_ioctl_data_resolve(parent, offset, len, &err);
    if (err) {
        sim_log("cannot read client memory: %s", err->message);
        g_error_free(err);
    }
    return d;
}

static void urb_free(Urb *r)
{
    g_clear_object(&r->urbd);
    g_clear_object(&r->buf);
    g_free(r);
}

static void chunk_free(Chunk *ch)
{
    g_clear_object(&ch->data);
    g_free(ch);
}

void usbfs_fifo_clear(Instance *inst)
{
    Chunk *ch;
    while ((ch = g_queue_pop_head(&inst->fifo)) != NULL)
        chunk_free(ch);
    inst->fifo_bytes = 0;
}

static void deliver(Client *c);

/* A URB is done: hand it to its client's reap queue. */
static void urb_done(Urb *r, int status, gsize actual)
{
    Client *c = r->client;
    r->status = status;
    r->actual = actual;
    g_queue_push_tail(&c->completed, r);
    if (c->reap_waiting) {
        c->reap_waiting = FALSE;
        deliver(c);
    }
}

/* Answer the client's pending REAPURB/REAPURBNDELAY with its oldest
 * completed URB. */
static void deliver(Client *c)
{
    Urb *r = g_queue_pop_head(&c->completed);
    struct usbdevfs_urb *u = (struct usbdevfs_urb *)r->urbd->data;
    UMockdevIoctlData *arg = umockdev_ioctl_client_get_arg(c->ioc);
    UMockdevIoctlData *ptr;

    u->status = r->status;
    u->actual_length = (int)r->actual;
    u->error_count = 0;
    ptr = resolve(arg, 0, sizeof(void *));
    if (!ptr) {
        fail(c->ioc, EFAULT);
        urb_free(r);
        return;
    }
    umockdev_ioctl_data_set_ptr(ptr, 0, r->urbd);
    g_object_unref(ptr);
    reply(c->ioc, 0, 0);
    urb_free(r);
}

static void drop_client_urbs(GQueue *q, Client *c)
{
    GList *l = q->head;
    while (l) {
        GList *next = l->next;
        Urb *r = l->data;
        if (r->client == c) {
            g_queue_delete_link(q, l);
            urb_free(r);
        }
        l = next;
    }
}

static void fail_queue(GQueue *q, int status)
{
    Urb *r;
    while ((r = g_queue_pop_head(q)) != NULL)
        urb_done(r, status, r->actual);
}

void usbfs_fail_all(Instance *inst)
{
    if (inst->kernel_order) {
        /* the kernel's order (fail_kernel_cb); parked holds timed-out URBs and
         * IN URBs on endpoints that never send (a phone's) */
        Urb *r;
        fail_queue(&inst->in_pending, -EPROTO);
        fail_queue(&inst->out_pending, -ESHUTDOWN);
        while ((r = g_queue_pop_head(&inst->parked)) != NULL)
            urb_done(r, (r->ep & USB_DIR_IN) ? -EPROTO : -ESHUTDOWN, r->actual);
    }
    fail_queue(&inst->in_pending, -ENODEV);
    fail_queue(&inst->out_pending, -ENODEV);
    fail_queue(&inst->parked, -ENODEV);
    usbfs_fifo_clear(inst);
    for (GList *l = inst->clients; l; l = l->next) {
        Client *c = l->data;
        if (c->reap_waiting) {
            c->reap_waiting = FALSE;
            fail(c->ioc, ENODEV);
        }
    }
}

static gboolean fail_all_cb(gpointer data)
{
    Instance *inst = data;
    g_rec_mutex_lock(&sim.lock);
    usbfs_fail_all(inst);
    g_rec_mutex_unlock(&sim.lock);
    return G_SOURCE_REMOVE;
}

/* The kernel's order on a real unplug: bulk and interrupt OUT URBs end with
 * -ESHUTDOWN (libusb: NO_DEVICE), IN URBs with -EPROTO (libusb: TRANSFER_ERROR). */
typedef struct {
    Instance *inst;
    GMutex lock;
    GCond cond;
    gboolean done;
} KernelFail;

static gboolean fail_kernel_cb(gpointer data)
{
    KernelFail *k = data;
    g_rec_mutex_lock(&sim.lock);
    usbfs_fail_all(k->inst); /* inst->kernel_order is set: its statuses; waiting reapers, the FIFO */
    g_rec_mutex_unlock(&sim.lock);
    g_mutex_lock(&k->lock);
    k->done = TRUE;
    g_cond_signal(&k->cond);
    g_mutex_unlock(&k->lock);
    return G_SOURCE_REMOVE;
}

void usbfs_instance_gone_kernel_order(Instance *inst)
{
    if (!sim.worker_ctx)
        return;
    KernelFail k = { .inst = inst, .done = FALSE };
    g_mutex_init(&k.lock);
    g_cond_init(&k.cond);
    g_main_context_invoke(sim.worker_ctx, fail_kernel_cb, &k);
    /* Wait until they have failed: only then does sysfs lose the device. */
    g_mutex_lock(&k.lock);
    gint64 deadline = g_get_monotonic_time() + 2 * G_TIME_SPAN_SECOND;
    while (!k.done)
        if (!g_cond_wait_until(&k.cond, &k.lock, deadline))
            break;
    gboolean done = k.done;
    g_mutex_unlock(&k.lock);
    if (!done) {
        /* The worker is stuck: leave k alive rather than free it under its feet. */
        g_printerr("accessory-sim: the usbfs worker did not fail the URBs within 2 s\n");
        return;
    }
    g_mutex_clear(&k.lock);
    g_cond_clear(&k.cond);
}

void usbfs_instance_gone(Instance *inst)
{
    /* URB data is only touched on the worker thread. Without a worker
     * context no client ever talked to us, so nothing is pending. */
    if (sim.worker_ctx)
        g_main_context_invoke_full(sim.worker_ctx, G_PRIORITY_DEFAULT, fail_all_cb, instance_ref(inst),
                                   (GDestroyNotify)instance_unref);
}

static gboolean vanish_idle(gpointer data)
{
    device_unplug(data, FALSE);
    return G_SOURCE_REMOVE;
}

/* Surprise removal from within a transfer (fault unplug-after). */
static void vanish(Instance *inst)
{
    inst->vanish_pending = FALSE;
    inst->gone = TRUE;
    usbfs_fail_all(inst);
    g_idle_add_full(G_PRIORITY_DEFAULT, vanish_idle, instance_ref(inst), (GDestroyNotify)instance_unref);
}

/* ---- clients ---------------------------------------------------------------- */

static void client_close(Client *c)
{
    g_rec_mutex_lock(&sim.lock);
    if (!c->closed) {
        Instance *inst = c->inst;
        Urb *r;
        c->closed = TRUE;
        c->reap_waiting = FALSE;
        drop_client_urbs(&inst->in_pending, c);
        drop_client_urbs(&inst->out_pending, c);
        drop_client_urbs(&inst->parked, c);
        while ((r = g_queue_pop_head(&c->completed)) != NULL)
            urb_free(r);
        for (int i = 0; i < SIM_NIFACES; i++) {
            if (inst->claim_owner[i] == c) {
                inst->claim_owner[i] = NULL;
                inst->dropped++;
            }
        }
        inst->clients = g_list_remove(inst->clients, c);
        sim_log("%s: client closed", inst->devnode);
    }
    g_rec_mutex_unlock(&sim.lock);
}

static void client_free(gpointer data)
{
    Client *c = data;
    client_close(c);
    instance_unref(c->inst);
    g_free(c);
}

static void on_client_notify(GObject *obj, GParamSpec *pspec, gpointer user)
{
    (void)pspec;
    (void)user;
    UMockdevIoctlClient *ioc = UMOCKDEV_IOCTL_CLIENT(obj);
    Client *c = g_object_get_data(obj, CLIENT_KEY);
    if (c && !umockdev_ioctl_client_get_connected(ioc))
        client_close(c);
}

/* ---- the worker thread's main context --------------------------------------- */

static GMutex worker_mutex;
static GCond worker_cond;

static void note_worker_ctx(void)
{
    g_mutex_lock(&worker_mutex);
    if (!sim.worker_ctx) {
        sim.worker_ctx = g_main_context_ref_thread_default();
        g_cond_broadcast(&worker_cond);
    }
    g_mutex_unlock(&worker_mutex);
}

gboolean usbfs_capture_worker(const char *devnode)
{
    /* umockdev has no API for its worker context; open a connection to an
     * ioctl socket like a client would, and note the thread-default
     * context when umockdev reports the client. */
    struct sockaddr_un sa;
    char *path = g_strdup_printf("%s/ioctl%s", sim.root, devnode);
    gboolean ok = FALSE;
    int fd = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
    if (fd >= 0 && syscall(SYS_connect, fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        gint64 end = g_get_monotonic_time() + 5 * G_TIME_SPAN_SECOND;
        g_mutex_lock(&worker_mutex);
        while (!sim.worker_ctx && g_cond_wait_until(&worker_cond, &worker_mutex, end))
            ;
        ok = sim.worker_ctx != NULL;
        g_mutex_unlock(&worker_mutex);
    }
    if (fd >= 0)
        syscall(SYS_close, fd);
    g_free(path);
    return ok;
}

typedef struct {
    GMutex mutex;
    GCond cond;
    gboolean done;
    gint refs;
} Barrier;

static void barrier_unref(Barrier *b)
{
    if (g_atomic_int_dec_and_test(&b->refs)) {
        g_mutex_clear(&b->mutex);
        g_cond_clear(&b->cond);
        g_free(b);
    }
}

static gboolean barrier_cb(gpointer data)
{
    Barrier *b = data;
    g_mutex_lock(&b->mutex);
    b->done = TRUE;
    g_cond_signal(&b->cond);
    g_mutex_unlock(&b->mutex);
    return G_SOURCE_REMOVE;
}

void usbfs_worker_barrier(void)
{
    if (!sim.worker_ctx)
        return;
    Barrier *b = g_new0(Barrier, 1);
    g_mutex_init(&b->mutex);
    g_cond_init(&b->cond);
    b->refs = 2;
    g_main_context_invoke_full(sim.worker_ctx, G_PRIORITY_DEFAULT, barrier_cb, b, (GDestroyNotify)barrier_unref);
    gint64 end = g_get_monotonic_time() + 5 * G_TIME_SPAN_SECOND;
    g_mutex_lock(&b->mutex);
    while (!b->done && g_cond_wait_until(&b->cond, &b->mutex, end))
        ;
    g_mutex_unlock(&b->mutex);
    barrier_unref(b);
}

/* ---- clients (continued) ------------------------------------------------------ */

/* sim.lock held, worker thread. */
static Client *client_get(Instance *inst, UMockdevIoctlClient *ioc)
{
    Client *c = g_object_get_data(G_OBJECT(ioc), CLIENT_KEY);
    if (c)
        return c;
    if (G_UNLIKELY(!sim.worker_ctx))
        note_worker_ctx();
    c = g_new0(Client, 1);
    c->ioc = ioc;
    c->inst = instance_ref(inst);
    g_queue_init(&c->completed);
    inst->clients = g_list_prepend(inst->clients, c);
    inst->opens++;
    g_object_set_data_full(G_OBJECT(ioc), CLIENT_KEY, c, client_free);
    g_signal_connect(ioc, "notify::connected", G_CALLBACK(on_client_notify), NULL);
    sim_log("%s: client opened", inst->devnode);
    return c;
}

static void on_client_connected(UMockdevIoctlBase *handler, UMockdevIoctlClient *ioc, gpointer user)
{
    (void)handler;
    g_rec_mutex_lock(&sim.lock);
    client_get(user, ioc);
    g_rec_mutex_unlock(&sim.lock);
}

/* Interfaces: usbfs claims an interface implicitly on first use. */
static int check_claim(Instance *inst, Client *c, unsigned int ifno)
{
    if (ifno >= SIM_NIFACES)
        return ENOENT;
    if (inst->claim_owner[ifno] == c)
        return 0;
    if (inst->claim_owner[ifno] || inst->kdriver[ifno])
        return EBUSY;
    inst->claim_owner[ifno] = c;
    inst->claims++;
    return 0;
}

void usbfs_set_kernel_driver(Instance *inst, unsigned int ifno, const char *name)
{
    char *copy = g_strdup(name); /* name may be kdriver_last itself */
    g_free(inst->kdriver[ifno]);
    inst->kdriver[ifno] = copy;
    if (copy) {
        g_free(inst->kdriver_last[ifno]);
        inst->kdriver_last[ifno] = g_strdup(copy);
    }
    device_set_driver_link(inst, (int)ifno, copy);
}

/* ---- control requests --------------------------------------------------------- */

/* The largest data stage of one control transfer: the kernel's proc_control
 * (USBDEVFS_CONTROL) refuses more than a page with EINVAL, and libusb refuses
 * more than MAX_CTRL_BUFFER_LENGTH (4096) before any ioctl. */
#define SIM_CTRL_MAX 4096

static gsize string_descriptor(const Instance *inst, guint idx, guint8 *out)
{
    if (idx == 0) {
        out[0] = 4;
        out[1] = USB_DT_STRING;
        out[2] = 0x09; /* en-US */
        out[3] = 0x04;
        return 4;
    }
    if (idx >= G_N_ELEMENTS(inst->strings) || !inst->strings[idx])
        return 0;
    glong units = 0;
    gunichar2 *u16 = g_utf8_to_utf16(inst->strings[idx], -1, NULL, &units, NULL);
    if (!u16)
        return 0;
    if (units > 126)
        units = 126;
    out[0] = (guint8)(2 + 2 * units);
    out[1] = USB_DT_STRING;
    for (glong i = 0; i < units; i++) {
        out[2 + 2 * i] = (guint8)(u16[i] & 0xff);
        out[3 + 2 * i] = (guint8)(u16[i] >> 8);
    }
    g_free(u16);
    return out[0];
}


static gboolean *halt_flag(Instance *inst, guint ep)
{
    if (inst->root_hub)
        return NULL;
    if (ep == 0x01)
        return &inst->halted_out;
    if (ep == 0x81)
        return &inst->halted_in;
    if (endpoint_info(inst, (guint8)ep).exists)
        return &inst->halted_other;
    return NULL;
}

/* SET_INTERFACE (and SET_CONFIGURATION for all): the interface's endpoints
 * lose their halts. */
static void clear_interface_halts(Instance *inst, unsigned int slot)
{
    EndpointInfo out = endpoint_info(inst, 0x01), in = endpoint_info(inst, 0x81);
    if (!out.exists || out.slot == slot)
        inst->halted_out = FALSE;
    if (!in.exists || in.slot == slot)
        inst->halted_in = FALSE;
    for (guint ep = 0x02; ep <= 0x8f; ep++) {
        EndpointInfo other = (ep & 0x70) == 0 ? endpoint_info(inst, (guint8)ep) : (EndpointInfo){0};
        if (other.exists && other.slot == slot && ep != 0x81)
            inst->halted_other = FALSE;
    }
}

/* Handles one control request. Returns the number of bytes of data for an
 * IN request (at most wLength, written to data), 0 for OUT, or -EPIPE for a
 * stall. */
static int control_request(Instance *inst, const guint8 *setup, guint8 *data, gsize avail)
{
    const guint8 *d = g_bytes_get_data(inst->descriptors, NULL);
    gsize dlen = g_bytes_get_size(inst->descriptors);
    guint8 rt = setup[0], rq = setup[1];
    guint wValue = setup[2] | setup[3] << 8;
    guint wIndex = setup[4] | setup[5] << 8;
    guint wLength = setup[6] | setup[7] << 8;
    gboolean in = (rt & USB_DIR_IN) != 0;
    guint recipient = rt & USB_RECIP_MASK;
    guint8 tmp[256];
    const guint8 *src = tmp;
    gsize n = 0;

    if ((rt & USB_TYPE_MASK) == USB_TYPE_STANDARD) {
        switch (rq) {
        case USB_REQ_GET_STATUS:
            if (!in)
                return -EPIPE;
            tmp[0] = tmp[1] = 0;
            if (recipient == USB_RECIP_DEVICE && is_hub(inst))
                tmp[0] = 1; /* self powered */
            if (recipient == USB_RECIP_ENDPOINT) {
                gboolean *h = halt_flag(inst, wIndex & 0xff);
                tmp[0] = (h && *h) ? 1 : 0;
            }
            n = 2;
            break;
        case USB_REQ_CLEAR_FEATURE:
        case USB_REQ_SET_FEATURE:
            if (recipient == USB_RECIP_ENDPOINT && wValue == USB_ENDPOINT_HALT) {
                gboolean *h = halt_flag(inst, wIndex & 0xff);
                if (h)
                    *h = rq == USB_REQ_SET_FEATURE;
                else if ((wIndex & 0x7f) != 0)
                    return -EPIPE;
                return 0;
            }
            if (recipient == USB_RECIP_DEVICE)
                return 0;
            return -EPIPE;
        case USB_REQ_GET_DESCRIPTOR:
            if (!in)
                return -EPIPE;
            switch (wValue >> 8) {
            case USB_DT_DEVICE:
                src = d;
                n = 18;
                break;
            case USB_DT_CONFIG:
                if ((wValue & 0xff) != 0)
                    return -EPIPE;
                src = d + 18;
                n = dlen - 18;
                break;
            case USB_DT_STRING:
                n = string_descriptor(inst, wValue & 0xff, tmp);
                if (n == 0)
                    return -EPIPE;
                break;
            case USB_DT_DEVICE_QUALIFIER: {
                if (inst->root_hub)
                    return -EPIPE; /* root hubs have none */
                const guint8 q[10] = {10, USB_DT_DEVICE_QUALIFIER, d[2], d[3], d[4], d[5], d[6], d[7], d[17], 0};
                memcpy(tmp, q, sizeof(q));
                n = sizeof(q);
                break;
            }
            default:
                return -EPIPE;
            }
            break;
        case USB_REQ_GET_CONFIGURATION:
            if (!in)
                return -EPIPE;
            tmp[0] = (guint8)inst->config;
            n = 1;
            break;
        case USB_REQ_SET_CONFIGURATION:
            if (wValue > 1)
                return -EPIPE;
            inst->config = (int)wValue;
            inst->halted_in = inst->halted_out = inst->halted_other = FALSE;
            return 0;
        case USB_REQ_GET_INTERFACE:
            if (!in || IFACE_SLOT(inst, wIndex) >= SIM_NIFACES)
                return -EPIPE;
            tmp[0] = 0;
            n = 1;
            break;
        case USB_REQ_SET_INTERFACE:
            if (IFACE_SLOT(inst, wIndex) >= SIM_NIFACES || wValue != 0)
                return -EPIPE;
            clear_interface_halts(inst, IFACE_SLOT(inst, wIndex));
            return 0;
        default:
            return -EPIPE;
        }
    } else if ((rt & USB_TYPE_MASK) == USB_TYPE_CLASS && is_hub(inst)) {
        if (rq == USB_REQ_GET_DESCRIPTOR && in && (wValue >> 8) == HUB_DESCRIPTOR_TYPE) {
            /* individual power switching, no compound device */
            guint8 ports = inst->root_hub ? 15 : inst->spec.hub_ports;
            const guint8 hub[] = {11, HUB_DESCRIPTOR_TYPE, ports, 0x09, 0x00, 10, 0, 0x00, 0x00, 0xff, 0xff};
            memcpy(tmp, hub, sizeof(hub));
            n = sizeof(hub);
        } else if (rq == USB_REQ_GET_STATUS && in) {
            memset(tmp, 0, 4);
            if (recipient == USB_RECIP_OTHER) {
                guint status = 0x0100; /* power */
                if (hub_port_connected(inst, (int)wIndex))
                    status |= 0x0001 | 0x0002 | 0x0400; /* connection, enable, high speed */
                tmp[0] = (guint8)(status & 0xff);
                tmp[1] = (guint8)(status >> 8);
            }
            n = 4;
        } else if (rq == USB_REQ_SET_FEATURE || rq == USB_REQ_CLEAR_FEATURE) {
            return 0;
        } else {
            return -EPIPE;
        }
    } else if ((rt & USB_TYPE_MASK) == USB_TYPE_VENDOR && is_android(inst)) {
        /* Android Open Accessory */
        if (!in && wLength > (data ? avail : 0))
            return -EPIPE;
        int r = android_control(inst, setup, in ? NULL : data, in ? tmp : NULL, sizeof(tmp));
        if (r < 0 || !in)
            return r < 0 ? r : 0;
        n = (gsize)r;
    } else {
        return -EPIPE; /* vendor requests: not supported */
    }

    if (!in)
        return 0;
    n = MIN(n, MIN((gsize)wLength, avail));
    if (n > 0 && data)
        memcpy(data, src, n);
    return (int)n;
}

/* One control transfer: as control_request(), but an OUT transfer that
 * succeeds reports its data stage as transferred (wLength bytes), as usbfs
 * does in the URB's actual_length and in USBDEVFS_CONTROL's result. */
static int control(Instance *inst, const guint8 *setup, guint8 *data, gsize avail)
{
    int n = control_request(inst, setup, data, avail);
    if (n >= 0 && !(setup[0] & USB_DIR_IN))
        n = (int)MIN((gsize)(setup[6] | setup[7] << 8), avail);
    return n;
}

/* ---- bulk -------------------------------------------------------------------- */

static void pump(Instance *inst);

/* Takes an OUT URB's data into the FIFO and completes it. */
static void out_accept(Instance *inst, Urb *r)
{
    gsize n = r->len;
    int status = 0;

    if (inst->unplug_after >= 0) {
        if ((gint64)n > inst->unplug_after) {
            n = (gsize)inst->unplug_after;
            status = -ENODEV; /* the device went away mid-transfer */
        }
        inst->unplug_after -= (gint64)n;
        if (inst->unplug_after == 0) {
            inst->unplug_after = -1;
            inst->vanish_pending = TRUE;
        }
    }
    if (n > 0 || r->len == 0) {
        Chunk *ch = g_new0(Chunk, 1);
        ch->data = n > 0 ? g_object_ref(r->buf) : NULL;
        ch->len = n;
        g_queue_push_tail(&inst->fifo, ch);
        inst->fifo_bytes += n;
        inst->bytes_out += n;
    }
    urb_done(r, status, n);
}

/* Moves data from the FIFO into pending IN URBs, and NAKed OUT URBs into
 * the FIFO as room frees up. */
static void pump(Instance *inst)
{
    for (;;) {
        while (inst->in_pending.length > 0 && inst->fifo.length > 0) {
            Urb *r = g_queue_pop_head(&inst->in_pending);
            Chunk *ch = g_queue_peek_head(&inst->fifo);
            gsize n = MIN(r->len - r->actual, ch->len - ch->off);
            if (n > 0) {
                memcpy((guint8 *)r->buf->data + r->actual, (const guint8 *)ch->data->data + ch->off, n);
                r->actual += n;
                ch->off += n;
                inst->fifo_bytes -= n;
                inst->bytes_in += n;
            }
            if (ch->off == ch->len)
                chunk_free(g_queue_pop_head(&inst->fifo));
            int status = 0;
            if (r->actual < r->len && (r->flags & USBDEVFS_URB_SHORT_NOT_OK))
                status = -EREMOTEIO;
            urb_done(r, status, r->actual);
        }
        if (!inst->vanish_pending && inst->out_pending.length > 0 && inst->fifo_bytes < SIM_FIFO_LIMIT) {
            out_accept(inst, g_queue_pop_head(&inst->out_pending));
            continue;
        }
        break;
    }
}

/* Applies a scripted fault to the next bulk URB. Returns TRUE if it took
 * the URB. */
static gboolean apply_fault(Instance *inst, Urb *r, gboolean *halted)
{
    if (halted && *halted) {
        urb_done(r, -EPIPE, 0);
        return TRUE;
    }
    switch (inst->fault) {
    case FAULT_STALL:
        inst->fault = FAULT_NONE;
        if (halted)
            *halted = TRUE;
        urb_done(r, -EPIPE, 0);
        return TRUE;
    case FAULT_TIMEOUT:
        inst->fault = FAULT_NONE;
        g_queue_push_tail(&inst->parked, r);
        return TRUE;
    case FAULT_NONE:
    default:
        return FALSE;
    }
}

static void bulk_submit(Instance *inst, Urb *r)
{
    if (!endpoint_info(inst, r->ep).echoes) {
        /* an endpoint with nothing behind it: OUT data is taken, IN waits
         * (its halt is the one CLEAR_HALT and GET_STATUS see) */
        if (apply_fault(inst, r, halt_flag(inst, r->ep)))
            return;
        if (r->ep & USB_DIR_IN) {
            g_queue_push_tail(&inst->parked, r);
        } else {
            inst->bytes_out += r->len;
            urb_done(r, 0, r->len);
        }
        return;
    }
    if (r->ep & USB_DIR_IN) {
        if (apply_fault(inst, r, &inst->halted_in))
            return;
        g_queue_push_tail(&inst->in_pending, r);
    } else {
        if (apply_fault(inst, r, &inst->halted_out))
            return;
        if (inst->vanish_pending) {
            urb_done(r, -ENODEV, 0);
            return;
        }
        if (inst->out_pending.length > 0 || inst->fifo_bytes >= SIM_FIFO_LIMIT)
            g_queue_push_tail(&inst->out_pending, r);
        else
            out_accept(inst, r);
    }
    pump(inst);
}

static gboolean endpoint_exists(Instance *inst, guint8 ep)
{
    return inst->config == 1 && endpoint_info(inst, ep).exists;
}

static void submit_urb(Instance *inst, Client *c, UMockdevIoctlClient *ioc, UMockdevIoctlData *arg)
{
    UMockdevIoctlData *d = resolve(arg, 0, sizeof(struct usbdevfs_urb));
    if (!d) {
        fail(ioc, EFAULT);
        return;
    }
    struct usbdevfs_urb *u = (struct usbdevfs_urb *)d->data;
    if (u->buffer_length < 0) {
        g_object_unref(d);
        fail(ioc, EINVAL);
        return;
    }
    Urb *r = g_new0(Urb, 1);
    r->client = c;
    r->urbd = d;
    r->addr = d->client_addr;
    r->type = u->type;
    r->ep = u->endpoint;
    r->flags = u->flags;
    r->len = (gsize)u->buffer_length;
    if (r->len > 0) {
        r->buf = resolve(d, offsetof(struct usbdevfs_urb, buffer), r->len);
        if (!r->buf) {
            urb_free(r);
            fail(ioc, EFAULT);
            return;
        }
    }
    inst->urbs++;

    switch (r->type) {
    case USBDEVFS_URB_TYPE_CONTROL: {
        if ((r->ep & 0x7f) != 0) {
            urb_free(r);
            fail(ioc, ENOENT);
            return;
        }
        guint8 *b = r->len >= 8 ? r->buf->data : NULL;
        if (!b || r->len < 8 + (gsize)(b[6] | b[7] << 8)) {
            urb_free(r); /* like usbfs: the setup packet and wLength bytes of data */
            fail(ioc, EINVAL);
            return;
        }
        if ((b[6] | b[7] << 8) > SIM_CTRL_MAX) {
            /* The kernel's submit path takes more, but libusb never submits it
             * (MAX_CTRL_BUFFER_LENGTH): a client that does must not pass here
             * and fail on hardware. */
            urb_free(r);
            fail(ioc, EINVAL);
            return;
        }
        /* Complete the ioctl before touching the data buffer, so that the
         * submit does not copy it back to the client; the reap will. */
        inst->control_urbs++;
        reply(ioc, 0, 0);
        int n = control(inst, b, b + 8, r->len - 8);
        urb_done(r, n < 0 ? n : 0, n < 0 ? 0 : (gsize)n);
        return;
    }
    case USBDEVFS_URB_TYPE_BULK:
    case USBDEVFS_URB_TYPE_INTERRUPT: {
        /* usbfs's order (proc_do_submiturb): the endpoint must exist (ENOENT),
         * the interface that owns it is claimed (implicitly, or EBUSY), then the
         * type: an INTERRUPT URB needs an interrupt endpoint (EINVAL); a BULK URB
         * on an interrupt endpoint runs as an interrupt transfer. */
        if (!endpoint_exists(inst, r->ep)) {
            urb_free(r);
            fail(ioc, ENOENT);
            return;
        }
        EndpointInfo info = endpoint_info(inst, r->ep);
        int err = check_claim(inst, c, info.slot);
        if (err) {
            urb_free(r);
            fail(ioc, err);
            return;
        }
        if (r->type == USBDEVFS_URB_TYPE_INTERRUPT && !info.interrupt) {
            urb_free(r);
            fail(ioc, EINVAL);
            return;
        }
        if (info.interrupt)
            inst->interrupt_urbs++;
        else
            inst->bulk_urbs++;
        reply(ioc, 0, 0);
        bulk_submit(inst, r);
        return;
    }
    default:
        urb_free(r);
        fail(ioc, EINVAL);
        return;
    }
}

static gboolean discard_from(GQueue *q, Client *c, gulong addr)
{
    for (GList *l = q->head; l; l = l->next) {
        Urb *r = l->data;
        if (r->client == c && r->addr == addr) {
            g_queue_delete_link(q, l);
            urb_done(r, -ENOENT, r->actual);
            return TRUE;
        }
    }
    return FALSE;
}

static void discard_urb(Instance *inst, Client *c, UMockdevIoctlClient *ioc, UMockdevIoctlData *arg)
{
    gulong addr = *(gulong *)arg->data; /* the argument is the URB pointer itself */
    if (discard_from(&inst->in_pending, c, addr) || discard_from(&inst->out_pending, c, addr) ||
        discard_from(&inst->parked, c, addr)) {
        reply(ioc, 0, 0);
        pump(inst); /* a discarded NAKed OUT may unblock others */
    } else {
        fail(ioc, EINVAL);
    }
}

/* ---- the ioctl switch --------------------------------------------------------- */

static unsigned int read_uint(UMockdevIoctlData *arg, gboolean *ok)
{
    UMockdevIoctlData *d = resolve(arg, 0, sizeof(unsigned int));
    unsigned int v = 0;
    *ok = d != NULL;
    if (d) {
        v = *(unsigned int *)d->data;
        g_object_unref(d);
    }
    return v;
}

static void do_usbfs_ioctl(Instance *inst, Client *c, UMockdevIoctlClient *ioc, UMockdevIoctlData *arg)
{
    UMockdevIoctlData *d = resolve(arg, 0, sizeof(struct usbdevfs_ioctl));
    if (!d) {
        fail(ioc, EFAULT);
        return;
    }
    struct usbdevfs_ioctl *ctl = (struct usbdevfs_ioctl *)d->data;
    int ifno = ctl->ifno < 0 ? -1 : (int)IFACE_SLOT(inst, ctl->ifno);
    unsigned long code = (unsigned long)(unsigned int)ctl->ioctl_code;
    g_object_unref(d);
    (void)c;

    if (inst->config != 1) {
        fail(ioc, EHOSTUNREACH);
    } else if (ifno < 0 || ifno >= SIM_NIFACES) {
        fail(ioc, EINVAL);
    } else if (code == USBDEVFS_DISCONNECT) {
        if (!inst->kdriver[ifno]) {
            fail(ioc, ENODATA);
        } else {
            usbfs_set_kernel_driver(inst, (unsigned int)ifno, NULL);
            reply(ioc, 0, 0);
        }
    } else if (code == USBDEVFS_CONNECT) {
        if (inst->kdriver[ifno]) {
            fail(ioc, EBUSY);
        } else {
            /* like device_attach(): 1 if a driver was bound, else 0 */
            gboolean bound = !inst->claim_owner[ifno] && inst->kdriver_last[ifno];
            if (bound)
                usbfs_set_kernel_driver(inst, (unsigned int)ifno, inst->kdriver_last[ifno]);
            reply(ioc, bound ? 1 : 0, 0);
        }
    } else {
        fail(ioc, inst->kdriver[ifno] ? ENOTTY : ENODATA);
    }
}

static void dispatch(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    UMockdevIoctlData *d;
    unsigned int v;
    gboolean ok;
    int err;

    /* Reaping works after a disconnect, everything else fails with ENODEV. */
    if (req == USBDEVFS_REAPURB || req == USBDEVFS_REAPURBNDELAY) {
        if (c->completed.length > 0)
            deliver(c);
        else if (inst->gone)
            fail(ioc, ENODEV);
        else if (req == USBDEVFS_REAPURBNDELAY)
            fail(ioc, EAGAIN);
        else
            c->reap_waiting = TRUE; /* answered by urb_done() */
        return;
    }
    if (inst->gone) {
        if (req == USBDEVFS_RELEASEINTERFACE) {
            v = read_uint(arg, &ok);
            if (ok && (v = IFACE_SLOT(inst, v)) < SIM_NIFACES && inst->claim_owner[v] == c) {
                inst->claim_owner[v] = NULL;
                inst->releases++;
            }
        }
        fail(ioc, ENODEV);
        return;
    }

    switch (req) {
    case USBDEVFS_GET_CAPABILITIES:
        if (!(d = resolve(arg, 0, sizeof(guint32)))) {
            fail(ioc, EFAULT);
            return;
        }
        *(guint32 *)d->data = SIM_CAPS;
        g_object_unref(d);
        reply(ioc, 0, 0);
        return;

    case USBDEVFS_CONNECTINFO: {
        if (!(d = resolve(arg, 0, sizeof(struct usbdevfs_connectinfo)))) {
            fail(ioc, EFAULT);
            return;
        }
        struct usbdevfs_connectinfo *ci = (struct usbdevfs_connectinfo *)d->data;
        ci->devnum = (unsigned int)inst->addr;
        ci->slow = 0;
        g_object_unref(d);
        reply(ioc, 0, 0);
        return;
    }

    case USBDEVFS_GET_SPEED:
        reply(ioc, USB_SPEED_HIGH, 0);
        return;

    case USBDEVFS_CLAIMINTERFACE:
        v = read_uint(arg, &ok);
        if (!ok)
            fail(ioc, EFAULT);
        else if (v >= 32)
            fail(ioc, EINVAL);
        else if ((err = check_claim(inst, c, IFACE_SLOT(inst, v))) != 0)
            fail(ioc, err);
        else
            reply(ioc, 0, 0);
        return;

    case USBDEVFS_RELEASEINTERFACE:
        v = read_uint(arg, &ok);
        if (!ok) {
            fail(ioc, EFAULT);
        } else if ((v = IFACE_SLOT(inst, v)) >= SIM_NIFACES || inst->claim_owner[v] != c) {
            fail(ioc, EINVAL);
        } else {
            inst->claim_owner[v] = NULL;
            inst->releases++;
            reply(ioc, 0, 0);
        }
        return;

    case USBDEVFS_SETINTERFACE: {
        if (!(d = resolve(arg, 0, sizeof(struct usbdevfs_setinterface)))) {
            fail(ioc, EFAULT);
            return;
        }
        struct usbdevfs_setinterface si = *(struct usbdevfs_setinterface *)d->data;
        g_object_unref(d);
        if ((err = check_claim(inst, c, IFACE_SLOT(inst, si.interface))) != 0)
            fail(ioc, err == ENOENT ? EINVAL : err);
        else if (si.altsetting != 0)
            fail(ioc, EINVAL);
        else {
            clear_interface_halts(inst, IFACE_SLOT(inst, si.interface));
            reply(ioc, 0, 0);
        }
        return;
    }

    case USBDEVFS_SETCONFIGURATION: {
        v = read_uint(arg, &ok);
        int cfg = (int)v;
        if (!ok) {
            fail(ioc, EFAULT);
            return;
        }
        if (cfg < -1 || cfg > 1) {
            fail(ioc, EINVAL);
            return;
        }
        /* like the kernel: not while any interface is claimed or bound */
        for (int i = 0; i < SIM_NIFACES; i++) {
            if (inst->claim_owner[i] || inst->kdriver[i]) {
                fail(ioc, EBUSY);
                return;
            }
        }
        inst->config = cfg < 0 ? 0 : cfg;
        inst->halted_in = inst->halted_out = inst->halted_other = FALSE;
        reply(ioc, 0, 0);
        return;
    }

    case USBDEVFS_CLEAR_HALT:
    case USBDEVFS_RESETEP: {
        v = read_uint(arg, &ok);
        if (!ok) {
            fail(ioc, EFAULT);
            return;
        }
        if ((v & 0x7f) == 0) {
            reply(ioc, 0, 0);
            return;
        }
        gboolean *h = halt_flag(inst, v & 0xff);
        if (!h || !endpoint_exists(inst, (guint8)v)) {
            fail(ioc, ENOENT);
            return;
        }
        if ((err = check_claim(inst, c, endpoint_info(inst, (guint8)v).slot)) != 0) {
            fail(ioc, err);
            return;
        }
        if (req == USBDEVFS_CLEAR_HALT)
            *h = FALSE;
        reply(ioc, 0, 0);
        return;
    }

    case USBDEVFS_RESET:
        inst->resets++;
        inst->halted_in = inst->halted_out = inst->halted_other = FALSE;
        usbfs_fifo_clear(inst);
        reply(ioc, 0, 0);
        return;

    case USBDEVFS_GETDRIVER: {
        if (!(d = resolve(arg, 0, sizeof(struct usbdevfs_getdriver)))) {
            fail(ioc, EFAULT);
            return;
        }
        struct usbdevfs_getdriver *gd = (struct usbdevfs_getdriver *)d->data;
        unsigned int slot = IFACE_SLOT(inst, gd->interface);
        if (slot < SIM_NIFACES && inst->kdriver[slot]) {
            g_strlcpy(gd->driver, inst->kdriver[slot], sizeof(gd->driver));
            reply(ioc, 0, 0);
        } else {
            fail(ioc, ENODATA);
        }
        g_object_unref(d);
        return;
    }

    case USBDEVFS_DISCONNECT_CLAIM: {
        if (!(d = resolve(arg, 0, sizeof(struct usbdevfs_disconnect_claim)))) {
            fail(ioc, EFAULT);
            return;
        }
        struct usbdevfs_disconnect_claim dc = *(struct usbdevfs_disconnect_claim *)d->data;
        g_object_unref(d);
        dc.driver[sizeof(dc.driver) - 1] = '\0';
        dc.interface = IFACE_SLOT(inst, dc.interface);
        if (dc.interface >= SIM_NIFACES) {
            fail(ioc, EINVAL);
            return;
        }
        const char *bound = inst->kdriver[dc.interface];
        if (bound) {
            gboolean same = strcmp(bound, dc.driver) == 0;
            if (((dc.flags & USBDEVFS_DISCONNECT_CLAIM_IF_DRIVER) && !same) ||
                ((dc.flags & USBDEVFS_DISCONNECT_CLAIM_EXCEPT_DRIVER) && same)) {
                fail(ioc, EBUSY);
                return;
            }
            usbfs_set_kernel_driver(inst, dc.interface, NULL);
        }
        if ((err = check_claim(inst, c, dc.interface)) != 0)
            fail(ioc, err);
        else
            reply(ioc, 0, 0);
        return;
    }

    case USBDEVFS_IOCTL:
        do_usbfs_ioctl(inst, c, ioc, arg);
        return;

    case USBDEVFS_SUBMITURB:
        submit_urb(inst, c, ioc, arg);
        return;

    case USBDEVFS_DISCARDURB:
        discard_urb(inst, c, ioc, arg);
        return;

    case USBDEVFS_CONTROL: {
        if (!(d = resolve(arg, 0, sizeof(struct usbdevfs_ctrltransfer)))) {
            fail(ioc, EFAULT);
            return;
        }
        struct usbdevfs_ctrltransfer *ct = (struct usbdevfs_ctrltransfer *)d->data;
        if (ct->wLength > SIM_CTRL_MAX) {
            g_object_unref(d); /* as proc_control: at most a page */
            fail(ioc, EINVAL);
            return;
        }
        guint8 setup[8] = {ct->bRequestType, ct->bRequest, (guint8)(ct->wValue & 0xff), (guint8)(ct->wValue >> 8),
                           (guint8)(ct->wIndex & 0xff), (guint8)(ct->wIndex >> 8), (guint8)(ct->wLength & 0xff),
                           (guint8)(ct->wLength >> 8)};
        UMockdevIoctlData *data = NULL;
        if (ct->wLength > 0 && !(data = resolve(d, offsetof(struct usbdevfs_ctrltransfer, data), ct->wLength))) {
            g_object_unref(d);
            fail(ioc, EFAULT);
            return;
        }
        int n = control(inst, setup, data ? data->data : NULL, data ? (gsize)data->data_len : 0);
        g_clear_object(&data);
        g_object_unref(d);
        if (n < 0)
            fail(ioc, -n);
        else
            reply(ioc, n, 0);
        return;
    }

    case USBDEVFS_DROP_PRIVILEGES:
    case USBDEVFS_FORBID_SUSPEND:
    case USBDEVFS_ALLOW_SUSPEND:
    case USBDEVFS_WAIT_FOR_RESUME:
        reply(ioc, 0, 0);
        return;

    default:
        break;
    }

    if (_IOC_TYPE(req) == 'U' && _IOC_NR(req) == 32 && _IOC_DIR(req) == _IOC_READ) {
        /* USBDEVFS_CONNINFO_EX(len) */
        struct usbdevfs_conninfo_ex ci;
        gsize len = MIN((gsize)_IOC_SIZE(req), sizeof(ci));
        memset(&ci, 0, sizeof(ci));
        ci.size = sizeof(ci);
        ci.busnum = (guint32)inst->bus;
        ci.devnum = (guint32)inst->addr;
        ci.speed = USB_SPEED_HIGH;
        if (!inst->root_hub) {
            gchar **levels = g_strsplit(strchr(inst->port, '-') + 1, ".", -1);
            for (guint i = 0; levels[i] && i < sizeof(ci.ports); i++) {
                ci.ports[i] = (guint8)atoi(levels[i]);
                ci.num_ports = (guint8)(i + 1);
            }
            g_strfreev(levels);
        }
        if (len == 0 || !(d = resolve(arg, 0, len))) {
            fail(ioc, EFAULT);
            return;
        }
        memcpy(d->data, &ci, len);
        g_object_unref(d);
        reply(ioc, 0, 0);
        return;
    }
    fail(ioc, ENOTTY);
}

static gboolean on_handle_ioctl(UMockdevIoctlBase *handler, UMockdevIoctlClient *ioc, gpointer user)
{
    Instance *inst = user;
    gulong req = umockdev_ioctl_client_get_request(ioc);
    UMockdevIoctlData *arg = umockdev_ioctl_client_get_arg(ioc);
    (void)handler;

    g_rec_mutex_lock(&sim.lock);
    Client *c = client_get(inst, ioc);
    if (inst->gone)
        usbfs_fail_all(inst);
    dispatch(inst, c, ioc, req, arg);
    if (inst->vanish_pending && !inst->gone)
        vanish(inst);
    g_rec_mutex_unlock(&sim.lock);
    return TRUE;
}

UMockdevIoctlBase *usbfs_handler_new(Instance *inst)
{
    UMockdevIoctlBase *h = umockdev_ioctl_base_new();
    /* Clients can outlive the device's presence; they keep the handler,
     * and the handler keeps the instance. */
    g_object_set_data_full(G_OBJECT(h), "accessory-sim-instance", instance_ref(inst),
                           (GDestroyNotify)instance_unref);
    g_signal_connect(h, "handle-ioctl", G_CALLBACK(on_handle_ioctl), inst);
    g_signal_connect(h, "client-connected", G_CALLBACK(on_client_connected), inst);
    return h;
}
