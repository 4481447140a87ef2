/*
 * accessory-sim: port power. A port is switched by a PORT_POWER request to
 * its hub (hub.c tells through its handler) or by a write to its sysfs
 * `disable` (watch.c tells); the hub's power switching decides which ports
 * change (hub_switch). Every change is logged ("PORT off", "PORT on"). A
 * port whose power is really off (both halves' ports, on a USB 3 hub, as
 * VBUS is shared) drops what is on it in the kernel's order, deepest first
 * (the remove uevent --kernel-order=MS late),
 * and remembers it (topology_park); power back on plugs it again, at the
 * next address, once the port of the half it was on is on. A powered-off device forgets a wedge that a power cycle
 * cures. A device's `authorized` (watched too) drops it and brings it back
 * the same way, with its directory left holding `authorized` meanwhile.
 * Main thread, sim.lock not held on entry. Instances are plain pointers here:
 * only the main thread unplugs, and a hub's power never unplugs the hub itself
 * (nor its peer on the other bus), only what is behind it.
 */
#define _GNU_SOURCE
#include "power.h"
#include "devices.h"
#include "kinds.h"
#include "materialize.h"
#include "testbed.h"
#include "topology.h"
#include "watch.h"

#include <stdlib.h>
#include <string.h>

Instance *power_peer(const Instance *hub)
{
    if (hub->root_hub || !hub->spec.paired)
        return NULL;
    int bus = hub->spec.superspeed ? hub->bus - 1 : hub->bus + 1;
    const char *dash = strchr(hub->port, '-');
    char *port = g_strdup_printf("%d%s", bus, dash);
    Instance *peer = topology_at_port(port);
    g_free(port);
    return peer && peer->spec.kind == KIND_HUB && peer->spec.paired ? peer : NULL;
}

static gboolean port_off(const Instance *hub, guint n)
{
    return n <= 31 && (hub->ports_off & (1u << n));
}

/* Drops inst and what is behind it in the kernel's order, parking them; a
 * wedge that step cures is forgotten (sim.lock held on entry, released). */
static void drop_parked(Instance *inst, Wedge step)
{
    GPtrArray *gone = topology_behind(inst); /* the deepest first */
    g_ptr_array_add(gone, inst);
    for (guint i = 0; i < gone->len; i++) {
        Instance *x = g_ptr_array_index(gone, i);
        Spec spec;
        spec_copy(&spec, &x->spec);
        if (spec.wedge <= step)
            spec.wedge = WEDGE_NONE; /* a power cycle cures every lesser wedge */
        topology_park(x->port, &spec);
        spec_clear(&spec);
    }
    g_rec_mutex_unlock(&sim.lock);
    devices_unplug_urbs_first(gone, sim.kernel_order_ms > 0 ? (guint)sim.kernel_order_ms : 0);
    g_ptr_array_unref(gone);
}

/* Drops what is on the hub's port n, parking it for the power's return. */
static void drop_port(Instance *hub, guint n)
{
    g_rec_mutex_lock(&sim.lock);
    char *child = topology_child_port(hub, n);
    Instance *inst = topology_at_port(child);
    g_free(child);
    if (!inst) {
        g_rec_mutex_unlock(&sim.lock);
        return;
    }
    drop_parked(inst, WEDGE_POWER_CYCLE);
}

/* Plugs what is parked on PORT and behind it, the nearest first, after
 * removing what a deauthorized device left of its directory. */
static void plug_parked(const char *port)
{
    g_rec_mutex_lock(&sim.lock);
    if (topology_at_port(port)) {
        g_rec_mutex_unlock(&sim.lock);
        return; /* still there (its port never lost power): nothing comes back */
    }
    GPtrArray *back = topology_unpark(port);
    char *syspath = topology_syspath(port);
    g_rec_mutex_unlock(&sim.lock);
    if (back->len > 0) {
        char *stub = tb_path(syspath);
        tb_remove_tree(stub);
        g_free(stub);
    }
    g_free(syspath);
    for (guint i = 0; i < back->len; i++) {
        Parked *p = g_ptr_array_index(back, i);
        char *error = NULL;
        Instance *fresh = device_plug(&p->spec, p->port, FALSE, &error);
        if (!fresh) {
            g_printerr("accessory-sim: %s could not come back: %s\n", p->port, error);
            g_free(error);
        }
    }
    g_ptr_array_unref(back);
}

/* Plugs again what was parked on the hub's port n (and behind it). */
static void restore_port(Instance *hub, guint n)
{
    if (port_off(hub, n))
        return; /* this half's port is still off: it sees nothing yet */
    char *child = topology_child_port(hub, n);
    plug_parked(child);
    g_free(child);
}

/* After the hub's ports in mask changed: the log, the `disable` files (but
 * that of port `written`, which a client wrote and may have written again
 * since), and the devices. */
static void apply(Instance *hub, guint32 mask, gboolean on, guint written)
{
    for (guint n = 1; n <= 31; n++) {
        if (!(mask & (1u << n)))
            continue;
        char *child = topology_child_port(hub, n);
        g_rec_mutex_lock(&sim.lock);
        g_ptr_array_add(sim.power_log, g_strdup_printf("%s %s", child, on ? "on" : "off"));
        Instance *peer = power_peer(hub); /* a hub on another bus: no drop below unplugs it */
        gboolean really_off = port_off(hub, n) && (!peer || port_off(peer, n));
        g_rec_mutex_unlock(&sim.lock);
        sim_log("port %s powered %s%s", child, on ? "on" : "off", peer && !really_off ? " (its peer still powers it)" : "");
        g_free(child);
        if (n != written)
            materialize_port_disable(hub, n, !on);
        if (!on && really_off) {
            drop_port(hub, n);
            if (peer)
                drop_port(peer, n);
        } else if (on) {
            restore_port(hub, n);
            if (peer)
                restore_port(peer, n);
        }
    }
}

static guint32 switch_hub_port(Instance *hub, guint n, gboolean on, guint written)
{
    g_rec_mutex_lock(&sim.lock);
    guint32 changed = hub_switch(hub, n, on);
    g_rec_mutex_unlock(&sim.lock);
    if (changed)
        apply(hub, changed, on, written);
    return changed;
}

gboolean power_switch(const char *port, gboolean on, char **error)
{
    int n = 0;
    g_rec_mutex_lock(&sim.lock);
    Instance *hub = topology_upstream(port, &n);
    g_rec_mutex_unlock(&sim.lock);
    if (!hub || n < 1 || (guint)n > topology_hub_ports(hub)) {
        *error = g_strdup_printf("no hub port %s", port);
        return FALSE;
    }
    switch_hub_port(hub, (guint)n, on, 0); /* drops what is behind the hub, never the hub */
    return TRUE;
}

/* A PORT_POWER request changed the ports in mask of the hub at BUS:ADDR. */
static void on_hub_request(int bus, int addr, guint32 mask, gboolean on)
{
    Instance *hub = bus >= 1 && bus <= sim.nbuses && addr == 1 ? sim.root_hubs[bus] : topology_find(bus, addr);
    if (!hub || !is_hub(hub))
        return; /* unplugged in the meantime */
    apply(hub, mask, on, 0);
}

/* A device's `authorized` written: 0 drops it (and what is behind it) in the
 * kernel's order and leaves its directory with only `authorized` in it; 1
 * there plugs it again at the next address. A reauthorization cures the
 * wedges that a reset or a reauthorization cures. */
static void on_authorized(const char *dir)
{
    const char *base = strrchr(dir, '/');
    int value = watch_read_flag(dir, "authorized");
    if (!base || (value != 0 && value != 1))
        return;
    char *port = g_strdup(base + 1);
    g_rec_mutex_lock(&sim.lock);
    Instance *inst = topology_at_port(port);
    char *mine = inst ? tb_path(inst->syspath) : NULL;
    gboolean present = mine && strcmp(mine, dir) == 0;
    g_free(mine);
    if (value == 0 && present) {
        char *syspath = g_strdup(inst->syspath);
        drop_parked(inst, WEDGE_REAUTHORIZE); /* releases sim.lock */
        char *stub = tb_path(syspath);
        tb_mkdir_p(stub);
        tb_attr(stub, "authorized", "0\n");
        watch_dir(stub);
        sim_log("deauthorized %s", port);
        /* a 1 written before the watch began is seen only here */
        gboolean written = watch_read_flag(stub, "authorized") == 1;
        g_free(stub);
        g_free(syspath);
        if (written) {
            sim_log("authorized %s again", port);
            plug_parked(port);
        }
    } else if (value == 1 && !inst) {
        g_rec_mutex_unlock(&sim.lock);
        sim_log("authorized %s again", port);
        plug_parked(port);
    } else {
        g_rec_mutex_unlock(&sim.lock);
    }
    g_free(port);
}

/* A client wrote a watched file: DIR/disable of a hub port ("…/1-1-port4"),
 * or DIR/authorized of a device. */
static void on_write(const char *dir, const char *name)
{
    if (strcmp(name, "authorized") == 0) {
        on_authorized(dir);
        return;
    }
    if (strcmp(name, "disable") != 0)
        return;
    const char *base = strrchr(dir, '/');
    const char *tail = base ? strstr(base, "-port") : NULL;
    if (!tail)
        return;
    int value = watch_read_flag(dir, name);
    if (value != 0 && value != 1)
        return;
    char *hub_port = g_strndup(base + 1, (gsize)(tail - base - 1));
    guint n = (guint)atoi(tail + strlen("-port"));
    Instance *hub = NULL;
    g_rec_mutex_lock(&sim.lock);
    if (g_str_has_prefix(hub_port, "usb")) {
        int bus = atoi(hub_port + 3);
        hub = bus >= 1 && bus <= sim.nbuses ? sim.root_hubs[bus] : NULL;
    } else {
        hub = topology_at_port(hub_port);
    }
    g_rec_mutex_unlock(&sim.lock);
    g_free(hub_port);
    if (!hub)
        return;
    if (n >= 1 && n <= topology_hub_ports(hub) && !switch_hub_port(hub, n, value == 0, n) &&
        watch_read_flag(dir, name) == value && port_off(hub, n) != (value == 1))
        materialize_port_disable(hub, n, port_off(hub, n)); /* what is, on a hub that did not switch */
}

void power_vanish(Instance *inst, gboolean back_on_cycle)
{
    if (back_on_cycle) {
        g_rec_mutex_lock(&sim.lock);
        topology_park(inst->port, &inst->spec);
        g_rec_mutex_unlock(&sim.lock);
    }
    device_unplug_urbs_first(inst, sim.kernel_order_ms > 0 ? (guint)sim.kernel_order_ms : 0);
}

void power_init(void)
{
    hub_set_power_handler(on_hub_request);
    watch_init(on_write);
}
