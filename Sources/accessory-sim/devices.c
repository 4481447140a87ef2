/*
 * accessory-sim: devices in the testbed.
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
#include "sim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DEFAULT_PROTOCOL "org.example.loopback"
/* A plugged hub: Genesys Logic GL850G, a common USB 2.0 hub. */
#define HUB_VID 0x05e3
#define HUB_PID 0x0608
/* Root ports per root hub. */
#define ROOT_PORTS 255

/* The PCI function of bus B's host controller (xHCI on PCI, as on a PC, one
 * root hub each): bus 1 is 0000:00:1d.0, bus B > 1 is 0000:00:0B.0 (0x02...). */
static char *hcd_name(int bus)
{
    return bus == 1 ? g_strdup("0000:00:1d.0") : g_strdup_printf("0000:00:%02x.0", bus);
}

static char *hcd_syspath(int bus)
{
    char *name = hcd_name(bus);
    char *path = g_strdup_printf("/sys/devices/pci0000:00/%s", name);
    g_free(name);
    return path;
}

/* "3-1.4" -> 3; "usb2" -> 2 */
static int bus_of(const char *port)
{
    return g_str_has_prefix(port, "usb") ? atoi(port + 3) : atoi(port);
}

/* The port's parent: "1-1.4" -> "1-1", "1-1" -> "usb1". */
static char *parent_port(const char *port)
{
    const char *dot = strrchr(port, '.');
    if (dot)
        return g_strndup(port, (gsize)(dot - port));
    return g_strdup_printf("usb%d", bus_of(port));
}

/* The last port number of a port chain: "1-1.4" -> 4, "1-3" -> 3. */
static int last_port(const char *port)
{
    const char *dot = strrchr(port, '.');
    const char *dash = strchr(port, '-');
    return atoi(dot ? dot + 1 : dash ? dash + 1 : port);
}

/* ---- specs ---------------------------------------------------------------- */

static gboolean parse_hex16(const char *s, guint16 *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 4)
        return FALSE;
    for (size_t i = 0; i < n; i++)
        if (!g_ascii_isxdigit(s[i]))
            return FALSE;
    *out = (guint16)strtoul(s, NULL, 16);
    return TRUE;
}

static gboolean valid_usb_string(const char *s)
{
    if (!g_utf8_validate(s, -1, NULL))
        return FALSE;
    if (g_utf8_strlen(s, -1) > 126)
        return FALSE;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x21 || *p == 0x7f)
            return FALSE; /* no blanks or control characters */
    return TRUE;
}

gboolean spec_parse(const char *text, Spec *out, char **error)
{
    /* Options after the first comma: ",interface=N", ",interrupt", ",android". */
    const char *comma = strchr(text, ',');
    gchar *head = comma ? g_strndup(text, (gsize)(comma - text)) : g_strdup(text);
    gchar **options = comma ? g_strsplit(comma + 1, ",", -1) : g_new0(gchar *, 1);
    gchar **parts = g_strsplit(head, ":", 4);
    g_free(head);
    guint n = g_strv_length(parts);
    gboolean ok = FALSE;

    memset(out, 0, sizeof(*out));
    if (comma && comma[1] == '\0') {
        *error = g_strdup_printf("usage: empty option in '%s' (nothing after the comma)", text);
        goto out;
    }
    if (n < 2 || !parse_hex16(parts[0], &out->vid) || !parse_hex16(parts[1], &out->pid)) {
        *error = g_strdup_printf("usage: bad accessory spec '%s' (VID:PID[:SERIAL[:PROTOCOL]], hex VID and PID)", text);
        goto out;
    }
    if (n >= 3 && parts[2][0] != '\0') {
        if (!valid_usb_string(parts[2])) {
            *error = g_strdup_printf("usage: bad serial '%s' (at most 126 characters, no blanks)", parts[2]);
            goto out;
        }
        out->serial = g_strdup(parts[2]);
    }
    for (gchar **o = options; *o; o++) {
        if (strcmp(*o, "android") == 0)
            out->kind = KIND_PHONE;
        else if (strcmp(*o, "interrupt") == 0)
            out->interrupt = TRUE;
    }
    if (out->kind == KIND_PHONE && out->interrupt) {
        *error = g_strdup_printf("usage: '%s' is both android and interrupt; pick one", text);
        goto out;
    }
    if (n >= 4 && parts[3][0] != '\0') {
        if (!valid_usb_string(parts[3])) {
            *error = g_strdup_printf("usage: bad protocol '%s' (at most 126 characters, no blanks)", parts[3]);
            goto out;
        }
        out->protocol = g_strdup(parts[3]);
    } else {
        /* empty: the kind's default (a phone's interface says "MTP") */
        out->protocol = g_strdup(out->kind == KIND_PHONE ? "MTP" : DEFAULT_PROTOCOL);
    }
    for (gchar **o = options; *o; o++) {
        if (g_str_has_prefix(*o, "interface=")) {
            const char *num = *o + strlen("interface=");
            char *end = NULL;
            guint64 v = g_ascii_strtoull(num, &end, 10);
            if (!*num || !end || *end || v > 255) {
                *error = g_strdup_printf("usage: bad option '%s' in '%s' (interface=N, N 0-255)", *o, text);
                goto out;
            }
            if (out->kind == KIND_PHONE) {
                *error = g_strdup_printf("usage: '%s': interface=N is for a loopback; an android phone's interfaces are fixed", text);
                goto out;
            }
            out->interface = (guint8)v;
        } else if (strcmp(*o, "android") == 0 || strcmp(*o, "interrupt") == 0) {
            /* taken above */
        } else {
            *error = g_strdup_printf("usage: unknown option '%s' in '%s' (this accessory-sim knows interface=N, interrupt, android)", *o, text);
            goto out;
        }
    }
    ok = TRUE;
out:
    if (!ok)
        spec_clear(out);
    g_strfreev(parts);
    g_strfreev(options);
    return ok;
}

void spec_clear(Spec *spec)
{
    g_clear_pointer(&spec->serial, g_free);
    g_clear_pointer(&spec->protocol, g_free);
}

void spec_copy(Spec *dst, const Spec *src)
{
    dst->vid = src->vid;
    dst->pid = src->pid;
    dst->serial = g_strdup(src->serial);
    dst->protocol = g_strdup(src->protocol);
    dst->interface = src->interface;
    dst->interrupt = src->interrupt;
    dst->kind = src->kind;
    dst->hub_ports = src->hub_ports;
}

/* ---- descriptors ---------------------------------------------------------- */

static GBytes *hub_descriptors(const Spec *s)
{
    const guint8 d[] = {
        /* device: a USB 2.0 hub, single TT */
        18, 0x01, 0x00, 0x02, 0x09, 0x00, 0x01, 64,
        (guint8)(s->vid & 0xff), (guint8)(s->vid >> 8), (guint8)(s->pid & 0xff), (guint8)(s->pid >> 8),
        0x32, 0x88, 1, 2, 0, 1,
        /* configuration: self powered, remote wakeup */
        9, 0x02, 25, 0, 1, 1, 0, 0xe0, 50,
        /* interface 0: hub */
        9, 0x04, 0, 0, 1, 0x09, 0x00, 0x00, 0,
        /* interrupt IN 0x81, 1 byte, bInterval 12 */
        7, 0x05, 0x81, 0x03, 0x01, 0x00, 12,
    };
    return g_bytes_new(d, sizeof(d));
}

static GBytes *accessory_descriptors(const Spec *s)
{
    if (s->kind == KIND_HUB)
        return hub_descriptors(s);
    if (s->kind != KIND_LOOPBACK)
        return android_descriptors(s);
    /* ",interrupt": interrupt endpoints of 64 bytes, polled every microframe */
    const guint8 type = s->interrupt ? 0x03 : 0x02;
    const guint8 lo = s->interrupt ? 64 : 0x00, hi = s->interrupt ? 0 : 0x02, interval = s->interrupt ? 1 : 0;
    const guint8 d[] = {
        /* device */
        18, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 64,
        (guint8)(s->vid & 0xff), (guint8)(s->vid >> 8),
        (guint8)(s->pid & 0xff), (guint8)(s->pid >> 8),
        0x00, 0x01, /* bcdDevice 1.00 */
        1, 2, (guint8)(s->serial ? 3 : 0), 1,
        /* configuration 1: bus powered, 100 mA */
        9, 0x02, 32, 0, 1, 1, 0, 0x80, 50,
        /* the interface (bInterfaceNumber from the spec, default 0): vendor specific,
         * iInterface 4 = PROTOCOL */
        9, 0x04, s->interface, 0, 2, 0xff, 0x00, 0x00, 4,
        /* bulk OUT 0x01, 512 bytes */
        7, 0x05, 0x01, type, lo, hi, interval,
        /* bulk IN 0x81, 512 bytes */
        7, 0x05, 0x81, type, lo, hi, interval,
    };
    return g_bytes_new(d, sizeof(d));
}

static GBytes *root_hub_descriptors(void)
{
    const guint8 d[] = {
        /* device: Linux Foundation 2.0 root hub */
        18, 0x01, 0x00, 0x02, 0x09, 0x00, 0x01, 64,
        0x6b, 0x1d, 0x02, 0x00, 0x00, 0x06, 3, 2, 1, 1,
        /* configuration: self powered, remote wakeup */
        9, 0x02, 25, 0, 1, 1, 0, 0xe0, 0,
        /* interface 0: hub */
        9, 0x04, 0, 0, 1, 0x09, 0x00, 0x00, 0,
        /* interrupt IN 0x81, 4 bytes, bInterval 12 */
        7, 0x05, 0x81, 0x03, 0x04, 0x00, 12,
    };
    return g_bytes_new(d, sizeof(d));
}

static unsigned le16(const guint8 *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static const guint8 *desc_bytes(const Instance *inst)
{
    return g_bytes_get_data(inst->descriptors, NULL);
}

/* The interface descriptor (alternate setting 0) of a slot. */
static const guint8 *interface_desc(const Instance *inst, unsigned int slot)
{
    gsize len = g_bytes_get_size(inst->descriptors);
    const guint8 *d = desc_bytes(inst);
    unsigned int seen = 0;
    for (gsize off = 18; off + 2 <= len && d[off] >= 2; off += d[off]) {
        if (d[off + 1] == 0x04 && off + 9 <= len && d[off + 3] == 0) {
            if (seen == slot)
                return d + off;
            seen++;
        }
    }
    return NULL;
}

EndpointInfo endpoint_info(const Instance *inst, guint8 ep)
{
    EndpointInfo info = {0};
    gsize len = g_bytes_get_size(inst->descriptors);
    const guint8 *d = desc_bytes(inst);
    int slot = -1;
    for (gsize off = 18; off + 2 <= len && d[off] >= 2; off += d[off]) {
        if (d[off + 1] == 0x04 && off + 9 <= len && d[off + 3] == 0)
            slot++; /* alternate settings (none today) stay in their interface's slot */
        else if (d[off + 1] == 0x05 && off + 7 <= len && d[off + 2] == ep && slot >= 0) {
            info.exists = TRUE;
            info.slot = (unsigned int)slot;
            info.interrupt = (d[off + 3] & 0x03) == 0x03;
            break;
        }
    }
    /* The loopback pair and a phone's app (accessory mode, interface 0) echo. */
    info.echoes = info.exists && !is_hub(inst) && (ep == 0x01 || ep == 0x81) && inst->spec.kind != KIND_PHONE;
    return info;
}

/* ---- instances ------------------------------------------------------------ */

Instance *instance_ref(Instance *inst)
{
    g_atomic_int_inc(&inst->refcount);
    return inst;
}

void instance_unref(Instance *inst)
{
    if (!g_atomic_int_dec_and_test(&inst->refcount))
        return;
    spec_clear(&inst->spec);
    g_free(inst->port);
    g_free(inst->syspath);
    for (int i = 0; i < SIM_NIFACES; i++)
        g_free(inst->ifnames[i]);
    for (int i = 0; i < 6; i++)
        g_free(inst->aoa_strings[i]);
    g_free(inst->devnode);
    g_bytes_unref(inst->descriptors);
    for (guint i = 0; i < G_N_ELEMENTS(inst->strings); i++)
        g_free(inst->strings[i]);
    for (int i = 0; i < SIM_NIFACES; i++) {
        g_free(inst->kdriver[i]);
        g_free(inst->kdriver_last[i]);
    }
    /* URB queues are emptied when the instance goes away (usbfs.c); the
     * FIFO may still hold data. */
    usbfs_fifo_clear(inst);
    g_free(inst);
}

static Instance *instance_new(const Spec *spec, const char *port, int addr, gboolean root_hub)
{
    Instance *inst = g_new0(Instance, 1);
    inst->refcount = 1;
    inst->root_hub = root_hub;
    spec_copy(&inst->spec, spec);
    inst->port = g_strdup(port);
    inst->bus = bus_of(port);
    inst->addr = addr;
    if (root_hub) {
        char *hcd = hcd_syspath(inst->bus);
        inst->syspath = g_strdup_printf("%s/usb%d", hcd, inst->bus);
        g_free(hcd);
        inst->nifaces = 1;
        inst->ifnums[0] = 0;
        inst->ifnames[0] = g_strdup_printf("%d-0:1.0", inst->bus);
        inst->descriptors = root_hub_descriptors();
        inst->strings[1] = g_strdup("accessory-sim");
        inst->strings[2] = g_strdup("xHCI Host Controller");
        inst->strings[3] = g_strdup("Linux accessory-sim xhci-hcd");
        inst->kdriver[0] = g_strdup("hub");
        inst->kdriver_last[0] = g_strdup("hub");
    } else {
        /* under its parent's directory, as the kernel nests them */
        char *parent = parent_port(port);
        Instance *up = NULL;
        if (g_str_has_prefix(parent, "usb")) {
            up = sim.root_hubs[inst->bus];
        } else {
            for (guint i = 0; i < sim.accessories->len && !up; i++) {
                Instance *a = g_ptr_array_index(sim.accessories, i);
                if (strcmp(a->port, parent) == 0)
                    up = a;
            }
        }
        inst->syspath = g_strdup_printf("%s/%s", up ? up->syspath : "/sys/devices/unknown", port);
        g_free(parent);
        inst->descriptors = accessory_descriptors(spec);
        if (spec->kind == KIND_HUB) {
            inst->strings[1] = g_strdup("GenesysLogic");
            inst->strings[2] = g_strdup("USB2.0 Hub");
            inst->kdriver[0] = g_strdup("hub");
            inst->kdriver_last[0] = g_strdup("hub");
        } else if (spec->kind == KIND_LOOPBACK) {
            inst->strings[1] = g_strdup("Example");
            inst->strings[2] = g_strdup("Loopback Accessory");
            inst->strings[3] = g_strdup(spec->serial);
            inst->strings[4] = g_strdup(spec->protocol);
        } else {
            android_strings(spec, inst->strings);
        }
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
    return inst;
}

/* ---- files in the testbed ------------------------------------------------- */

static char *tb_path(const char *rel)
{
    return g_build_filename(sim.root, rel, NULL);
}

/* The simulator itself runs under libumockdev-preload, whose wrappers make
 * every libc file call check the testbed first; plain system calls keep a
 * plug or unplug (about a hundred file operations) well under a
 * millisecond's worth of wrapper overhead. */
static int raw_open(const char *path, int flags, int mode)
{
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static int raw_mkdir(const char *path, int mode)
{
    return (int)syscall(SYS_mkdirat, AT_FDCWD, path, mode);
}

static int raw_unlink(const char *path, int flags)
{
    return (int)syscall(SYS_unlinkat, AT_FDCWD, path, flags);
}

static void mkdir_p(const char *path)
{
    if (raw_mkdir(path, 0755) == 0 || errno == EEXIST)
        return;
    if (errno == ENOENT) {
        char *parent = g_path_get_dirname(path);
        if (strcmp(parent, path) != 0)
            mkdir_p(parent);
        g_free(parent);
        if (raw_mkdir(path, 0755) == 0 || errno == EEXIST)
            return;
    }
    g_printerr("accessory-sim: cannot create %s: %s\n", path, g_strerror(errno));
}

/* rm -r without following symlinks */
static void remove_tree(const char *path)
{
    int fd = raw_open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0) {
        if (raw_unlink(path, 0) < 0 && errno != ENOENT)
            g_printerr("accessory-sim: cannot remove %s: %s\n", path, g_strerror(errno));
        return;
    }
    char buf[8192];
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct dirent64 *de = (struct dirent64 *)(buf + off);
            off += de->d_reclen;
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            g_ptr_array_add(names, g_build_filename(path, de->d_name, NULL));
        }
    }
    syscall(SYS_close, fd);
    for (guint i = 0; i < names->len; i++)
        remove_tree(g_ptr_array_index(names, i));
    g_ptr_array_unref(names);
    if (raw_unlink(path, AT_REMOVEDIR) < 0 && errno != ENOENT)
        g_printerr("accessory-sim: cannot remove %s: %s\n", path, g_strerror(errno));
}

static void write_file(const char *path, const void *data, gsize len)
{
    int fd = raw_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        g_printerr("accessory-sim: cannot write %s: %s\n", path, g_strerror(errno));
        return;
    }
    const char *p = data;
    while (len > 0) {
        long n = syscall(SYS_write, fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            g_printerr("accessory-sim: cannot write %s: %s\n", path, g_strerror(errno));
            break;
        }
        p += n;
        len -= (gsize)n;
    }
    syscall(SYS_close, fd);
}

static void attr(const char *dir, const char *name, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void attr(const char *dir, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *value = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    char *path = g_build_filename(dir, name, NULL);
    write_file(path, value, strlen(value));
    g_free(path);
    g_free(value);
}

static void make_link(const char *target, const char *path)
{
    if (raw_unlink(path, 0) < 0 && errno != ENOENT)
        g_printerr("accessory-sim: cannot remove %s: %s\n", path, g_strerror(errno));
    if (syscall(SYS_symlinkat, target, AT_FDCWD, path) < 0)
        g_printerr("accessory-sim: cannot link %s: %s\n", path, g_strerror(errno));
}

/* "../" repeated once per path component below /sys of a /sys/... path. */
static char *up_to_sys(const char *syspath)
{
    GString *s = g_string_new(NULL);
    for (const char *p = syspath + strlen("/sys"); *p; p++)
        if (*p == '/')
            g_string_append(s, "../");
    return g_string_free(s, FALSE);
}

static int minor_of(const Instance *inst)
{
    return (inst->bus - 1) * 128 + inst->addr - 1;
}

static char *iface_syspath(const Instance *inst, unsigned int slot)
{
    return g_strdup_printf("%s/%s", inst->syspath, inst->ifnames[slot]);
}

static void write_interface_uevent(const Instance *inst, unsigned int slot, const char *ifdir)
{
    const guint8 *d = desc_bytes(inst);
    const guint8 *intf = interface_desc(inst, slot);
    GString *u = g_string_new(NULL);
    if (inst->kdriver[slot])
        g_string_append_printf(u, "DRIVER=%s\n", inst->kdriver[slot]);
    g_string_append_printf(u, "DEVTYPE=usb_interface\n");
    g_string_append_printf(u, "PRODUCT=%x/%x/%x\n", le16(d + 8), le16(d + 10), le16(d + 12));
    g_string_append_printf(u, "TYPE=%d/%d/%d\n", d[4], d[5], d[6]);
    g_string_append_printf(u, "INTERFACE=%d/%d/%d\n", intf[5], intf[6], intf[7]);
    g_string_append_printf(u, "MODALIAS=usb:v%04Xp%04Xd%04Xdc%02Xdsc%02Xdp%02Xic%02Xisc%02Xip%02Xin%02X\n",
                           le16(d + 8), le16(d + 10), le16(d + 12), d[4], d[5], d[6],
                           intf[5], intf[6], intf[7], intf[2]);
    char *path = g_build_filename(ifdir, "uevent", NULL);
    write_file(path, u->str, u->len);
    g_free(path);
    g_string_free(u, TRUE);
}

static void write_driver_link(const char *ifpath, const char *ifdir, const char *driver)
{
    char *link = g_build_filename(ifdir, "driver", NULL);
    if (driver) {
        char *up = up_to_sys(ifpath);
        char *target = g_strdup_printf("%sbus/usb/drivers/%s", up, driver);
        make_link(target, link);
        g_free(target);
        g_free(up);
    } else {
        raw_unlink(link, 0);
    }
    g_free(link);
}

void device_set_driver_link(Instance *inst, int slot, const char *driver)
{
    char *ifpath = iface_syspath(inst, (unsigned int)slot);
    char *ifdir = tb_path(ifpath);
    write_driver_link(ifpath, ifdir, driver);
    write_interface_uevent(inst, (unsigned int)slot, ifdir);
    g_free(ifdir);
    g_free(ifpath);
}

/* ---- deferred deletion -------------------------------------------------- */

/* Removed device directories are renamed away (so they vanish at once) and
 * deleted by this thread, off the control path. */
static GThread *trash_thread;
static GAsyncQueue *trash_queue;
static guint trash_serial;
static char *const trash_stop = (char *)"";

static gpointer trash_main(gpointer data)
{
    (void)data;
    for (;;) {
        char *path = g_async_queue_pop(trash_queue);
        if (path == trash_stop)
            return NULL;
        remove_tree(path);
        g_free(path);
    }
}

static void trash_tree(const char *path)
{
    char *dest = g_strdup_printf("%s/.trash/%u", sim.root, ++trash_serial);
    if (rename(path, dest) == 0) {
        g_async_queue_push(trash_queue, dest);
    } else {
        g_free(dest);
        remove_tree(path);
    }
}

/* ---- attach / detach (main thread, sim.lock not held) ---------------------- */

/* Writes the device into the testbed. The sysfs directory is built aside and
 * renamed into place, so a scan never sees half a device; the
 * /sys/bus/usb/devices links, which make it enumerable, come last. */
static void materialize(Instance *inst)
{
    const guint8 *d = desc_bytes(inst);
    gsize dlen = g_bytes_get_size(inst->descriptors);
    const guint8 *cfg = d + 18;
    int minor = minor_of(inst);
    char *dir = g_strdup_printf("%s/.staging/%s", sim.root, inst->port);
    char *final_dir = tb_path(inst->syspath);
    char *up = up_to_sys(inst->syspath);
    char *target, *path;

    remove_tree(dir);
    mkdir_p(dir);
    attr(dir, "uevent",
         "MAJOR=189\nMINOR=%d\nDEVNAME=bus/usb/%03d/%03d\nDEVTYPE=usb_device\nDRIVER=usb\n"
         "PRODUCT=%x/%x/%x\nTYPE=%d/%d/%d\nBUSNUM=%03d\nDEVNUM=%03d\n",
         minor, inst->bus, inst->addr, le16(d + 8), le16(d + 10), le16(d + 12),
         d[4], d[5], d[6], inst->bus, inst->addr);
    attr(dir, "dev", "189:%d\n", minor);
    attr(dir, "busnum", "%d\n", inst->bus);
    attr(dir, "devnum", "%d\n", inst->addr);
    if (inst->root_hub) {
        attr(dir, "devpath", "0\n");
        attr(dir, "maxchild", "%d\n", ROOT_PORTS);
        attr(dir, "removable", "unknown\n");
    } else {
        attr(dir, "devpath", "%s\n", strchr(inst->port, '-') + 1);
        attr(dir, "maxchild", "%d\n", inst->spec.kind == KIND_HUB ? inst->spec.hub_ports : 0);
        attr(dir, "removable", "removable\n");
    }
    attr(dir, "idVendor", "%04x\n", le16(d + 8));
    attr(dir, "idProduct", "%04x\n", le16(d + 10));
    attr(dir, "bcdDevice", "%04x\n", le16(d + 12));
    attr(dir, "bDeviceClass", "%02x\n", d[4]);
    attr(dir, "bDeviceSubClass", "%02x\n", d[5]);
    attr(dir, "bDeviceProtocol", "%02x\n", d[6]);
    attr(dir, "bMaxPacketSize0", "%d\n", d[7]);
    attr(dir, "bNumConfigurations", "%d\n", d[17]);
    attr(dir, "bConfigurationValue", "%d\n", cfg[5]);
    attr(dir, "bNumInterfaces", "%2d\n", cfg[4]);
    attr(dir, "bmAttributes", "%02x\n", cfg[7]);
    attr(dir, "bMaxPower", "%dmA\n", cfg[8] * 2);
    attr(dir, "configuration", "\n");
    attr(dir, "version", "%2x.%02x\n", d[3], d[2]);
    attr(dir, "speed", "480\n");
    attr(dir, "authorized", "1\n");
    attr(dir, "rx_lanes", "1\n");
    attr(dir, "tx_lanes", "1\n");
    if (d[14] && inst->strings[d[14]])
        attr(dir, "manufacturer", "%s\n", inst->strings[d[14]]);
    if (d[15] && inst->strings[d[15]])
        attr(dir, "product", "%s\n", inst->strings[d[15]]);
    if (d[16] && inst->strings[d[16]])
        attr(dir, "serial", "%s\n", inst->strings[d[16]]);
    path = g_build_filename(dir, "descriptors", NULL);
    write_file(path, d, dlen);
    g_free(path);
    target = g_strdup_printf("%sbus/usb", up);
    path = g_build_filename(dir, "subsystem", NULL);
    make_link(target, path);
    g_free(path);
    g_free(target);
    target = g_strdup_printf("%sbus/usb/drivers/usb", up);
    path = g_build_filename(dir, "driver", NULL);
    make_link(target, path);
    g_free(path);
    g_free(target);

    /* the interfaces */
    for (unsigned int slot = 0; slot < inst->nifaces; slot++) {
        const guint8 *intf = interface_desc(inst, slot);
        char *ifpath = iface_syspath(inst, slot);
        char *ifdir = g_build_filename(dir, inst->ifnames[slot], NULL);
        char *ifup = up_to_sys(ifpath);
        mkdir_p(ifdir);
        write_interface_uevent(inst, slot, ifdir);
        attr(ifdir, "bInterfaceNumber", "%02x\n", intf[2]);
        attr(ifdir, "bAlternateSetting", "%2d\n", intf[3]);
        attr(ifdir, "bNumEndpoints", "%02x\n", intf[4]);
        attr(ifdir, "bInterfaceClass", "%02x\n", intf[5]);
        attr(ifdir, "bInterfaceSubClass", "%02x\n", intf[6]);
        attr(ifdir, "bInterfaceProtocol", "%02x\n", intf[7]);
        if (intf[8] && inst->strings[intf[8]])
            attr(ifdir, "interface", "%s\n", inst->strings[intf[8]]);
        attr(ifdir, "modalias", "usb:v%04Xp%04Xd%04Xdc%02Xdsc%02Xdp%02Xic%02Xisc%02Xip%02Xin%02X\n",
             le16(d + 8), le16(d + 10), le16(d + 12), d[4], d[5], d[6], intf[5], intf[6],
             intf[7], intf[2]);
        target = g_strdup_printf("%sbus/usb", ifup);
        path = g_build_filename(ifdir, "subsystem", NULL);
        make_link(target, path);
        g_free(path);
        g_free(target);
        if (inst->kdriver[slot])
            write_driver_link(ifpath, ifdir, inst->kdriver[slot]);
        g_free(ifup);
        g_free(ifdir);
        g_free(ifpath);
    }

    /* the /dev node (usbfs shows the descriptors) and its major:minor for
     * the preload's stat() emulation, before the device becomes visible */
    char *node = tb_path(inst->devnode);
    char *nodedir = g_path_get_dirname(node);
    mkdir_p(nodedir);
    write_file(node, d, dlen);
    char *infodir = tb_path("/dev/.node");
    mkdir_p(infodir);
    char *info = g_strdup(inst->devnode + strlen("/dev/"));
    g_strdelimit(info, "/", '_');
    path = g_build_filename(infodir, info, NULL);
    target = g_strdup_printf("189:%d", minor);
    make_link(target, path);
    g_free(target);
    g_free(path);
    g_free(info);
    g_free(infodir);
    g_free(nodedir);
    g_free(node);

    /* into place */
    char *parent = g_path_get_dirname(final_dir);
    mkdir_p(parent);
    g_free(parent);
    if (rename(dir, final_dir) < 0)
        g_printerr("accessory-sim: cannot move %s into place: %s\n", dir, g_strerror(errno));

    char *chardir = tb_path("/sys/dev/char");
    mkdir_p(chardir);
    target = g_strdup_printf("../..%s", inst->syspath + strlen("/sys"));
    char *name = g_strdup_printf("189:%d", minor);
    path = g_build_filename(chardir, name, NULL);
    make_link(target, path);
    g_free(path);
    g_free(name);
    g_free(target);
    g_free(chardir);

    char *busdir = tb_path("/sys/bus/usb/devices");
    mkdir_p(busdir);
    target = g_strdup_printf("../../..%s", inst->syspath + strlen("/sys"));
    path = g_build_filename(busdir, inst->port, NULL);
    make_link(target, path);
    g_free(path);
    g_free(target);
    for (unsigned int slot = 0; slot < inst->nifaces; slot++) {
        char *ifpath = iface_syspath(inst, slot);
        target = g_strdup_printf("../../..%s", ifpath + strlen("/sys"));
        path = g_build_filename(busdir, inst->ifnames[slot], NULL);
        make_link(target, path);
        g_free(path);
        g_free(target);
        g_free(ifpath);
    }
    g_free(busdir);

    g_free(up);
    g_free(final_dir);
    g_free(dir);
}

static void unlink_in_testbed(const char *rel)
{
    char *path = tb_path(rel);
    if (raw_unlink(path, 0) < 0 && errno != ENOENT)
        g_printerr("accessory-sim: cannot remove %s: %s\n", path, g_strerror(errno));
    g_free(path);
}

/* Removes the /dev node (and udev's record of it) only. */
static void remove_node(Instance *inst)
{
    unlink_in_testbed(inst->devnode);
    char *info = g_strdup(inst->devnode + strlen("/dev/"));
    g_strdelimit(info, "/", '_');
    char *rel = g_strdup_printf("/dev/.node/%s", info);
    unlink_in_testbed(rel);
    g_free(rel);
    g_free(info);
}

/* Takes the device out of the testbed: what umockdev_testbed_remove_device()
 * does, in the reverse order of materialize(). */
static void unlink_interface_links(Instance *inst)
{
    for (unsigned int slot = 0; slot < inst->nifaces; slot++) {
        char *rel = g_strdup_printf("/sys/bus/usb/devices/%s", inst->ifnames[slot]);
        unlink_in_testbed(rel);
        g_free(rel);
    }
}

static void dematerialize(Instance *inst, gboolean silent)
{
    char *rel;
    GError *err = NULL;

    if (!silent) {
        /* as the kernel: the interfaces' remove events (last first), then the device's */
        for (unsigned int slot = inst->nifaces; slot-- > 0;) {
            char *ifpath = iface_syspath(inst, slot);
            sim_uevent(ifpath, "remove");
            g_free(ifpath);
        }
        sim_uevent(inst->syspath, "remove");
    }
    unlink_interface_links(inst);
    rel = g_strdup_printf("/sys/bus/usb/devices/%s", inst->port);
    unlink_in_testbed(rel);
    g_free(rel);
    char *dir = tb_path(inst->syspath);
    trash_tree(dir);
    g_free(dir);
    rel = g_strdup_printf("/sys/dev/char/189:%d", minor_of(inst));
    unlink_in_testbed(rel);
    g_free(rel);
    remove_node(inst);

    if (!umockdev_testbed_detach_ioctl(sim.testbed, inst->devnode, &err)) {
        g_printerr("accessory-sim: detaching %s: %s\n", inst->devnode, err ? err->message : "failed");
        g_clear_error(&err);
    }
    g_clear_object(&inst->handler);
}

static void attach(Instance *inst, gboolean silent)
{
    GError *err = NULL;
    char *sock = g_strdup_printf("%s/ioctl%s", sim.root, inst->devnode);

    raw_unlink(sock, 0); /* a stale socket would make the listener fail */
    g_free(sock);
    inst->handler = usbfs_handler_new(inst);
    if (!umockdev_testbed_attach_ioctl(sim.testbed, inst->devnode, inst->handler, &err)) {
        g_printerr("accessory-sim: attaching %s: %s\n", inst->devnode, err ? err->message : "failed");
        g_clear_error(&err);
    }
    /* umockdev starts listening on its worker thread; a detach before that
     * leaves the listener running forever (a socket and the handler leak
     * per quick plug/unplug, e.g. in a storm). */
    usbfs_worker_barrier();
    materialize(inst);
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
static void write_host_controller(int bus)
{
    char *hcd = hcd_syspath(bus);
    char *name = hcd_name(bus);
    char *dir = tb_path(hcd);
    char *up = up_to_sys(hcd);
    char *target, *path;

    mkdir_p(dir);
    attr(dir, "uevent",
         "DRIVER=xhci_hcd\nPCI_CLASS=C0330\nPCI_ID=8086:A36D\nPCI_SUBSYS_ID=8086:7270\n"
         "PCI_SLOT_NAME=%s\nMODALIAS=pci:v00008086d0000A36Dsv00008086sd00007270bc0Csc03i30\n", name);
    attr(dir, "vendor", "0x8086\n");
    attr(dir, "device", "0xa36d\n");
    attr(dir, "class", "0x0c0330\n");
    target = g_strdup_printf("%sbus/pci", up);
    path = g_build_filename(dir, "subsystem", NULL);
    make_link(target, path);
    g_free(path);
    g_free(target);
    target = g_strdup_printf("%sbus/pci/drivers/xhci_hcd", up);
    path = g_build_filename(dir, "driver", NULL);
    make_link(target, path);
    g_free(path);
    g_free(target);
    char *busdir = tb_path("/sys/bus/pci/devices");
    mkdir_p(busdir);
    target = g_strdup_printf("../../..%s", hcd + strlen("/sys"));
    path = g_build_filename(busdir, name, NULL);
    make_link(target, path);
    g_free(path);
    g_free(target);
    g_free(busdir);
    g_free(up);
    g_free(dir);
    g_free(name);
    g_free(hcd);
}

/* ---- addresses and ports (sim.lock held) ----------------------------------- */

/* Like the kernel: the bus's next free address from devnum_next, wrapping
 * after 127 and skipping addresses in use. */
static int alloc_address(int bus)
{
    gboolean *used = sim.addr_used[bus];
    int a;
    for (a = sim.devnum_next[bus]; a < 128; a++)
        if (!used[a])
            break;
    if (a >= 128)
        for (a = 1; a < 128; a++)
            if (!used[a])
                break;
    if (a >= 128)
        return -1;
    used[a] = TRUE;
    sim.devnum_next[bus] = a >= 127 ? 1 : a + 1;
    return a;
}

static Instance *find_port(const char *port)
{
    for (guint i = 0; i < sim.accessories->len; i++) {
        Instance *a = g_ptr_array_index(sim.accessories, i);
        if (strcmp(a->port, port) == 0)
            return a;
    }
    return NULL;
}

gboolean hub_port_connected(const Instance *hub, int n)
{
    char *child = hub->root_hub ? g_strdup_printf("%d-%d", hub->bus, n) : g_strdup_printf("%s.%d", hub->port, n);
    Instance *a = find_port(child);
    g_free(child);
    return a && !a->gone;
}

static gboolean port_in_use(const char *port)
{
    for (guint i = 0; i < sim.accessories->len; i++) {
        Instance *other = g_ptr_array_index(sim.accessories, i);
        if (strcmp(other->port, port) == 0)
            return TRUE;
    }
    return FALSE;
}

/* "B-P[.P]..." with B a bus, 1-7 levels, port numbers 1-255. */
static gboolean port_valid(const char *port)
{
    const char *dash = strchr(port, '-');
    if (!dash || dash == port || dash - port > 2)
        return FALSE;
    for (const char *p = port; p < dash; p++)
        if (!g_ascii_isdigit(*p))
            return FALSE;
    int bus = atoi(port);
    if (bus < 1 || bus > sim.nbuses)
        return FALSE;
    gchar **levels = g_strsplit(dash + 1, ".", -1);
    guint n = g_strv_length(levels);
    gboolean ok = n >= 1 && n <= 7;
    for (guint i = 0; ok && i < n; i++) {
        const char *s = levels[i];
        if (!*s || strlen(s) > 3 || s[0] == '0')
            ok = FALSE;
        for (const char *p = s; ok && *p; p++)
            if (!g_ascii_isdigit(*p))
                ok = FALSE;
        if (ok && atoi(s) > 255)
            ok = FALSE;
    }
    g_strfreev(levels);
    return ok;
}

static char *next_free_port(void)
{
    for (int n = 1; n < 256; n++) {
        char *port = g_strdup_printf("%d-%d", 1, n);
        if (!port_in_use(port))
            return port;
        g_free(port);
    }
    return NULL;
}

/* ---- plug / unplug (main thread) ----------------------------------------- */

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
    Instance *phone = device_find(bus, addr);

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

void devices_init(int first_address, int nbuses)
{
    Spec hub = {.vid = 0x1d6b, .pid = 0x0002};
    char port[16];

    sim.accessories = g_ptr_array_new();
    android_set_switch_handler(switch_to_accessory_mode);
    char *trash = g_build_filename(sim.root, ".trash", NULL);
    mkdir_p(trash);
    g_free(trash);
    trash_queue = g_async_queue_new();
    trash_thread = g_thread_new("accessory-sim-trash", trash_main, NULL);
    sim.nbuses = nbuses;
    for (int bus = 1; bus <= nbuses; bus++) {
        sim.addr_used[bus][1] = TRUE;
        sim.devnum_next[bus] = first_address;
        write_host_controller(bus);
        g_snprintf(port, sizeof(port), "usb%d", bus);
        sim.root_hubs[bus] = instance_new(&hub, port, 1, TRUE);
        attach(sim.root_hubs[bus], FALSE);
        if (bus == 1 && !usbfs_capture_worker(sim.root_hubs[bus]->devnode))
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
    if (port) {
        if (!port_valid(port)) {
            *error = g_strdup_printf("usage: bad port '%s' (like 1-1 or 1-1.4; buses 1-%d)", port, sim.nbuses);
            goto fail;
        }
        if (port_in_use(port)) {
            *error = g_strdup_printf("port %s is in use", port);
            goto fail;
        }
        if (strchr(port, '.')) {
            /* behind a hub: the hub must be there and have that port */
            char *parent = parent_port(port);
            Instance *hub = find_port(parent);
            if (!hub || hub->spec.kind != KIND_HUB || hub->gone) {
                *error = g_strdup_printf("no hub on %s (plug one with plug-hub %s NPORTS)", parent, parent);
                g_free(parent);
                goto fail;
            }
            if (last_port(port) > hub->spec.hub_ports) {
                *error = g_strdup_printf("the hub on %s has ports 1-%d", parent, hub->spec.hub_ports);
                g_free(parent);
                goto fail;
            }
            g_free(parent);
        }
        chosen = g_strdup(port);
    } else if (!(chosen = next_free_port())) {
        *error = g_strdup("no free port");
        goto fail;
    }
    addr = alloc_address(bus_of(chosen));
    if (addr < 0) {
        *error = g_strdup_printf("no free address on bus %d", bus_of(chosen));
        goto fail;
    }
    /* Listed before the "add" uevent, so that a client reacting to the event
     * can already find it with "ctl list". */
    Instance *inst = instance_new(spec, chosen, addr, FALSE);
    g_free(chosen);
    for (int i = 0; aoa_strings && i < 6; i++) {
        inst->aoa_strings[i] = aoa_strings[i];
        aoa_strings[i] = NULL;
    }
    g_ptr_array_add(sim.accessories, inst);
    g_rec_mutex_unlock(&sim.lock);
    attach(inst, silent);
    sim_log("plugged %04x:%04x at %d:%d port %s%s", spec->vid, spec->pid, inst->bus, inst->addr, inst->port,
            silent ? " (silent)" : "");
    return inst;

fail:
    g_rec_mutex_unlock(&sim.lock);
    g_free(chosen);
    return NULL;
}

static int depth_then_port(gconstpointer a, gconstpointer b)
{
    const Instance *x = *(Instance *const *)a, *y = *(Instance *const *)b;
    int dx = 0, dy = 0;
    for (const char *p = x->port; *p; p++)
        dx += *p == '.';
    for (const char *p = y->port; *p; p++)
        dy += *p == '.';
    return dx != dy ? dy - dx : strcmp(x->port, y->port);
}

/* A hub's unplug, as the kernel does it: every device behind it first, the
 * deepest first, each with its own remove uevent. */
static void unplug_children(Instance *hub, gboolean silent)
{
    char *prefix = g_strdup_printf("%s.", hub->port);
    GPtrArray *children = g_ptr_array_new_with_free_func((GDestroyNotify)instance_unref);
    g_rec_mutex_lock(&sim.lock);
    for (guint i = 0; i < sim.accessories->len; i++) {
        Instance *a = g_ptr_array_index(sim.accessories, i);
        if (a->bus == hub->bus && g_str_has_prefix(a->port, prefix))
            g_ptr_array_add(children, instance_ref(a));
    }
    g_rec_mutex_unlock(&sim.lock);
    g_ptr_array_sort(children, depth_then_port);
    for (guint i = 0; i < children->len; i++) {
        Instance *child = g_ptr_array_index(children, i);
        device_unplug(child, silent); /* a hub among them finds its children gone already */
    }
    g_ptr_array_unref(children);
    g_free(prefix);
}

void device_unplug(Instance *inst, gboolean silent)
{
    if (inst->spec.kind == KIND_HUB)
        unplug_children(inst, silent);
    if (!silent && sim.kernel_order_ms >= 0) {
        device_unplug_urbs_first(inst, (guint)sim.kernel_order_ms);
        return;
    }
    g_rec_mutex_lock(&sim.lock);
    if (!g_ptr_array_remove(sim.accessories, inst)) {
        g_rec_mutex_unlock(&sim.lock);
        return; /* already unplugged */
    }
    inst->gone = TRUE;
    sim.addr_used[inst->bus][inst->addr] = FALSE;
    usbfs_instance_gone(inst);
    g_rec_mutex_unlock(&sim.lock);

    dematerialize(inst, silent);
    sim_log("unplugged %d:%d port %s%s", inst->bus, inst->addr, inst->port, silent ? " (silent)" : "");
    instance_unref(inst); /* the table's reference */
}

/* The kernel's order on a real unplug: the pending URBs fail first (OUT with
 * ESHUTDOWN, IN with EPROTO), then the device leaves sysfs's listing and its node
 * goes, and the remove uevent follows uevent_delay_ms later, as udevd relays it.
 * The device directory itself stays until then: the uevent is built from it. */
void device_unplug_urbs_first(Instance *inst, guint uevent_delay_ms)
{
    g_rec_mutex_lock(&sim.lock);
    if (!g_ptr_array_remove(sim.accessories, inst)) {
        g_rec_mutex_unlock(&sim.lock);
        return; /* already unplugged */
    }
    inst->gone = TRUE;
    inst->kernel_order = TRUE; /* an ioctl before the worker fails the URBs fails them so too */
    sim.addr_used[inst->bus][inst->addr] = FALSE;
    g_rec_mutex_unlock(&sim.lock);
    usbfs_instance_gone_kernel_order(inst);

    unlink_interface_links(inst);
    char *rel = g_strdup_printf("/sys/bus/usb/devices/%s", inst->port);
    unlink_in_testbed(rel);
    g_free(rel);
    remove_node(inst);
    if (uevent_delay_ms > 0)
        g_usleep((gulong)uevent_delay_ms * 1000);
    dematerialize(inst, FALSE);
    sim_log("unplugged %d:%d port %s (URBs first, uevent after %u ms)", inst->bus, inst->addr, inst->port, uevent_delay_ms);
    instance_unref(inst); /* the table's reference */
}

void device_remove_node(Instance *inst)
{
    remove_node(inst);
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

Instance *device_find(int bus, int addr)
{
    Instance *found = NULL;
    g_rec_mutex_lock(&sim.lock);
    for (guint i = 0; i < sim.accessories->len; i++) {
        Instance *inst = g_ptr_array_index(sim.accessories, i);
        if (inst->bus == bus && inst->addr == addr && !inst->gone)
            found = inst; /* a gone one is about to be removed (fault unplug-after) */
    }
    g_rec_mutex_unlock(&sim.lock);
    return found;
}

void devices_shutdown(void)
{
    /* The testbed directory goes away with the testbed; just drop our
     * references to the handlers so they can be finalized. */
    g_rec_mutex_lock(&sim.lock);
    GPtrArray *all = sim.accessories;
    sim.accessories = g_ptr_array_new();
    g_rec_mutex_unlock(&sim.lock);
    for (guint i = 0; i < all->len; i++) {
        Instance *inst = g_ptr_array_index(all, i);
        GError *err = NULL;
        if (!umockdev_testbed_detach_ioctl(sim.testbed, inst->devnode, &err))
            g_clear_error(&err);
        g_clear_object(&inst->handler);
        instance_unref(inst);
    }
    g_ptr_array_unref(all);
    for (int bus = 1; bus <= sim.nbuses; bus++) {
        if (!sim.root_hubs[bus])
            continue;
        GError *err = NULL;
        if (!umockdev_testbed_detach_ioctl(sim.testbed, sim.root_hubs[bus]->devnode, &err))
            g_clear_error(&err);
        g_clear_object(&sim.root_hubs[bus]->handler);
        g_clear_pointer(&sim.root_hubs[bus], instance_unref);
    }
    if (trash_thread) {
        g_async_queue_push(trash_queue, trash_stop);
        g_thread_join(trash_thread);
        trash_thread = NULL;
        g_async_queue_unref(trash_queue);
        trash_queue = NULL;
    }
}
