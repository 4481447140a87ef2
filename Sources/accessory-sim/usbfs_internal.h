/*
 * accessory-sim: what the usbdevfs handler's files share (urbs.c, clients.c,
 * ch9.c, transfers.c, usbfs.c). Worker thread, sim.lock held, unless noted.
 */
#ifndef ACCESSORY_SIM_USBFS_INTERNAL_H
#define ACCESSORY_SIM_USBFS_INTERNAL_H

#include "usbfs.h"

#define CLIENT_KEY "accessory-sim-client"

/* The largest data stage of one control transfer: the kernel's proc_control
 * (USBDEVFS_CONTROL) refuses more than a page with EINVAL, and libusb refuses
 * more than MAX_CTRL_BUFFER_LENGTH (4096) before any ioctl. */
#define SIM_CTRL_MAX 4096

/* One /dev/bus/usb/BBB/DDD: its usbdevfs listener, kept for the whole run
 * (usbfs.c), and the instance there now. */
typedef struct {
    UMockdevIoctlBase *handler;
    Instance *inst; /* NULL: none (sim.lock) */
} Node;

struct Client {
    UMockdevIoctlClient *ioc; /* not owned: the client owns us */
    Instance *inst;           /* the instance it opened (it lives while we are in its
                               * clients); NULL: none was there, or we have closed */
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


/* urbs.c: completing ioctls and URBs, failing them on a detach, endpoint
 * halts, and the bulk engine */
void reply(UMockdevIoctlClient *ioc, long res, int err);
void fail(UMockdevIoctlClient *ioc, int err);
/* Client memory at offset..offset+len of parent, or NULL (logged). */
UMockdevIoctlData *resolve(UMockdevIoctlData *parent, gsize offset, gsize len);
void urb_free(Urb *r);
/* A URB is done: hand it to its client's reap queue. */
void urb_done(Urb *r, int status, gsize actual);
/* Answers the client's pending REAPURB/REAPURBNDELAY with its oldest completed URB. */
void deliver(Client *c);
/* Frees the client's URBs in q. */
void drop_client_urbs(GQueue *q, Client *c);
/* Fails everything of a gone instance. */
void usbfs_fail_all(Instance *inst);
/* Surprise removal from within a transfer (fault unplug-after): reported
 * upward through the vanish handler (with the instance's id), on the main
 * context. */
void usbfs_vanish(Instance *inst);
/* The endpoint is in the active configuration (none while unconfigured). */
gboolean endpoint_exists(Instance *inst, guint8 ep);
/* The halt flag of an endpoint, or NULL for one that has none. */
gboolean *halt_flag(Instance *inst, guint ep);
/* SET_INTERFACE (and SET_CONFIGURATION for all): the interface's endpoints
 * lose their halts. */
void clear_interface_halts(Instance *inst, unsigned int slot);
/* Runs an accepted bulk or interrupt URB (the ioctl is answered already). */
void bulk_submit(Instance *inst, Urb *r);
/* Moves FIFO data into pending IN URBs, and NAKed OUT URBs into the FIFO. */
void pump(Instance *inst);

/* clients.c: open file descriptors and their claims */
/* ioc's client; a new one is bound to the instance at its node now (NULL if
 * none is). sim.lock held, worker thread. */
Client *client_get(Node *node, UMockdevIoctlClient *ioc);
/* The handler's "client-connected" (user: the Node). */
void on_client_connected(UMockdevIoctlBase *handler, UMockdevIoctlClient *ioc, gpointer user);
/* Claims interface slot ifno for c (usbfs claims implicitly on first use):
 * 0, ENOENT or EBUSY. */
int check_claim(Instance *inst, Client *c, unsigned int ifno);

/* ch9.c: one control transfer: the bytes of an IN data stage written to data
 * (at most wLength and avail), an OUT data stage's length, or -EPIPE for a stall. */
int usbfs_control(Instance *inst, const guint8 *setup, guint8 *data, gsize avail);

/* One usbdevfs ioctl of client c: it completes the ioctl (reply or fail), or
 * leaves it pending (a blocking REAPURB); usbfs.c's table picks it by req. */
typedef void IoctlFn(Instance *inst, Client *c, UMockdevIoctlClient *ioc, gulong req, UMockdevIoctlData *arg);

/* transfers.c: the ioctls that move data */
IoctlFn ioctl_submit_urb;  /* SUBMITURB: checks, then runs a control URB at once or starts a bulk one */
IoctlFn ioctl_discard_urb; /* DISCARDURB: a pending URB completes with -ENOENT */
IoctlFn ioctl_reap;        /* REAPURB, REAPURBNDELAY: they work after a disconnect too */
IoctlFn ioctl_control;     /* CONTROL: a synchronous control transfer */

#endif
