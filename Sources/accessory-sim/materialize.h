/*
 * accessory-sim: a device's sysfs directories and /dev node in the testbed,
 * and its uevents (materialize.c). Main thread, sim.lock not held, unless
 * noted.
 */
#ifndef ACCESSORY_SIM_MATERIALIZE_H
#define ACCESSORY_SIM_MATERIALIZE_H

#include "state.h"

/* A minimal PCI device for bus B's root hub to hang off. No uevents. */
void materialize_host_controller(int bus);
/* Starts a usbdevfs listener (umockdev's ioctl socket) on a /dev path, with
 * handler behind it, for the rest of the run: it is never detached. */
void materialize_ioctl_listen(const char *devnode, UMockdevIoctlBase *handler);
/* Writes the device and (unless silent) sends its "add" uevents, the
 * device's first. */
void materialize_attach(Instance *inst, gboolean silent);
/* Sends the "remove" uevents (unless silent), the interfaces' first, and takes
 * the device out of the testbed. */
void materialize_detach(Instance *inst, gboolean silent);
/* The kernel's first step of an unplug: out of /sys/bus/usb/devices, node gone;
 * the directory stays for materialize_detach's uevent. */
void materialize_unlist(Instance *inst);
/* Removes the /dev node (and udev's record of it) only. */
void materialize_remove_node(Instance *inst);
/* The interface's driver link and uevent after a (pretend) bind or unbind
 * (any thread, sim.lock held). */
void materialize_driver_link(Instance *inst, int slot, const char *driver);

/* A hub's port N directory in the testbed (absolute path). */
char *materialize_port_dir(const Instance *hub, guint n);
/* Writes the port's `disable` as OFF says, unless it says so already. */
void materialize_port_disable(const Instance *hub, guint n, gboolean off);
/* The `peer` links between the ports of a USB 3 hub's two halves. */
void materialize_peer_links(const Instance *a, const Instance *b);

#endif
