/*
 * accessory-sim: plugging and unplugging devices (devices.c, main thread).
 */
#ifndef ACCESSORY_SIM_DEVICES_H
#define ACCESSORY_SIM_DEVICES_H

#include "state.h"

/* The buses and their root hubs; registers the handlers of the layers below. */
void devices_init(int first_address, int nbuses);
void devices_shutdown(void);
/* PORT NULL: the first free port of bus 1. NULL and *error if it cannot. */
Instance *device_plug(const Spec *spec, const char *port, gboolean silent, char **error);
/* In the contract's order (or the kernel's under --kernel-order, unless silent);
 * a hub: what is behind it first. */
void device_unplug(Instance *inst, gboolean silent);
/* The kernel's order: URBs fail, then sysfs's listing and the node go, then
 * (uevent_delay_ms later) the remove uevent. */
void device_unplug_urbs_first(Instance *inst, guint uevent_delay_ms);
/* Several at once (a hub and what is behind it, a port's power): all leave sysfs
 * in the order given, then their remove uevents trail, uevent_delay_ms apart. */
void devices_unplug_urbs_first(GPtrArray *gone, guint uevent_delay_ms);
/* fault no-node: only the /dev node goes. */
void device_remove_node(Instance *inst);
Instance *device_replug(Instance *inst, gboolean silent, char **error);

#endif
