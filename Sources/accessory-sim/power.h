/*
 * accessory-sim: port power (power.c, main thread): hub ports switched by
 * the hub's PORT_POWER requests or by their sysfs `disable`, what that does
 * to the devices on them, the power log, and devices that vanish until a
 * power cycle.
 */
#ifndef ACCESSORY_SIM_POWER_H
#define ACCESSORY_SIM_POWER_H

#include "state.h"

/* Registers the handlers of the hub requests and of sysfs writes. */
void power_init(void);
/* Switches the port (the name of what is plugged there, "1-1.4") as its hub
 * allows; FALSE and *error if there is no such port. */
gboolean power_switch(const char *port, gboolean on, char **error);
/* The device leaves (remove event, the kernel's order); back_on_cycle: it
 * comes back when its port is power-cycled, else never. */
void power_vanish(Instance *inst, gboolean back_on_cycle);
/* The other half of a USB 3 hub, or NULL (sim.lock held). */
Instance *power_peer(const Instance *hub);

#endif
