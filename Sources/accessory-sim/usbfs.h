/*
 * accessory-sim: the usbdevfs emulation behind each /dev/bus/usb/BBB/DDD
 * node (usbfs.c, with transfers.c, urbs.c, clients.c and ch9.c).
 */
#ifndef ACCESSORY_SIM_USBFS_H
#define ACCESSORY_SIM_USBFS_H

#include "state.h"

UMockdevIoctlBase *usbfs_handler_new(Instance *inst);
/* Who removes a device that vanished mid-transfer (fault unplug-after): called
 * on the main context, sim.lock not held, with the gone instance. */
void usbfs_set_vanish_handler(void (*handler)(Instance *inst));
/* Called with sim.lock held once an instance is marked gone: fails its
 * pending URBs with ENODEV (on the worker thread, where URB data lives). */
void usbfs_instance_gone(Instance *inst);
/* The kernel's order: fails them (OUT -ESHUTDOWN, IN -EPROTO) and waits
 * until they have failed (main thread, sim.lock not held). */
void usbfs_instance_gone_kernel_order(Instance *inst);
/* Binds (name) or unbinds (NULL) the pretend kernel driver; sim.lock held. */
void usbfs_set_kernel_driver(Instance *inst, unsigned int ifno, const char *name);

#endif
