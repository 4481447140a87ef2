/*
 * accessory-sim: plugging and unplugging (main thread): an instance is
 * made (its place from the topology, its descriptors from its kind), bound
 * to its /dev node's usbdevfs listener and materialized; an unplug undoes
 * that, in the contract's order or in the kernel's, and then departs the
 * instance (the main thread's last touch: see state.h). Also the upward news of the layers
 * below, through the handlers registered here: a phone's switch to
 * accessory mode (android.c) and a device that vanished mid-transfer (usbfs).
 */
#define _GNU_SOURCE
#include "devices.h"
#include "kinds.h"
#include "materialize.h"
#include "testbed.h"
#include "topology.h"
#include "usbfs.h"

#include <string.h>

/* A new instance on PORT at ADDR (sim.lock held): registered (sim.instances
 * owns it), not yet listed nor in the testbed. */
static Instance *instance_new(const Spec *spec, const char *port, int addr, gboolean root_hub)
{
    Instance *inst = g_new0(Instance, 1);
    inst->root_hub = root_hub;
    spec_copy(&inst->spec, spec);
    inst->port = g_strdup(port);
    inst->bus = topology_bus_of(port);
    inst->addr = addr;
    if (root_hub) {
        char *hcd = topology_hcd_syspath(inst->bus);
        inst->syspath = g_strdup_printf("%s/usb%d", hcd, inst->bus);
        g_free(hcd);
    } else {
        inst->syspath = topology_syspath(port); /* under its parent's directory, as the kernel nests them */
    }
    kind_describe(inst);
    if (root_hub) {
        inst->nifaces = 1;
        inst->ifnums[0] = 0;
        inst->ifnames[0] = g_strdup_printf("%d-0:1.0", inst->bus);
    } else {
        for (const guint8 *intf; inst->nifaces < SIM_NIFACES && (intf = interface_desc(inst, inst->nifaces)); inst->nifaces++) {
            inst->ifnums[inst->nifaces] = intf[2];
            inst->ifnames[inst->nifaces] = g_strdup_printf("%s:1.%u", port, (unsigned)intf[2]);
        }
    }
    inst->devnode = g_strdup_printf("/dev/bus/usb/%03d/%03d", inst->bus, addr);
    g_queue_init(&inst->fifo);
    g_queue_init(&inst->in_pending);
    g_queue_init(&inst->out_pending);
    g_queue_init(&inst->parked);
    inst->unplug_after = -1;
    inst->config = 1;
    instance_register(inst);
    return inst;
}

/* Into the testbed, its /dev node's clients bound to it (sim.lock not held). */
static void attach(Instance *inst, gboolean silent)
{
    usbfs_node_bind(inst);
    materialize_attach(inst, silent);
}

static Instance *plug(const Spec *spec, const char *port, gboolean silent, char **aoa_strings, char **error);

/* A phone got Android Open Accessory's START (android.c calls this on the
 * main context): it leaves (with its remove uevent, in the kernel's order
 * under --kernel-order) and comes back on the same port at the next address
 * as 18d1:2d01, holding the strings it got before its "add" uevent. */
static void switch_to_accessory_mode(int bus, int addr)
{
    Spec spec;
    char *strings[6];
    char *error = NULL;
    Instance *phone = topology_find(bus, addr);

    if (!phone || phone->spec.kind != KIND_PHONE)
        return; /* unplugged (or replaced) in the meantime */
    spec_copy(&spec, &phone->spec);
    spec.kind = KIND_PHONE_ACCESSORY;
    spec.vid = 0x18d1;
    spec.pid = 0x2d01;
    char *port = g_strdup(phone->port);
    g_rec_mutex_lock(&sim.lock);
    for (int i = 0; i < 6; i++)
        strings[i] = g_strdup(phone->aoa_strings[i]);
    g_rec_mutex_unlock(&sim.lock);
    device_unplug(phone, FALSE); /* phone may be freed now */
    Instance *fresh = plug(&spec, port, FALSE, strings, &error);
    if (fresh) {
        sim_log("phone on %s switched to accessory mode: %d:%d", port, fresh->bus, fresh->addr);
    } else {
        g_printerr("accessory-sim: the phone on %s could not come back in accessory mode: %s\n", port, error);
        g_free(error);
    }
    for (int i = 0; i < 6; i++)
        g_free(strings[i]);
    spec_clear(&spec);
    g_free(port);
}


/* fault unplug-after: the device vanished mid-transfer (usbfs marked it gone);
 * it may have been unplugged since. */
static void vanished(guint64 id)
{
    Instance *inst = topology_find_id(id);
    if (inst)
        device_unplug(inst, FALSE);
}

void devices_init(int first_address, int nbuses)
{
    Spec hub = {.vid = 0x1d6b, .pid = 0x0002};
    char port[16];

    android_set_switch_handler(switch_to_accessory_mode);
    usbfs_set_vanish_handler(vanished);
    topology_init(first_address, nbuses);
    tb_init();
    for (int bus = 1; bus <= nbuses; bus++) {
        materialize_host_controller(bus);
        g_snprintf(port, sizeof(port), "usb%d", bus);
        g_rec_mutex_lock(&sim.lock);
        sim.root_hubs[bus] = instance_new(&hub, port, 1, TRUE);
        g_rec_mutex_unlock(&sim.lock);
        attach(sim.root_hubs[bus], FALSE);
        if (bus == 1 && !worker_capture(sim.root_hubs[bus]->devnode))
            g_printerr("accessory-sim: warning: cannot reach umockdev's ioctl thread\n");
    }
}

Instance *device_plug(const Spec *spec, const char *port, gboolean silent, char **error)
{
    return plug(spec, port, silent, NULL, error);
}

/* aoa_strings (six, may be NULL): taken over by the new instance (and set to
 * NULL) before it becomes visible. */
static Instance *plug(const Spec *spec, const char *port, gboolean silent, char **aoa_strings, char **error)
{
    char *chosen = NULL;
    int addr;

    g_rec_mutex_lock(&sim.lock);
    if (!topology_claim(port, &chosen, &addr, error)) {
        g_rec_mutex_unlock(&sim.lock);
        return NULL;
    }
    /* Listed before the "add" uevent, so that a client reacting to the event
     * can already find it with "ctl list". */
    Instance *inst = instance_new(spec, chosen, addr, FALSE);
    g_free(chosen);
    for (int i = 0; aoa_strings && i < 6; i++) {
        inst->aoa_strings[i] = aoa_strings[i];
        aoa_strings[i] = NULL;
    }
    topology_add(inst);
    g_rec_mutex_unlock(&sim.lock);
    attach(inst, silent);
    sim_log("plugged %04x:%04x at %d:%d port %s%s", spec->vid, spec->pid, inst->bus, inst->addr, inst->port,
            silent ? " (silent)" : "");
    return inst;
}

void device_unplug(Instance *inst, gboolean silent)
{
    if (inst->spec.kind == KIND_HUB) {
        /* as the kernel does it: every device behind it first, the deepest
         * first, each with its own remove uevent */
        GPtrArray *children = topology_behind(inst);
        /* its ports go with it: nothing waiting for their power comes back */
        g_rec_mutex_lock(&sim.lock);
        topology_drop_parked_behind(inst->port);
        g_rec_mutex_unlock(&sim.lock);
        if (!silent && sim.kernel_order_ms >= 0) {
            /* all of them leave sysfs at once; their uevents trail (see below) */
            g_ptr_array_add(children, inst);
            devices_unplug_urbs_first(children, (guint)sim.kernel_order_ms);
            g_ptr_array_unref(children);
            return;
        }
        /* the deepest first: a hub among them finds its children gone already
         * (each entry is unplugged once, and not touched after) */
        for (guint i = 0; i < children->len; i++)
            device_unplug(g_ptr_array_index(children, i), silent);
        g_ptr_array_unref(children);
    }
    if (!silent && sim.kernel_order_ms >= 0) {
        device_unplug_urbs_first(inst, (guint)sim.kernel_order_ms);
        return;
    }
    g_rec_mutex_lock(&sim.lock);
    if (!topology_remove(inst)) {
        g_rec_mutex_unlock(&sim.lock);
        return; /* already unplugged */
    }
    inst->gone = TRUE;
    usbfs_instance_gone(inst);
    g_rec_mutex_unlock(&sim.lock);

    materialize_detach(inst, silent);
    sim_log("unplugged %d:%d port %s%s", inst->bus, inst->addr, inst->port, silent ? " (silent)" : "");
    usbfs_instance_depart(inst); /* the main thread's last touch */
}

/* The kernel's order on a real unplug: the pending URBs fail first (OUT with
 * ESHUTDOWN, IN with EPROTO), then the device leaves sysfs's listing and its node
 * goes, and the remove uevent follows uevent_delay_ms later, as udevd relays it.
 * The device directory itself stays until then: the uevent is built from it. */
void device_unplug_urbs_first(Instance *inst, guint uevent_delay_ms)
{
    GPtrArray *one = g_ptr_array_new();
    g_ptr_array_add(one, inst);
    devices_unplug_urbs_first(one, uevent_delay_ms);
    g_ptr_array_unref(one);
}

/* Fails the URBs of inst and unlists it; FALSE if it was unplugged already. */
static gboolean vanish(Instance *inst)
{
    g_rec_mutex_lock(&sim.lock);
    if (!topology_remove(inst)) {
        g_rec_mutex_unlock(&sim.lock);
        return FALSE;
    }
    inst->gone = TRUE;
    inst->kernel_order = TRUE; /* an ioctl before the worker fails the URBs fails them so too */
    g_rec_mutex_unlock(&sim.lock);
    usbfs_instance_gone_kernel_order(inst);
    materialize_unlist(inst);
    return TRUE;
}

/* Several devices at once, as a hub's unplug or a port's power going takes them:
 * the kernel drops every one from sysfs in the order given, at once, and the
 * remove uevents trail one by one, each uevent_delay_ms after the last, as a
 * loaded udevd relays them. So the last one's event comes latest after its
 * device left: the unkind order for a host that waits for remove events. */
void devices_unplug_urbs_first(GPtrArray *gone, guint uevent_delay_ms)
{
    gboolean *vanished = g_new0(gboolean, gone->len);
    for (guint i = 0; i < gone->len; i++)
        vanished[i] = vanish(g_ptr_array_index(gone, i));
    for (guint i = 0; i < gone->len; i++) {
        if (!vanished[i])
            continue;
        Instance *inst = g_ptr_array_index(gone, i);
        if (uevent_delay_ms > 0)
            g_usleep((gulong)uevent_delay_ms * 1000);
        materialize_detach(inst, FALSE);
        sim_log("unplugged %d:%d port %s (URBs first, uevent after %u ms)", inst->bus, inst->addr, inst->port,
                uevent_delay_ms);
        usbfs_instance_depart(inst); /* the main thread's last touch */
    }
    g_free(vanished);
}

void device_remove_node(Instance *inst)
{
    materialize_remove_node(inst);
    sim_log("removed the node of %d:%d (sysfs still lists it)", inst->bus, inst->addr);
}

Instance *device_replug(Instance *inst, gboolean silent, char **error)
{
    Spec spec;
    char *port = g_strdup(inst->port);
    spec_copy(&spec, &inst->spec);
    device_unplug(inst, silent);
    Instance *fresh = device_plug(&spec, port, silent, error);
    spec_clear(&spec);
    g_free(port);
    return fresh;
}


void devices_shutdown(void)
{
    /* Everything departs (the testbed directory goes away with the testbed);
     * the nodes' listeners stay until the testbed is finalized. Instances
     * that clients still hold die with them, or stay in sim.instances. */
    GPtrArray *all = topology_take_all();
    for (int bus = 1; bus <= sim.nbuses; bus++)
        if (sim.root_hubs[bus])
            g_ptr_array_add(all, g_steal_pointer(&sim.root_hubs[bus]));
    for (guint i = 0; i < all->len; i++) {
        Instance *inst = g_ptr_array_index(all, i);
        g_rec_mutex_lock(&sim.lock);
        inst->gone = TRUE;
        usbfs_instance_gone(inst);
        g_rec_mutex_unlock(&sim.lock);
        usbfs_instance_depart(inst);
    }
    g_ptr_array_unref(all);
    if (sim.worker_ctx)
        worker_barrier(); /* the departures have run */
    tb_shutdown();
}
