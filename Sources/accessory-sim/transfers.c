/*
 * accessory-sim: the usbdevfs ioctls that move data: SUBMITURB, DISCARDURB,
 * REAPURB/REAPURBNDELAY and the synchronous CONTROL. They check a request
 * in usbfs's order and hand it on: a control transfer to ch9.c, a bulk or
 * interrupt URB to the bulk engine (urbs.c), a completed URB to its
 * client's reap queue. usbfs.c's dispatch table calls them (worker thread,
 * sim.lock held).
 */
#define _GNU_SOURCE
#include "usbfs_internal.h"

#include <errno.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <linux/usbdevice_fs.h>

void ioctl_submit_urb(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    (void)req;
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
        if (inst->spec.wedge != WEDGE_NONE) {
            g_queue_push_tail(&inst->parked, r); /* wedged: never answers */
            return;
        }
        int n = usbfs_control(inst, b, b + 8, r->len - 8);
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

void ioctl_discard_urb(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    (void)req;
    gulong addr = *(gulong *)arg->data; /* the argument is the URB pointer itself */
    if (discard_from(&inst->in_pending, c, addr) || discard_from(&inst->out_pending, c, addr) ||
        discard_from(&inst->parked, c, addr)) {
        reply(ioc, 0, 0);
        pump(inst); /* a discarded NAKed OUT may unblock others */
    } else {
        fail(ioc, EINVAL);
    }
}

/* REAPURB, REAPURBNDELAY: they work after a disconnect too. */
void ioctl_reap(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    (void)arg;
    if (c->completed.length > 0)
        deliver(c);
    else if (inst->gone)
        fail(ioc, ENODEV);
    else if (req == USBDEVFS_REAPURBNDELAY)
        fail(ioc, EAGAIN);
    else
        c->reap_waiting = TRUE; /* answered by urb_done() */
}

void ioctl_control(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg)
{
    (void)c, (void)req;
    UMockdevIoctlData *d = resolve(arg, 0, sizeof(struct usbdevfs_ctrltransfer));
    if (!d) {
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
    int n = inst->spec.wedge != WEDGE_NONE ? -ETIMEDOUT /* wedged: as usbfs after the timeout */
                                           : usbfs_control(inst, setup, data ? data->data : NULL, data ? (gsize)data->data_len : 0);
    g_clear_object(&data);
    g_object_unref(d);
    if (n < 0)
        fail(ioc, -n);
    else
        reply(ioc, n, 0);
}
