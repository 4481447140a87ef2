/*
 * accessory-sim: the topology (topology.c): buses, hubs, ports, addresses
 * and the table of present devices. No I/O; callers hold sim.lock where
 * noted (it is recursive).
 */
#ifndef ACCESSORY_SIM_TOPOLOGY_H
#define ACCESSORY_SIM_TOPOLOGY_H

#include "state.h"

/* The port's bus: "3-1.4" -> 3; "usb2" -> 2. */
int topology_bus_of(const char *port);
/* The PCI name and sysfs path of bus B's host controller (an xHCI function,
 * one root hub each): bus 1 is 0000:00:1d.0, bus B > 1 is 0000:00:0B.0. */
char *topology_hcd_name(int bus);
char *topology_hcd_syspath(int bus);
/* The sysfs path of a device on PORT, under its parent as the kernel nests
 * them ("usbN" for a root hub); sim.lock held. */
char *topology_syspath(const char *port);

/* A hub's downstream ports (a root hub's: SIM_ROOT_HUB_PORTS, as its hub
 * descriptor says; devices plug on root ports up to 255, but only these have a
 * port directory and switch power). */
guint topology_hub_ports(const Instance *hub);
/* The name of a hub's port N in sysfs: "1-1-port4", "usb1-port3". */
char *topology_port_dir_name(const Instance *hub, guint n);
/* The port name of what is plugged into a hub's port N: "1-1.4", "1-3". */
char *topology_child_port(const Instance *hub, guint n);

/* Empties the table and resets the buses' addresses (main thread, at start-up). */
void topology_init(int first_address, int nbuses);
/* Checks PORT (NULL: the first free port of bus 1) and takes an address on
 * its bus: *port_out and *addr_out, or FALSE and *error. sim.lock held. */
gboolean topology_claim(const char *port, char **port_out, int *addr_out, char **error);
/* Lists a claimed instance as present; sim.lock held. */
void topology_add(Instance *inst);
/* Unlists it and frees its address; FALSE if it was not listed. sim.lock held. */
gboolean topology_remove(Instance *inst);
/* The present, not gone device at BUS:ADDR, or NULL. */
Instance *topology_find(int bus, int addr);
/* The listed device with this id (gone or not: a device that vanished mid-transfer
 * stays listed until it is unplugged), or NULL. */
Instance *topology_find_id(guint64 id);
/* Whether the hub (or root hub) has something plugged into its port n (sim.lock held). */
gboolean hub_port_connected(const Instance *hub, int n);
/* The devices behind a hub, the deepest first. The array holds plain pointers:
 * they stay valid until the main thread unplugs them (main thread). */
GPtrArray *topology_behind(const Instance *hub);
/* Every present device, not gone, by bus and port (plain pointers, as above). */
GPtrArray *topology_present(void);
/* The present, not gone device on PORT, or NULL (sim.lock held). */
Instance *topology_at_port(const char *port);
/* The hub (a root hub for "B-N") that PORT hangs off, and its port number
 * *n; NULL if there is no such hub (sim.lock held). */
Instance *topology_upstream(const char *port, int *n);

/* A device waiting for its port's power (or a "vanish"ed one waiting for a
 * power cycle): what comes back on PORT. sim.lock held for all four. */
typedef struct {
    char *port;
    Spec spec;
} Parked;
void topology_park(const char *port, const Spec *spec);
/* Takes the devices parked on PORT and behind it, the nearest first. */
GPtrArray *topology_unpark(const char *port);
/* Forgets the devices parked behind the hub on PORT (it is unplugged). */
void topology_drop_parked_behind(const char *port);
/* The same, but on PORT itself and behind it. */
void topology_drop_parked(const char *port);

/* Empties the table and returns what was in it. */
GPtrArray *topology_take_all(void);

#endif
