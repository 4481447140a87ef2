/*
 * accessory-sim: the usbdevfs emulation behind each /dev/bus/usb/BBB/DDD
 * node (usbfs.c, with transfers.c, urbs.c, clients.c and ch9.c).
 */
#ifndef ACCESSORY_SIM_USBFS_H
#define ACCESSORY_SIM_USBFS_H

#include "state.h"

/* The instance's /dev node gets it: clients that connect to the node from now
 * on are bound to inst. The node's listener is made on the path's first use
 * and kept for the run. Main thread, sim.lock not held. */
void usbfs_node_bind(Instance *inst);
/* Who removes a device that vanished mid-transfer (fault unplug-after): called
 * on the main context, sim.lock not held, with the gone instance's id (look it
 * up: it may have been unplugged meanwhile). */
void usbfs_set_vanish_handler(void (*handler)(guint64 id));
/* Called with sim.lock held once an instance is marked gone: its node binds
 * new clients to nothing, and its pending URBs fail with ENODEV (on the worker
 * thread, where URB data lives). */
void usbfs_instance_gone(Instance *inst);
/* The kernel's order: the node lets it go, and its URBs fail (OUT -ESHUTDOWN,
 * IN -EPROTO); waits until they have failed (main thread, sim.lock not held). */
void usbfs_instance_gone_kernel_order(Instance *inst);
/* The main thread is done with a gone instance (out of the topology and the
 * testbed): the worker fails what is left and releases it, and it dies there
 * or with its last client. The caller must not touch inst again. Main thread,
 * sim.lock not held. */
void usbfs_instance_depart(Instance *inst);
/* Binds (name) or unbinds (NULL) the pretend kernel driver; sim.lock held. */
void usbfs_set_kernel_driver(Instance *inst, unsigned int ifno, const char *name);

#endif
