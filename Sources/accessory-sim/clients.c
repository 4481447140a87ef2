/*
 * accessory-sim: usbfs clients (one open file descriptor of a node each) and
 * their interface claims. URBs and claims belong to the client that made
 * them and are dropped when it closes the node (umockdev 0.17 never emits
 * "client-vanished"; the client's "connected" property changes instead).
 * A client is bound to the instance at its node when it connects and keeps
 * it alive: an instance that has departed dies when its last client closes.
 */
#include "materialize.h"
#include "usbfs_internal.h"

#include <errno.h>

/* The client closed its node (or is being freed): its URBs and claims go,
 * and the instance loses it; an instance that has departed dies with its
 * last client (instance_release). */
static void client_close(Client *c)
{
    g_rec_mutex_lock(&sim.lock);
    if (!c->closed) {
        Instance *inst = c->inst;
        Urb *r;
        c->closed = TRUE;
        c->reap_waiting = FALSE;
        while ((r = g_queue_pop_head(&c->completed)) != NULL)
            urb_free(r);
        if (inst) {
            drop_client_urbs(&inst->in_pending, c);
            drop_client_urbs(&inst->out_pending, c);
            drop_client_urbs(&inst->parked, c);
            for (int i = 0; i < SIM_NIFACES; i++) {
                if (inst->claim_owner[i] == c) {
                    inst->claim_owner[i] = NULL;
                    inst->dropped++;
                }
            }
            inst->clients = g_list_remove(inst->clients, c);
            sim_log("%s: client closed", inst->devnode);
            c->inst = NULL;
            instance_release(inst);
        }
    }
    g_rec_mutex_unlock(&sim.lock);
}

static void client_free(gpointer data)
{
    Client *c = data;
    client_close(c);
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

Client *client_get(Node *node, UMockdevIoctlClient *ioc)
{
    Client *c = g_object_get_data(G_OBJECT(ioc), CLIENT_KEY);
    if (c)
        return c;
    if (G_UNLIKELY(!sim.worker_ctx))
        worker_note_context();
    c = g_new0(Client, 1);
    c->ioc = ioc;
    c->inst = node->inst;
    g_queue_init(&c->completed);
    if (c->inst) {
        c->inst->clients = g_list_prepend(c->inst->clients, c);
        c->inst->opens++;
        sim_log("%s: client opened", c->inst->devnode);
    }
    g_object_set_data_full(G_OBJECT(ioc), CLIENT_KEY, c, client_free);
    g_signal_connect(ioc, "notify::connected", G_CALLBACK(on_client_notify), NULL);
    return c;
}

void on_client_connected(UMockdevIoctlBase *handler, UMockdevIoctlClient *ioc, gpointer user)
{
    (void)handler;
    g_rec_mutex_lock(&sim.lock);
    client_get(user, ioc);
    g_rec_mutex_unlock(&sim.lock);
}

/* Interfaces: usbfs claims an interface implicitly on first use. */
int check_claim(Instance *inst, Client *c, unsigned int ifno)
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
    materialize_driver_link(inst, (int)ifno, copy);
}

