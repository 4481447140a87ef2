/*
 * accessory-sim: usbdevfs emulation behind each /dev/bus/usb/BBB/DDD node.
 * This file is the handler, its table of ioctls, and one function per ioctl
 * on the device and its interfaces; the ioctls that move data (SUBMITURB,
 * DISCARDURB, REAPURB, CONTROL) are in transfers.c, URBs and the bulk
 * engine in urbs.c, clients and claims in clients.c, control requests in
 * ch9.c, and the device's kind decides what is not generic (kinds.c).
 *
 * umockdev forwards every ioctl of a client (one open file descriptor) to
 * the "handle-ioctl" signal of the handler attached to the node; that runs
 * on umockdev's worker thread. Each /dev path has one handler for the whole
 * run (a node, below); a client is bound to the instance at the node when it
 * connects. Client memory is reached through
 * UMockdevIoctlData: resolve() copies it in, and local changes are written
 * back when the ioctl is completed.
 *
 * URBs and claims belong to the client that made them and are dropped when
 * it closes the node (clients.c). On detach every pending URB completes
 * with -ENODEV; REAPURB/REAPURBNDELAY still return completed URBs, then fail
 * with ENODEV, like the kernel. Not emulated: USBDEVFS_BULK (synchronous bulk),
 * isochronous URBs, streams.
 */
#define _GNU_SOURCE
#include "materialize.h"
#include "usbfs_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/usb/ch9.h>
#include <linux/usbdevice_fs.h>

#define SIM_CAPS                                                                                    \
    (USBDEVFS_CAP_ZERO_PACKET | USBDEVFS_CAP_BULK_CONTINUATION | USBDEVFS_CAP_NO_PACKET_SIZE_LIM | \
     USBDEVFS_CAP_BULK_SCATTER_GATHER | USBDEVFS_CAP_REAP_AFTER_DISCONNECT)

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

/* ---- one function per ioctl (worker thread, sim.lock held) ------------------- */

/* USBDEVFS_IOCTL: the pretend kernel driver of an interface (DISCONNECT, CONNECT). */
static void ioctl_ioctl(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    (void)req;
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


/* Every other ioctl on a gone device: ENODEV (a release still drops the claim). */
static void ioctl_gone(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    if (req == USBDEVFS_RELEASEINTERFACE) {
        gboolean ok;
        unsigned int v = read_uint(arg, &ok);
        if (ok && (v = IFACE_SLOT(inst, v)) < SIM_NIFACES && inst->claim_owner[v] == c) {
            inst->claim_owner[v] = NULL;
            inst->releases++;
        }
    }
    fail(ioc, ENODEV);
}

static void ioctl_get_capabilities(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req,
                                   UMockdevIoctlData *arg)
{
    (void)inst, (void)c, (void)req;
    UMockdevIoctlData *d = resolve(arg, 0, sizeof(guint32));
    if (!d) {
        fail(ioc, EFAULT);
        return;
    }
    *(guint32 *)d->data = SIM_CAPS;
    g_object_unref(d);
    reply(ioc, 0, 0);
}

static void ioctl_connectinfo(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    (void)c, (void)req;
    UMockdevIoctlData *d = resolve(arg, 0, sizeof(struct usbdevfs_connectinfo));
    if (!d) {
        fail(ioc, EFAULT);
        return;
    }
    struct usbdevfs_connectinfo *ci = (struct usbdevfs_connectinfo *)d->data;
    ci->devnum = (unsigned int)inst->addr;
    ci->slow = 0;
    g_object_unref(d);
    reply(ioc, 0, 0);
}

static void ioctl_get_speed(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    (void)inst, (void)c, (void)req, (void)arg;
    reply(ioc, USB_SPEED_HIGH, 0);
}

/* DROP_PRIVILEGES, FORBID_SUSPEND, ALLOW_SUSPEND, WAIT_FOR_RESUME: nothing to do. */
static void ioctl_accept(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    (void)inst, (void)c, (void)req, (void)arg;
    reply(ioc, 0, 0);
}

static void ioctl_claim_interface(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req,
                                  UMockdevIoctlData *arg)
{
    (void)req;
    gboolean ok;
    int err;
    unsigned int v = read_uint(arg, &ok);
    if (!ok)
        fail(ioc, EFAULT);
    else if (v >= 32)
        fail(ioc, EINVAL);
    else if ((err = check_claim(inst, c, IFACE_SLOT(inst, v))) != 0)
        fail(ioc, err);
    else
        reply(ioc, 0, 0);
}

static void ioctl_release_interface(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req,
                                    UMockdevIoctlData *arg)
{
    (void)req;
    gboolean ok;
    unsigned int v = read_uint(arg, &ok);
    if (!ok) {
        fail(ioc, EFAULT);
    } else if ((v = IFACE_SLOT(inst, v)) >= SIM_NIFACES || inst->claim_owner[v] != c) {
        fail(ioc, EINVAL);
    } else {
        inst->claim_owner[v] = NULL;
        inst->releases++;
        reply(ioc, 0, 0);
    }
}

static void ioctl_set_interface(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req,
                                UMockdevIoctlData *arg)
{
    (void)req;
    int err;
    UMockdevIoctlData *d = resolve(arg, 0, sizeof(struct usbdevfs_setinterface));
    if (!d) {
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
}

static void ioctl_set_configuration(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req,
                                    UMockdevIoctlData *arg)
{
    (void)c, (void)req;
    gboolean ok;
    int cfg = (int)read_uint(arg, &ok);
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
}

/* CLEAR_HALT clears the endpoint's halt; RESETEP only checks it. */
static void ioctl_clear_halt(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    gboolean ok;
    int err;
    unsigned int v = read_uint(arg, &ok);
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
}

static void ioctl_reset(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    (void)c, (void)req, (void)arg;
    inst->resets++;
    if (inst->spec.wedge == WEDGE_RESET)
        inst->spec.wedge = WEDGE_NONE; /* a reset cures it; a worse wedge stays */
    inst->halted_in = inst->halted_out = inst->halted_other = FALSE;
    instance_fifo_clear(inst);
    reply(ioc, 0, 0);
}

static void ioctl_getdriver(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    (void)c, (void)req;
    UMockdevIoctlData *d = resolve(arg, 0, sizeof(struct usbdevfs_getdriver));
    if (!d) {
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
}

static void ioctl_disconnect_claim(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req,
                                   UMockdevIoctlData *arg)
{
    (void)req;
    int err;
    UMockdevIoctlData *d = resolve(arg, 0, sizeof(struct usbdevfs_disconnect_claim));
    if (!d) {
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
}

/* USBDEVFS_CONNINFO_EX(len): its number carries the caller's struct size. */
static gboolean is_conninfo_ex(gulong req)
{
    return _IOC_TYPE(req) == 'U' && _IOC_NR(req) == 32 && _IOC_DIR(req) == _IOC_READ;
}

static void ioctl_conninfo_ex(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req,
                              UMockdevIoctlData *arg)
{
    (void)c;
    struct usbdevfs_conninfo_ex ci;
    UMockdevIoctlData *d;
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
}

static const struct {
    gulong req;
    IoctlFn *fn;
} ioctls[] = {
    {USBDEVFS_GET_CAPABILITIES, ioctl_get_capabilities},
    {USBDEVFS_CONNECTINFO, ioctl_connectinfo},
    {USBDEVFS_GET_SPEED, ioctl_get_speed},
    {USBDEVFS_CLAIMINTERFACE, ioctl_claim_interface},
    {USBDEVFS_RELEASEINTERFACE, ioctl_release_interface},
    {USBDEVFS_SETINTERFACE, ioctl_set_interface},
    {USBDEVFS_SETCONFIGURATION, ioctl_set_configuration},
    {USBDEVFS_CLEAR_HALT, ioctl_clear_halt},
    {USBDEVFS_RESETEP, ioctl_clear_halt},
    {USBDEVFS_RESET, ioctl_reset},
    {USBDEVFS_GETDRIVER, ioctl_getdriver},
    {USBDEVFS_DISCONNECT_CLAIM, ioctl_disconnect_claim},
    {USBDEVFS_IOCTL, ioctl_ioctl},
    {USBDEVFS_SUBMITURB, ioctl_submit_urb},
    {USBDEVFS_DISCARDURB, ioctl_discard_urb},
    {USBDEVFS_CONTROL, ioctl_control},
    {USBDEVFS_DROP_PRIVILEGES, ioctl_accept},
    {USBDEVFS_FORBID_SUSPEND, ioctl_accept},
    {USBDEVFS_ALLOW_SUSPEND, ioctl_accept},
    {USBDEVFS_WAIT_FOR_RESUME, ioctl_accept},
};

/* Picks the ioctl's function: reaping works after a disconnect, everything
 * else fails with ENODEV then; an unknown ioctl is ENOTTY. */
static void dispatch(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    IoctlFn *fn = NULL;
    if (req == USBDEVFS_REAPURB || req == USBDEVFS_REAPURBNDELAY)
        fn = ioctl_reap;
    else if (inst->gone)
        fn = ioctl_gone;
    for (guint i = 0; !fn && i < G_N_ELEMENTS(ioctls); i++)
        if (ioctls[i].req == req)
            fn = ioctls[i].fn;
    if (!fn && is_conninfo_ex(req))
        fn = ioctl_conninfo_ex;
    if (fn)
        fn(inst, c, ioc, req, arg);
    else
        fail(ioc, ENOTTY);
}

static void node_unbind(Instance *inst);

static gboolean on_handle_ioctl(UMockdevIoctlBase *handler, UMockdevIoctlClient *ioc, gpointer user)
{
    Node *node = user;
    gulong req = umockdev_ioctl_client_get_request(ioc);
    UMockdevIoctlData *arg = umockdev_ioctl_client_get_arg(ioc);
    (void)handler;

    g_rec_mutex_lock(&sim.lock);
    Client *c = client_get(node, ioc);
    Instance *inst = c->inst;
    if (!inst) {
        fail(ioc, ENODEV); /* it connected after its device had gone */
    } else {
        if (inst->gone)
            usbfs_fail_all(inst);
        dispatch(inst, c, ioc, req, arg);
        if (inst->vanish_pending && !inst->gone) {
            usbfs_vanish(inst);
            node_unbind(inst);
        }
    }
    g_rec_mutex_unlock(&sim.lock);
    return TRUE;
}

/* ---- nodes: one listener per /dev path, for the whole run ----------------------- */

/* Every /dev/bus/usb/BBB/DDD that an instance has had keeps its usbdevfs
 * listener (umockdev's handler and its socket) until the simulator exits;
 * the node only says which instance is there now. So an unplug never closes
 * a listening socket: a client that opened the node just before the unplug
 * is accepted and gets ENODEV (as from a kernel), instead of finding its
 * connection reset (umockdev's preload aborts the client then); and no
 * listener is ever cancelled from the main thread while the worker runs its
 * accept (GLib 2.74's GCancellableSource races there and leaks a source per
 * lost race, which every later iteration of the worker's loop walks). Nodes
 * are never freed: the handlers' signals carry them. */
static Node *nodes[SIM_MAX_BUSES + 1][128];

static Node *node_at(const Instance *inst)
{
    if (inst->bus < 1 || inst->bus > SIM_MAX_BUSES || inst->addr < 1 || inst->addr > 127)
        return NULL;
    return nodes[inst->bus][inst->addr];
}

void usbfs_node_bind(Instance *inst)
{
    g_rec_mutex_lock(&sim.lock);
    Node *node = node_at(inst);
    g_rec_mutex_unlock(&sim.lock);
    if (!node && inst->bus >= 1 && inst->bus <= SIM_MAX_BUSES && inst->addr >= 1 && inst->addr <= 127) {
        /* the first instance at this path: its listener, attached once (main
         * thread, the only one that makes nodes, sim.lock not held) */
        node = g_new0(Node, 1);
        node->handler = umockdev_ioctl_base_new();
        g_signal_connect(node->handler, "handle-ioctl", G_CALLBACK(on_handle_ioctl), node);
        g_signal_connect(node->handler, "client-connected", G_CALLBACK(on_client_connected), node);
        materialize_ioctl_listen(inst->devnode, node->handler);
        g_rec_mutex_lock(&sim.lock);
        nodes[inst->bus][inst->addr] = node;
        g_rec_mutex_unlock(&sim.lock);
    }
    if (!node)
        return;
    g_rec_mutex_lock(&sim.lock);
    node->inst = inst;
    g_rec_mutex_unlock(&sim.lock);
}

/* The node binds new clients to nothing (sim.lock held). */
static void node_unbind(Instance *inst)
{
    Node *node = node_at(inst);
    if (node && node->inst == inst)
        node->inst = NULL;
}

/* ---- an instance that goes, and departs ---------------------------------------- */

static gboolean fail_all_cb(gpointer data)
{
    guint64 *id = data;
    g_rec_mutex_lock(&sim.lock);
    Instance *inst = instance_lookup(*id);
    if (inst)
        usbfs_fail_all(inst);
    g_rec_mutex_unlock(&sim.lock);
    return G_SOURCE_REMOVE;
}

void usbfs_instance_gone(Instance *inst)
{
    node_unbind(inst);
    /* URB data is only touched on the worker thread. Without a worker
     * context no client ever talked to us, so nothing is pending. */
    if (sim.worker_ctx)
        g_main_context_invoke_full(sim.worker_ctx, G_PRIORITY_DEFAULT, fail_all_cb, g_memdup2(&inst->id, sizeof inst->id),
                                   g_free);
}

/* The kernel's order on a real unplug: bulk and interrupt OUT URBs end with
 * -ESHUTDOWN (libusb: NO_DEVICE), IN URBs with -EPROTO (libusb: TRANSFER_ERROR). */
static void fail_kernel(gpointer data)
{
    fail_all_cb(data); /* inst->kernel_order is set: its statuses; waiting reapers, the FIFO */
}

void usbfs_instance_gone_kernel_order(Instance *inst)
{
    g_rec_mutex_lock(&sim.lock);
    node_unbind(inst);
    g_rec_mutex_unlock(&sim.lock);
    /* Without a worker context no client ever talked to us: nothing is pending. Else wait
     * until they have failed: only then does sysfs lose the device. The call carries the
     * instance's id, so a wait that gives up leaves the worker nothing to find freed. */
    if (sim.worker_ctx &&
        !worker_run(fail_kernel, g_memdup2(&inst->id, sizeof inst->id), g_free, 2 * G_TIME_SPAN_SECOND))
        g_printerr("accessory-sim: the usbfs worker did not fail the URBs of %d:%d within 2 s; going on\n", inst->bus,
                   inst->addr);
}

/* Worker thread: what the instance still has pending fails, its FIFO goes
 * (URB data lives here), and it is released: it dies now, or with its last
 * client. */
static gboolean depart_cb(gpointer data)
{
    guint64 *id = data;
    g_rec_mutex_lock(&sim.lock);
    Instance *inst = instance_lookup(*id);
    if (inst) {
        usbfs_fail_all(inst);
        inst->departed = TRUE;
        instance_release(inst);
    }
    g_rec_mutex_unlock(&sim.lock);
    return G_SOURCE_REMOVE;
}

void usbfs_instance_depart(Instance *inst)
{
    g_rec_mutex_lock(&sim.lock);
    node_unbind(inst);
    if (sim.worker_ctx) {
        g_main_context_invoke_full(sim.worker_ctx, G_PRIORITY_DEFAULT, depart_cb, g_memdup2(&inst->id, sizeof inst->id),
                                   g_free);
    } else {
        /* no client ever talked to the simulator: nothing pending, nobody holds it */
        inst->departed = TRUE;
        instance_release(inst);
    }
    g_rec_mutex_unlock(&sim.lock);
}
