/*
 * accessory-sim: the control socket's commands (see control.c for the
 * protocol): each parses its arguments and calls the layers below
 * (main thread).
 */
#define _GNU_SOURCE
#include "control.h"
#include "devices.h"
#include "topology.h"
#include "uevent_guard.h"
#include "usbfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "plug VID:PID[:SERIAL[:PROTOCOL]][,interface=N][,interrupt][,android] [--port P] [--silent]\n"
    "plug-hub PORT NPORTS\n"
    "unplug BUS:ADDRESS [--silent | --urbs-first [--uevent-delay MS]]\n"
    "replug BUS:ADDRESS [--silent]\n"
    "storm BUS:ADDRESS N [--lossy SEED]\n"
    "fault BUS:ADDRESS stall|timeout|unplug-after=BYTES|no-node|none\n"
    "list\n"
    "aoa-strings BUS:ADDRESS\n"
    "ioctl-log BUS:ADDRESS\n"
    "kernel-driver BUS:ADDRESS IFACE NAME|-\n"
    "uevent-check\n"
    "help\n";



static gboolean parse_busaddr(const char *text, int *bus, int *addr)
{
    char *end;
    long b = strtol(text, &end, 10);
    if (end == text || *end != ':')
        return FALSE;
    const char *a_text = end + 1;
    long a = strtol(a_text, &end, 10);
    if (end == a_text || *end != '\0' || b < 0 || b > 999 || a < 0 || a > 999)
        return FALSE;
    *bus = (int)b;
    *addr = (int)a;
    return TRUE;
}

/* Finds the accessory named by argv[1], or writes the error reply. */
static Instance *target(gchar **argv, GString *out, const char *usage)
{
    int bus, addr;
    if (!argv[1] || !parse_busaddr(argv[1], &bus, &addr)) {
        g_string_append_printf(out, "error usage: %s\n", usage);
        return NULL;
    }
    Instance *inst = topology_find(bus, addr);
    if (!inst)
        g_string_append_printf(out, "error no device at %d:%d\n", bus, addr);
    return inst;
}

static void reply_instance(GString *out, Instance *inst)
{
    g_string_append_printf(out, "ok %d %d %s\n", inst->bus, inst->addr, inst->port);
}

static void cmd_plug(gchar **argv, GString *out)
{
    static const char usage[] = "plug VID:PID[:SERIAL[:PROTOCOL]][,interface=N][,interrupt][,android] [--port P] [--silent]";
    const char *spec_text = NULL, *port = NULL;
    gboolean silent = FALSE;
    Spec spec;
    char *err = NULL;

    for (int i = 1; argv[i]; i++) {
        if (strcmp(argv[i], "--port") == 0 && argv[i + 1])
            port = argv[++i];
        else if (g_str_has_prefix(argv[i], "--port="))
            port = argv[i] + strlen("--port=");
        else if (strcmp(argv[i], "--silent") == 0)
            silent = TRUE;
        else if (argv[i][0] != '-' && !spec_text)
            spec_text = argv[i];
        else {
            g_string_append_printf(out, "error usage: %s\n", usage);
            return;
        }
    }
    if (!spec_text) {
        g_string_append_printf(out, "error usage: %s\n", usage);
        return;
    }
    if (!spec_parse(spec_text, &spec, &err)) {
        g_string_append_printf(out, "error %s\n", err);
        g_free(err);
        return;
    }
    Instance *inst = device_plug(&spec, port, silent, &err);
    spec_clear(&spec);
    if (!inst) {
        g_string_append_printf(out, "error %s\n", err);
        g_free(err);
        return;
    }
    reply_instance(out, inst);
}

/* plug-hub PORT NPORTS: a USB 2.0 hub (class 9) with NPORTS downstream ports. */
static void cmd_plug_hub(gchar **argv, GString *out)
{
    static const char usage[] = "plug-hub PORT NPORTS";
    char *end = NULL;
    guint64 n = argv[1] && argv[2] ? g_ascii_strtoull(argv[2], &end, 10) : 0;
    if (!argv[1] || !argv[2] || argv[3] || !end || *end || end == argv[2] || n < 1 || n > 31) {
        g_string_append_printf(out, "error usage: %s (NPORTS 1-31)\n", usage);
        return;
    }
    Spec spec = {.vid = 0x05e3, .pid = 0x0608, .kind = KIND_HUB, .hub_ports = (guint8)n};
    char *err = NULL;
    Instance *inst = device_plug(&spec, argv[1], FALSE, &err);
    if (!inst) {
        g_string_append_printf(out, "error %s\n", err);
        g_free(err);
        return;
    }
    reply_instance(out, inst);
}

static gboolean parse_silent(gchar **argv, gboolean *silent)
{
    *silent = FALSE;
    if (!argv[1])
        return TRUE;
    for (int i = 2; argv[i]; i++) {
        if (strcmp(argv[i], "--silent") == 0)
            *silent = TRUE;
        else
            return FALSE;
    }
    return TRUE;
}

static void cmd_unplug(gchar **argv, GString *out)
{
    static const char usage[] = "unplug BUS:ADDRESS [--silent | --urbs-first [--uevent-delay MS]]";
    gboolean silent;
    if (argv[1] && argv[2] && strcmp(argv[2], "--urbs-first") == 0) {
        guint delay = 0;
        if (argv[3]) {
            char *end = NULL;
            guint64 ms = 0;
            if (strcmp(argv[3], "--uevent-delay") != 0 || !argv[4] || argv[5] ||
                (ms = g_ascii_strtoull(argv[4], &end, 10), !end || *end || end == argv[4] || ms > 60000)) {
                g_string_append_printf(out, "error usage: %s (MS is 0-60000)\n", usage);
                return;
            }
            delay = (guint)ms;
        }
        Instance *inst = target(argv, out, usage);
        if (!inst)
            return;
        device_unplug_urbs_first(inst, delay);
        g_string_append(out, "ok\n");
        return;
    }
    if (!parse_silent(argv, &silent)) {
        g_string_append_printf(out, "error usage: %s\n", usage);
        return;
    }
    Instance *inst = target(argv, out, usage);
    if (!inst)
        return;
    device_unplug(inst, silent);
    g_string_append(out, "ok\n");
}

static void cmd_replug(gchar **argv, GString *out)
{
    static const char usage[] = "replug BUS:ADDRESS [--silent]";
    gboolean silent;
    char *err = NULL;
    if (!parse_silent(argv, &silent)) {
        g_string_append_printf(out, "error usage: %s\n", usage);
        return;
    }
    Instance *inst = target(argv, out, usage);
    if (!inst)
        return;
    Instance *fresh = device_replug(inst, silent, &err);
    if (!fresh) {
        g_string_append_printf(out, "error %s\n", err);
        g_free(err);
        return;
    }
    reply_instance(out, fresh);
}

/* One cycle of a lossy storm: which of its two uevents the monitor gets. */
typedef enum { CYCLE_BOTH, CYCLE_LOSE_REMOVE, CYCLE_LOSE_ADD, CYCLE_LOSE_BOTH } CycleLoss;

/*
 * storm BUS:ADDRESS N [--lossy SEED]
 *
 * N unplug/replug cycles (2N uevents). With --lossy, a seeded mix of lost events: each
 * cycle keeps both uevents, loses the remove, loses the add, or loses both, and now and
 * then an overflow drops every uevent of a run of 8 to 64 cycles, as a netlink socket
 * does when its receive buffer overflows (ENOBUFS). (A real overflow of umockdev's
 * datagram queue aborts umockdev, so the loss is made here, at the sender.) The reply then
 * adds "sent=S lost=L overflows=O" after the final instance.
 */
static void cmd_storm(gchar **argv, GString *out)
{
    static const char usage[] = "storm BUS:ADDRESS N [--lossy SEED]";
    char *end = NULL;
    long n = argv[1] && argv[2] ? strtol(argv[2], &end, 10) : -1;
    gboolean lossy = FALSE;
    guint64 seed = 0;
    if (argv[1] && argv[2] && argv[3]) {
        char *seed_end = NULL;
        if (strcmp(argv[3], "--lossy") == 0 && argv[4] && !argv[5]) {
            lossy = TRUE;
            seed = g_ascii_strtoull(argv[4], &seed_end, 10);
        }
        if (!lossy || seed_end == argv[4] || *seed_end != '\0')
            n = -1;
    }
    if (!argv[1] || !argv[2] || *end != '\0' || n < 0 || n > 1000000) {
        g_string_append_printf(out, "error usage: %s\n", usage);
        return;
    }
    Instance *inst = target(argv, out, usage);
    if (!inst)
        return;
    GRand *rand = g_rand_new_with_seed((guint32)(seed ^ (seed >> 32)));
    long sent = 0, lost = 0, overflows = 0, overflow_left = 0;
    gint64 start = g_get_monotonic_time();
    for (long i = 0; i < n; i++) {
        CycleLoss loss = CYCLE_BOTH;
        if (lossy) {
            if (overflow_left == 0 && g_rand_int_range(rand, 0, 200) == 0) {
                overflow_left = g_rand_int_range(rand, 8, 65);
                overflows++;
            }
            if (overflow_left > 0) {
                overflow_left--;
                loss = CYCLE_LOSE_BOTH;
            } else {
                int roll = g_rand_int_range(rand, 0, 100);
                loss = roll < 70 ? CYCLE_BOTH : roll < 80 ? CYCLE_LOSE_REMOVE : roll < 90 ? CYCLE_LOSE_ADD : CYCLE_LOSE_BOTH;
            }
        }
        gboolean silent_remove = loss == CYCLE_LOSE_REMOVE || loss == CYCLE_LOSE_BOTH;
        gboolean silent_add = loss == CYCLE_LOSE_ADD || loss == CYCLE_LOSE_BOTH;
        sent += !silent_remove + !silent_add;
        lost += silent_remove + silent_add;

        Spec spec;
        char *port = g_strdup(inst->port);
        char *err = NULL;
        spec_copy(&spec, &inst->spec);
        device_unplug(inst, silent_remove);
        inst = device_plug(&spec, port, silent_add, &err);
        spec_clear(&spec);
        g_free(port);
        if (!inst) {
            g_string_append_printf(out, "error %s\n", err);
            g_free(err);
            g_rand_free(rand);
            return;
        }
        /* umockdev's uevent sender aborts when a listener's datagram queue is full
         * (net.unix.max_dgram_qlen is 10 by default): give listeners a moment per cycle. */
        g_usleep(200);
    }
    g_rand_free(rand);
    sim_log("storm of %ld cycles took %.3f s (%ld uevents sent, %ld lost, %ld overflows)", n,
            (double)(g_get_monotonic_time() - start) / 1e6, sent, lost, overflows);
    if (lossy)
        g_string_append_printf(out, "ok %d %d %s sent=%ld lost=%ld overflows=%ld\n", inst->bus, inst->addr,
                               inst->port, sent, lost, overflows);
    else
        reply_instance(out, inst);
}

static void cmd_fault(gchar **argv, GString *out)
{
    static const char usage[] = "fault BUS:ADDRESS stall|timeout|unplug-after=BYTES|no-node|none";
    FaultKind kind = FAULT_NONE;
    gint64 bytes = -1;
    if (!argv[1] || !argv[2] || argv[3]) {
        g_string_append_printf(out, "error usage: %s\n", usage);
        return;
    }
    if (strcmp(argv[2], "no-node") == 0) {
        /* Only the /dev node goes: sysfs still lists the device (a container given a
         * stale --device). */
        Instance *inst = target(argv, out, usage);
        if (!inst)
            return;
        device_remove_node(inst);
        g_string_append(out, "ok\n");
        return;
    }
    if (strcmp(argv[2], "stall") == 0) {
        kind = FAULT_STALL;
    } else if (strcmp(argv[2], "timeout") == 0) {
        kind = FAULT_TIMEOUT;
    } else if (g_str_has_prefix(argv[2], "unplug-after=")) {
        const char *num = argv[2] + strlen("unplug-after=");
        char *end;
        errno = 0;
        long long v = strtoll(num, &end, 10);
        if (end == num || *end != '\0' || v < 0 || errno != 0) {
            g_string_append_printf(out, "error usage: %s\n", usage);
            return;
        }
        bytes = v;
    } else if (strcmp(argv[2], "none") != 0) {
        g_string_append_printf(out, "error usage: %s\n", usage);
        return;
    }
    Instance *inst = target(argv, out, usage);
    if (!inst)
        return;
    g_rec_mutex_lock(&sim.lock);
    if (bytes >= 0) {
        inst->unplug_after = bytes;
    } else if (kind == FAULT_NONE) {
        inst->fault = FAULT_NONE;
        inst->unplug_after = -1;
    } else {
        inst->fault = kind;
    }
    g_rec_mutex_unlock(&sim.lock);
    g_string_append(out, "ok\n");
}

static void cmd_list(gchar **argv, GString *out)
{
    if (argv[1]) {
        g_string_append(out, "error usage: list\n");
        return;
    }
    GPtrArray *present = topology_present();
    for (guint i = 0; i < present->len; i++) {
        Instance *inst = g_ptr_array_index(present, i);
        g_string_append_printf(out, "%d %d %s %04x:%04x %s\n", inst->bus, inst->addr, inst->port, inst->spec.vid,
                               inst->spec.pid, inst->spec.serial ? inst->spec.serial : "-");
    }
    g_ptr_array_unref(present);
}

static const char *fault_name(const Instance *inst)
{
    switch (inst->fault) {
    case FAULT_STALL:
        return "stall";
    case FAULT_TIMEOUT:
        return "timeout";
    case FAULT_NONE:
    default:
        return inst->unplug_after >= 0 ? "unplug-after" : "none";
    }
}

/* A command whose one argument is BUS:ADDRESS: the instance, or NULL after a reply. */
static Instance *only_target(gchar **argv, GString *out, const char *usage)
{
    if (!argv[1] || argv[2]) {
        g_string_append_printf(out, "error usage: %s\n", usage);
        return NULL;
    }
    return target(argv, out, usage);
}

/* ok open=N opens=N claimed=LIST claims=N released=N dropped=N resets=N
 *    urbs=N bytes-out=N bytes-in=N fifo=N pending-in=N pending-out=N
 *    halted=LIST fault=KIND driver=NAME
 * open: file descriptors open now; opens: ever opened; claimed: interfaces
 * claimed now ("-" for none); claims: successful claims (explicit or
 * implicit); released: explicit USBDEVFS_RELEASEINTERFACE; dropped: claims
 * that ended because their client closed the device (or died) without
 * releasing; urbs: URBs submitted; bytes-out/in: bulk bytes accepted/echoed;
 * fifo: bytes waiting to be read back; halted: halted endpoints;
 * bulk_urbs, interrupt_urbs, control_urbs: URBs accepted, by the type they
 * ran as (a BULK URB on an interrupt endpoint counts as interrupt, as usbfs
 * runs it; a URB refused at submission, e.g. INTERRUPT on a bulk endpoint
 * with EINVAL, counts only in urbs). */
static void cmd_ioctl_log(gchar **argv, GString *out)
{
    static const char usage[] = "ioctl-log BUS:ADDRESS";
    Instance *inst = only_target(argv, out, usage);
    if (!inst)
        return;
    g_rec_mutex_lock(&sim.lock);
    GString *claimed = g_string_new(NULL);
    for (int i = 0; i < SIM_NIFACES; i++)
        if (inst->claim_owner[i])
            g_string_append_printf(claimed, "%s%u", claimed->len ? "," : "", (unsigned)inst->ifnums[i]);
    GString *halted = g_string_new(NULL);
    if (inst->halted_out)
        g_string_append(halted, "0x01");
    if (inst->halted_in)
        g_string_append_printf(halted, "%s0x81", halted->len ? "," : "");
    if (inst->halted_other)
        g_string_append_printf(halted, "%sother", halted->len ? "," : "");
    g_string_append_printf(out,
                           "ok open=%u opens=%u claimed=%s claims=%u released=%u dropped=%u resets=%u urbs=%u "
                           "bytes-out=%" G_GUINT64_FORMAT " bytes-in=%" G_GUINT64_FORMAT " fifo=%" G_GSIZE_FORMAT
                           " pending-in=%u pending-out=%u halted=%s fault=%s driver=%s bulk_urbs=%u interrupt_urbs=%u"
                           " control_urbs=%u\n",
                           g_list_length(inst->clients), inst->opens, claimed->len ? claimed->str : "-",
                           inst->claims, inst->releases, inst->dropped, inst->resets, inst->urbs, inst->bytes_out,
                           inst->bytes_in, inst->fifo_bytes, inst->in_pending.length, inst->out_pending.length,
                           halted->len ? halted->str : "-", fault_name(inst),
                           inst->kdriver[0] ? inst->kdriver[0] : "-", inst->bulk_urbs, inst->interrupt_urbs,
                           inst->control_urbs);
    g_string_free(claimed, TRUE);
    g_string_free(halted, TRUE);
    g_rec_mutex_unlock(&sim.lock);
}

/* aoa-strings BUS:ADDRESS: six lines "INDEX STRING" (nothing after the blank
 * for a string never sent), no "ok" line; only for an ",android" phone or the
 * 18d1:2d01 instance it became. */
static void cmd_aoa_strings(gchar **argv, GString *out)
{
    static const char usage[] = "aoa-strings BUS:ADDRESS";
    Instance *inst = only_target(argv, out, usage);
    if (!inst)
        return;
    if (!is_android(inst)) {
        g_string_append_printf(out,
                               "error %s is %04x:%04x, not an android phone or its accessory mode (plug one with "
                               "SPEC,android)\n",
                               argv[1], inst->spec.vid, inst->spec.pid);
        return;
    }
    g_rec_mutex_lock(&sim.lock);
    for (int i = 0; i < 6; i++) {
        /* one line each: a control character a host sent shows as '?' */
        char *text = g_strdup(inst->aoa_strings[i] ? inst->aoa_strings[i] : "");
        for (char *p = text; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
        g_string_append_printf(out, "%d %s\n", i, text);
        g_free(text);
    }
    g_rec_mutex_unlock(&sim.lock);
}

static void cmd_kernel_driver(gchar **argv, GString *out)
{
    static const char usage[] = "kernel-driver BUS:ADDRESS IFACE NAME|-";
    char *end = NULL;
    long ifno = argv[1] && argv[2] ? strtol(argv[2], &end, 10) : -1;
    if (!argv[1] || !argv[2] || !argv[3] || argv[4] || *end != '\0' || ifno < 0) {
        g_string_append_printf(out, "error usage: %s\n", usage);
        return;
    }
    Instance *inst = target(argv, out, usage);
    if (!inst)
        return;
    const char *name = strcmp(argv[3], "-") == 0 ? NULL : argv[3];
    g_rec_mutex_lock(&sim.lock);
    long asked = ifno;
    ifno = ifno < 0 ? SIM_NIFACES : (long)IFACE_SLOT(inst, ifno);
    if (ifno >= SIM_NIFACES)
        g_string_append_printf(out, "error no interface %ld\n", asked);
    else if (name && inst->claim_owner[ifno])
        g_string_append_printf(out, "error interface %ld is claimed\n", asked);
    else {
        usbfs_set_kernel_driver(inst, (unsigned int)ifno, name);
        g_string_append(out, "ok\n");
    }
    g_rec_mutex_unlock(&sim.lock);
}

static void cmd_uevent_check(gchar **argv, GString *out)
{
    if (argv[1]) {
        g_string_append(out, "error usage: uevent-check\n");
        return;
    }
    guint sockets = 0;
    char *problems = uevent_guard_check(&sockets);
    if (problems)
        g_string_append_printf(out, "error uevent sockets: %s (issue #16)\n", problems);
    else
        g_string_append_printf(out, "ok sockets=%u\n", sockets);
    g_free(problems);
}

void commands_execute(const char *line, GString *out)
{
    gchar **parts = g_strsplit_set(line, " \t\r", -1);
    GPtrArray *args = g_ptr_array_new();
    for (int i = 0; parts[i]; i++)
        if (parts[i][0])
            g_ptr_array_add(args, parts[i]);
    g_ptr_array_add(args, NULL);
    gchar **argv = (gchar **)args->pdata;
    const char *cmd = argv[0] ? argv[0] : "";

    sim_log("ctl: %s", line);
    if (strcmp(cmd, "plug") == 0)
        cmd_plug(argv, out);
    else if (strcmp(cmd, "plug-hub") == 0)
        cmd_plug_hub(argv, out);
    else if (strcmp(cmd, "unplug") == 0)
        cmd_unplug(argv, out);
    else if (strcmp(cmd, "replug") == 0)
        cmd_replug(argv, out);
    else if (strcmp(cmd, "storm") == 0)
        cmd_storm(argv, out);
    else if (strcmp(cmd, "fault") == 0)
        cmd_fault(argv, out);
    else if (strcmp(cmd, "list") == 0)
        cmd_list(argv, out);
    else if (strcmp(cmd, "aoa-strings") == 0)
        cmd_aoa_strings(argv, out);
    else if (strcmp(cmd, "ioctl-log") == 0)
        cmd_ioctl_log(argv, out);
    else if (strcmp(cmd, "kernel-driver") == 0)
        cmd_kernel_driver(argv, out);
    else if (strcmp(cmd, "uevent-check") == 0)
        cmd_uevent_check(argv, out);
    else if (strcmp(cmd, "help") == 0)
        g_string_append_printf(out, "ok\n%s", usage_text);
    else
        g_string_append_printf(out,
                               "error usage: unknown command '%s' (plug, plug-hub, unplug, replug, storm, fault, "
                               "list, aoa-strings, ioctl-log, kernel-driver, uevent-check, help)\n",
                               cmd);
    g_ptr_array_unref(args);
    g_strfreev(parts);
}
