/*
 * accessory-sim: a device in the testbed (sysfs and /dev).
 *
 * Every device is written into the testbed directory by hand, the way the
 * kernel lays it out (sysfs directory with attributes, binary `descriptors`,
 * `uevent`, `subsystem` and `driver` links, a child directory per interface,
 * /sys/bus/usb/devices links, /sys/dev/char link, the /dev node whose
 * contents are the descriptors like usbfs). The "add" uevents are sent only
 * after everything is in place, so a hotplug listener never sees a half
 * written device; a silent attach simply sends none. umockdev's own add
 * functions are not used because they send the "add" uevent before the
 * binary attributes and the /dev node exist.
 *
 * Removal sends "remove" for the interface and then the device (like the
 * kernel) before deleting the files, since the event is built from the
 * device's uevent file; a silent removal sends none.
 */
#define _GNU_SOURCE
#include "materialize.h"
#include "testbed.h"
#include "topology.h"
#include "uevent_guard.h"
#include "watch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Root ports per root hub. */
#define ROOT_PORTS 255

static int minor_of(const Instance *inst)
{
    return (inst->bus - 1) * 128 + inst->addr - 1;
}

static char *iface_syspath(const Instance *inst, unsigned int slot)
{
    return g_strdup_printf("%s/%s", inst->syspath, inst->ifnames[slot]);
}

/* The name of udev's record of the node in /dev/.node: bus_usb_BBB_DDD. */
static char *node_record_name(const Instance *inst)
{
    char *name = g_strdup(inst->devnode + strlen("/dev/"));
    g_strdelimit(name, "/", '_');
    return name;
}

/* An interface's modalias (its uevent's MODALIAS and its modalias attribute). */
static char *interface_modalias(const guint8 *d, const guint8 *intf)
{
    return g_strdup_printf("usb:v%04Xp%04Xd%04Xdc%02Xdsc%02Xdp%02Xic%02Xisc%02Xip%02Xin%02X", le16(d + 8),
                           le16(d + 10), le16(d + 12), d[4], d[5], d[6], intf[5], intf[6], intf[7], intf[2]);
}

static void write_interface_uevent(const Instance *inst, unsigned int slot, const char *ifdir)
{
    const guint8 *d = desc_bytes(inst);
    const guint8 *intf = interface_desc(inst, slot);
    char *modalias = interface_modalias(d, intf);
    GString *u = g_string_new(NULL);
    if (inst->kdriver[slot])
        g_string_append_printf(u, "DRIVER=%s\n", inst->kdriver[slot]);
    g_string_append_printf(u, "DEVTYPE=usb_interface\n");
    g_string_append_printf(u, "PRODUCT=%x/%x/%x\n", le16(d + 8), le16(d + 10), le16(d + 12));
    g_string_append_printf(u, "TYPE=%d/%d/%d\n", d[4], d[5], d[6]);
    g_string_append_printf(u, "INTERFACE=%d/%d/%d\n", intf[5], intf[6], intf[7]);
    g_string_append_printf(u, "MODALIAS=%s\n", modalias);
    char *path = g_build_filename(ifdir, "uevent", NULL);
    tb_write_file(path, u->str, u->len);
    g_free(path);
    g_string_free(u, TRUE);
    g_free(modalias);
}

static void write_driver_link(const char *ifpath, const char *ifdir, const char *driver)
{
    if (driver) {
        char *up = tb_up_to_sys(ifpath);
        tb_link(ifdir, "driver", "%sbus/usb/drivers/%s", up, driver);
        g_free(up);
    } else {
        char *link = g_build_filename(ifdir, "driver", NULL);
        tb_raw_unlink(link, 0);
        g_free(link);
    }
}

void materialize_driver_link(Instance *inst, int slot, const char *driver)
{
    char *ifpath = iface_syspath(inst, (unsigned int)slot);
    char *ifdir = tb_path(ifpath);
    write_driver_link(ifpath, ifdir, driver);
    write_interface_uevent(inst, (unsigned int)slot, ifdir);
    g_free(ifdir);
    g_free(ifpath);
}

/* The device's own attributes, its binary descriptors and its links, in dir. */
static void write_device_attributes(const Instance *inst, const char *dir)
{
    const guint8 *d = desc_bytes(inst);
    const guint8 *cfg = d + 18;
    int minor = minor_of(inst);
    char *up = tb_up_to_sys(inst->syspath);

    tb_attr(dir, "uevent",
         "MAJOR=189\nMINOR=%d\nDEVNAME=bus/usb/%03d/%03d\nDEVTYPE=usb_device\nDRIVER=usb\n"
         "PRODUCT=%x/%x/%x\nTYPE=%d/%d/%d\nBUSNUM=%03d\nDEVNUM=%03d\n",
         minor, inst->bus, inst->addr, le16(d + 8), le16(d + 10), le16(d + 12),
         d[4], d[5], d[6], inst->bus, inst->addr);
    tb_attr(dir, "dev", "189:%d\n", minor);
    tb_attr(dir, "busnum", "%d\n", inst->bus);
    tb_attr(dir, "devnum", "%d\n", inst->addr);
    if (inst->root_hub) {
        tb_attr(dir, "devpath", "0\n");
        tb_attr(dir, "maxchild", "%d\n", ROOT_PORTS);
        tb_attr(dir, "removable", "unknown\n");
    } else {
        tb_attr(dir, "devpath", "%s\n", strchr(inst->port, '-') + 1);
        tb_attr(dir, "maxchild", "%d\n", inst->spec.kind == KIND_HUB ? inst->spec.hub_ports : 0);
        tb_attr(dir, "removable", "removable\n");
    }
    tb_attr(dir, "idVendor", "%04x\n", le16(d + 8));
    tb_attr(dir, "idProduct", "%04x\n", le16(d + 10));
    tb_attr(dir, "bcdDevice", "%04x\n", le16(d + 12));
    tb_attr(dir, "bDeviceClass", "%02x\n", d[4]);
    tb_attr(dir, "bDeviceSubClass", "%02x\n", d[5]);
    tb_attr(dir, "bDeviceProtocol", "%02x\n", d[6]);
    tb_attr(dir, "bMaxPacketSize0", "%d\n", d[7]);
    tb_attr(dir, "bNumConfigurations", "%d\n", d[17]);
    tb_attr(dir, "bConfigurationValue", "%d\n", cfg[5]);
    tb_attr(dir, "bNumInterfaces", "%2d\n", cfg[4]);
    tb_attr(dir, "bmAttributes", "%02x\n", cfg[7]);
    tb_attr(dir, "bMaxPower", "%dmA\n", cfg[8] * 2);
    tb_attr(dir, "configuration", "\n");
    tb_attr(dir, "version", "%2x.%02x\n", d[3], d[2]);
    tb_attr(dir, "speed", "%s\n", inst->spec.superspeed ? "5000" : "480");
    tb_attr(dir, "authorized", "1\n");
    tb_attr(dir, "rx_lanes", "1\n");
    tb_attr(dir, "tx_lanes", "1\n");
    if (d[14] && inst->strings[d[14]])
        tb_attr(dir, "manufacturer", "%s\n", inst->strings[d[14]]);
    if (d[15] && inst->strings[d[15]])
        tb_attr(dir, "product", "%s\n", inst->strings[d[15]]);
    if (d[16] && inst->strings[d[16]])
        tb_attr(dir, "serial", "%s\n", inst->strings[d[16]]);
    char *path = g_build_filename(dir, "descriptors", NULL);
    tb_write_file(path, d, g_bytes_get_size(inst->descriptors));
    g_free(path);
    tb_link(dir, "subsystem", "%sbus/usb", up);
    tb_link(dir, "driver", "%sbus/usb/drivers/usb", up);
    g_free(up);
}

/* One interface's directory below the device's directory dir. */
static void write_interface(const Instance *inst, unsigned int slot, const char *dir)
{
    const guint8 *d = desc_bytes(inst);
    const guint8 *intf = interface_desc(inst, slot);
    char *ifpath = iface_syspath(inst, slot);
    char *ifdir = g_build_filename(dir, inst->ifnames[slot], NULL);
    char *ifup = tb_up_to_sys(ifpath);
    char *modalias = interface_modalias(d, intf);
    tb_mkdir_p(ifdir);
    write_interface_uevent(inst, slot, ifdir);
    tb_attr(ifdir, "bInterfaceNumber", "%02x\n", intf[2]);
    tb_attr(ifdir, "bAlternateSetting", "%2d\n", intf[3]);
    tb_attr(ifdir, "bNumEndpoints", "%02x\n", intf[4]);
    tb_attr(ifdir, "bInterfaceClass", "%02x\n", intf[5]);
    tb_attr(ifdir, "bInterfaceSubClass", "%02x\n", intf[6]);
    tb_attr(ifdir, "bInterfaceProtocol", "%02x\n", intf[7]);
    if (intf[8] && inst->strings[intf[8]])
        tb_attr(ifdir, "interface", "%s\n", inst->strings[intf[8]]);
    tb_attr(ifdir, "modalias", "%s\n", modalias);
    tb_link(ifdir, "subsystem", "%sbus/usb", ifup);
    if (inst->kdriver[slot])
        write_driver_link(ifpath, ifdir, inst->kdriver[slot]);
    g_free(modalias);
    g_free(ifup);
    g_free(ifdir);
    g_free(ifpath);
}

/* A hub's port directories in its interface's directory (below dir): each
 * with a writable `disable` (Linux 6.0: 1 powers the port off) and its
 * connect_type. */
static void write_hub_ports(const Instance *inst, const char *dir)
{
    guint n = topology_hub_ports(inst);
    for (guint i = 1; i <= n; i++) {
        char *name = topology_port_dir_name(inst, i);
        char *pdir = g_build_filename(dir, inst->ifnames[0], name, NULL);
        tb_mkdir_p(pdir);
        if (!inst->spec.no_disable)
            tb_attr(pdir, "disable", "%d\n", i <= 31 && (inst->ports_off & (1u << i)) ? 1 : 0);
        tb_attr(pdir, "connect_type", "hotplug\n");
        g_free(pdir);
        g_free(name);
    }
}

/* Watches the hub's port directories and the device's own (for `disable` and
 * `authorized`), once in place. */
static void watch_device(const Instance *inst, const char *final_dir)
{
    if (!inst->root_hub)
        watch_dir(final_dir);
    if (!is_hub(inst) || inst->nifaces == 0)
        return;
    guint n = topology_hub_ports(inst);
    for (guint i = 1; i <= n; i++) {
        char *name = topology_port_dir_name(inst, i);
        char *pdir = g_build_filename(final_dir, inst->ifnames[0], name, NULL);
        watch_dir(pdir);
        g_free(pdir);
        g_free(name);
    }
}

char *materialize_port_dir(const Instance *hub, guint n)
{
    char *name = topology_port_dir_name(hub, n);
    char *rel = g_strdup_printf("%s/%s/%s", hub->syspath, hub->ifnames[0], name);
    char *dir = tb_path(rel);
    g_free(rel);
    g_free(name);
    return dir;
}

void materialize_port_disable(const Instance *hub, guint n, gboolean off)
{
    char *dir = materialize_port_dir(hub, n);
    if (!hub->spec.no_disable && watch_read_flag(dir, "disable") != (off ? 1 : 0))
        tb_attr(dir, "disable", "%d\n", off ? 1 : 0);
    g_free(dir);
}

void materialize_peer_links(const Instance *a, const Instance *b)
{
    guint n = MIN(topology_hub_ports(a), topology_hub_ports(b));
    for (int side = 0; side < 2; side++) {
        const Instance *from = side ? b : a, *to = side ? a : b;
        for (guint i = 1; i <= n; i++) {
            char *name = topology_port_dir_name(from, i);
            char *to_name = topology_port_dir_name(to, i);
            char *from_sys = g_strdup_printf("%s/%s/%s", from->syspath, from->ifnames[0], name);
            char *up = tb_up_to_sys(from_sys);
            char *dir = tb_path(from_sys);
            /* relative, as the kernel's: ../../../../usb2/2-1/2-1:1.0/2-1-port2 */
            tb_link(dir, "peer", "%s%s/%s/%s", up, to->syspath + strlen("/sys/"), to->ifnames[0], to_name);
            g_free(dir);
            g_free(up);
            g_free(from_sys);
            g_free(to_name);
            g_free(name);
        }
    }
}

/* The /dev node (usbfs shows the descriptors) and its major:minor for the
 * preload's stat() emulation. */
static void write_node(const Instance *inst)
{
    char *node = tb_path(inst->devnode);
    char *nodedir = g_path_get_dirname(node);
    tb_mkdir_p(nodedir);
    tb_write_file(node, desc_bytes(inst), g_bytes_get_size(inst->descriptors));
    char *recorddir = tb_path("/dev/.node");
    char *record = node_record_name(inst);
    tb_mkdir_p(recorddir);
    tb_link(recorddir, record, "189:%d", minor_of(inst));
    g_free(record);
    g_free(recorddir);
    g_free(nodedir);
    g_free(node);
}

/* The links that make a device in place enumerable: /sys/dev/char, then
 * /sys/bus/usb/devices for the device and its interfaces. */
static void list_device(const Instance *inst)
{
    char *chardir = tb_path("/sys/dev/char");
    char *devno = g_strdup_printf("189:%d", minor_of(inst));
    tb_mkdir_p(chardir);
    tb_link(chardir, devno, "../..%s", inst->syspath + strlen("/sys"));
    g_free(devno);
    g_free(chardir);

    char *busdir = tb_path("/sys/bus/usb/devices");
    tb_mkdir_p(busdir);
    tb_link(busdir, inst->port, "../../..%s", inst->syspath + strlen("/sys"));
    for (unsigned int slot = 0; slot < inst->nifaces; slot++) {
        char *ifpath = iface_syspath(inst, slot);
        tb_link(busdir, inst->ifnames[slot], "../../..%s", ifpath + strlen("/sys"));
        g_free(ifpath);
    }
    g_free(busdir);
}

/* Writes the device into the testbed. The sysfs directory is built aside and
 * renamed into place, so a scan never sees half a device; the /dev node is
 * there before the device becomes visible, and the /sys/bus/usb/devices
 * links, which make it enumerable, come last. */
static void write_device(Instance *inst)
{
    char *dir = g_strdup_printf("%s/.staging/%s", sim.root, inst->port);
    char *final_dir = tb_path(inst->syspath);

    tb_remove_tree(dir);
    tb_mkdir_p(dir);
    write_device_attributes(inst, dir);
    for (unsigned int slot = 0; slot < inst->nifaces; slot++)
        write_interface(inst, slot, dir);
    if (is_hub(inst) && inst->nifaces > 0)
        write_hub_ports(inst, dir);
    write_node(inst);

    /* into place */
    char *parent = g_path_get_dirname(final_dir);
    tb_mkdir_p(parent);
    g_free(parent);
    if (rename(dir, final_dir) < 0)
        g_printerr("accessory-sim: cannot move %s into place: %s\n", dir, g_strerror(errno));
    watch_device(inst, final_dir);
    list_device(inst);

    g_free(final_dir);
    g_free(dir);
}

/* Removes the /dev node (and udev's record of it) only. */
void materialize_remove_node(Instance *inst)
{
    tb_unlink(inst->devnode);
    char *record = node_record_name(inst);
    char *rel = g_strdup_printf("/dev/.node/%s", record);
    tb_unlink(rel);
    g_free(rel);
    g_free(record);
}

static void unlink_bus_link(const char *name)
{
    char *rel = g_strdup_printf("/sys/bus/usb/devices/%s", name);
    tb_unlink(rel);
    g_free(rel);
}

/* Out of /sys/bus/usb/devices: the interfaces' links, then the device's. */
static void unlink_bus_links(Instance *inst)
{
    for (unsigned int slot = 0; slot < inst->nifaces; slot++)
        unlink_bus_link(inst->ifnames[slot]);
    unlink_bus_link(inst->port);
}

void materialize_unlist(Instance *inst)
{
    unlink_bus_links(inst);
    materialize_remove_node(inst);
}

/* Takes the device out of the testbed: what umockdev_testbed_remove_device()
 * does, in the reverse order of write_device(). */
void materialize_detach(Instance *inst, gboolean silent)
{
    char *rel;

    if (!silent) {
        /* as the kernel: the interfaces' remove events (last first), then the device's */
        for (unsigned int slot = inst->nifaces; slot-- > 0;) {
            char *ifpath = iface_syspath(inst, slot);
            sim_uevent(ifpath, "remove");
            g_free(ifpath);
        }
        sim_uevent(inst->syspath, "remove");
    }
    unlink_bus_links(inst);
    char *dir = tb_path(inst->syspath);
    tb_trash_tree(dir);
    g_free(dir);
    rel = g_strdup_printf("/sys/dev/char/189:%d", minor_of(inst));
    tb_unlink(rel);
    g_free(rel);
    materialize_remove_node(inst);
}

void materialize_ioctl_listen(const char *devnode, UMockdevIoctlBase *handler)
{
    GError *err = NULL;
    char *sock = g_strdup_printf("%s/ioctl%s", sim.root, devnode);

    tb_raw_unlink(sock, 0); /* a stale socket would make the listener fail */
    g_free(sock);
    if (!umockdev_testbed_attach_ioctl(sim.testbed, devnode, handler, &err)) {
        g_printerr("accessory-sim: attaching %s: %s\n", devnode, err ? err->message : "failed");
        g_clear_error(&err);
    }
}

void materialize_attach(Instance *inst, gboolean silent)
{
    write_device(inst);
    if (!silent) {
        sim_uevent(inst->syspath, "add");
        for (unsigned int slot = 0; slot < inst->nifaces; slot++) {
            char *ifpath = iface_syspath(inst, slot);
            sim_uevent(ifpath, "add");
            g_free(ifpath);
        }
    }
}

/* A minimal PCI device for the root hub to hang off, so that tools that
 * look at the root hub's parent (lsusb -t) find a driver. No uevents. */
void materialize_host_controller(int bus)
{
    char *hcd = topology_hcd_syspath(bus);
    char *name = topology_hcd_name(bus);
    char *dir = tb_path(hcd);
    char *up = tb_up_to_sys(hcd);

    tb_mkdir_p(dir);
    tb_attr(dir, "uevent",
         "DRIVER=xhci_hcd\nPCI_CLASS=C0330\nPCI_ID=8086:A36D\nPCI_SUBSYS_ID=8086:7270\n"
         "PCI_SLOT_NAME=%s\nMODALIAS=pci:v00008086d0000A36Dsv00008086sd00007270bc0Csc03i30\n", name);
    tb_attr(dir, "vendor", "0x8086\n");
    tb_attr(dir, "device", "0xa36d\n");
    tb_attr(dir, "class", "0x0c0330\n");
    tb_link(dir, "subsystem", "%sbus/pci", up);
    tb_link(dir, "driver", "%sbus/pci/drivers/xhci_hcd", up);
    char *busdir = tb_path("/sys/bus/pci/devices");
    tb_mkdir_p(busdir);
    tb_link(busdir, name, "../../..%s", hcd + strlen("/sys"));
    g_free(busdir);
    g_free(up);
    g_free(dir);
    g_free(name);
    g_free(hcd);
}

