/*
 * accessory-sim: URBs: completing them, failing them when the device goes,
 * endpoint halts, and the bulk engine (the echo FIFO and scripted faults).
 * Worker thread, sim.lock held, unless noted.
 *
 * The echo (on the endpoints kind_echoes() names): OUT 0x01 data goes into
 * a per-device FIFO of chunks, one chunk per OUT transfer, and comes back on
 * IN 0x81 in order. An IN
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
 * removed as by "ctl unplug" (with uevents), by the vanish handler that
 * the layer above registers. BYTES=0 removes it at the next bulk OUT URB.
 */
#define _GNU_SOURCE
#include "kinds.h"
#include "usbfs_internal.h"

#include <errno.h>
#include <string.h>
#include <linux/usb/ch9.h>
#include <linux/usbdevice_fs.h>

/* ---- helpers --------------------------------------------------------------- */

void reply(UMockdevIoctlClient *ioc, long res, int err)
{
    umockdev_ioctl_client_complete(ioc, res, err);
}

void fail(UMockdevIoctlClient *ioc, int err)
{
    umockdev_ioctl_client_complete(ioc, -1, err);
}

UMockdevIoctlData *resolve(UMockdevIoctlData *parent, gsize offset, gsize len)
{
    GError *err = NULL;
    UMockdevIoctlData *d = umockdev_ioctl_data_resolve(parent, offset, len, &err);
    if (err) {
        sim_log("cannot read client memory: %s", err->message);
        g_error_free(err);
    }
    return d;
}

void urb_free(Urb *r)
{
    g_clear_object(&r->urbd);
    g_clear_object(&r->buf);
    g_free(r);
}

void deliver(Client *c);

/* A URB is done: hand it to its client's reap queue. */
void urb_done(Urb *r, int status, gsize actual)
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
void deliver(Client *c)
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

void drop_client_urbs(GQueue *q, Client *c)
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
        /* the kernel's order (usbfs.c's fail_kernel); parked holds timed-out URBs and
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
    instance_fifo_clear(inst);
    for (GList *l = inst->clients; l; l = l->next) {
        Client *c = l->data;
        if (c->reap_waiting) {
            c->reap_waiting = FALSE;
            fail(c->ioc, ENODEV);
        }
    }
}

static void (*vanish_handler)(guint64 id);

void usbfs_set_vanish_handler(void (*handler)(guint64 id))
{
    vanish_handler = handler;
}

static gboolean vanish_idle(gpointer data)
{
    if (vanish_handler)
        vanish_handler(*(guint64 *)data);
    return G_SOURCE_REMOVE;
}

void usbfs_vanish(Instance *inst)
{
    inst->vanish_pending = FALSE;
    inst->gone = TRUE;
    usbfs_fail_all(inst);
    g_idle_add_full(G_PRIORITY_DEFAULT, vanish_idle, g_memdup2(&inst->id, sizeof inst->id), g_free);
}

gboolean endpoint_exists(Instance *inst, guint8 ep)
{
    return inst->config == 1 && endpoint_info(inst, ep).exists;
}

gboolean *halt_flag(Instance *inst, guint ep)
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
void clear_interface_halts(Instance *inst, unsigned int slot)
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

/* ---- bulk -------------------------------------------------------------------- */

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
void pump(Instance *inst)
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
                {
                Chunk *done = g_queue_pop_head(&inst->fifo);
                g_clear_object(&done->data);
                g_free(done);
            }
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

void bulk_submit(Instance *inst, Urb *r)
{
    if (inst->spec.wedge != WEDGE_NONE) {
        g_queue_push_tail(&inst->parked, r); /* wedged: never completes until discarded */
        return;
    }
    if (!kind_echoes(inst, r->ep)) {
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

