/*
 * accessory-sim: the control socket's commands on one device's behaviour:
 * fault (what its next bulk transfer does), kernel-driver (the pretend
 * driver bound to an interface), and what it has seen: ioctl-log and
 * aoa-strings. Main thread; each takes sim.lock to touch the instance,
 * which the usbdevfs handler changes on umockdev's worker thread.
 */
#define _GNU_SOURCE
#include "commands_internal.h"
#include "devices.h"
#include "usbfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cmd_fault(gchar **argv, GString *out, const char *usage)
{
    FaultKind kind = FAULT_NONE;
    gint64 bytes = -1;
    if (!argv[1] || !argv[2] || argv[3]) {
        reply_usage(out, usage);
        return;
    }
    if (strcmp(argv[2], "no-node") == 0) {
        /* Only the /dev node goes: sysfs still lists the device (a container given a
         * stale --device). */
        Instance *inst = command_target(argv, out, usage);
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
            reply_usage(out, usage);
            return;
        }
        bytes = v;
    } else if (strcmp(argv[2], "none") != 0) {
        reply_usage(out, usage);
        return;
    }
    Instance *inst = command_target(argv, out, usage);
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
        reply_usage(out, usage);
        return NULL;
    }
    return command_target(argv, out, usage);
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
void cmd_ioctl_log(gchar **argv, GString *out, const char *usage)
{
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
void cmd_aoa_strings(gchar **argv, GString *out, const char *usage)
{
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

void cmd_kernel_driver(gchar **argv, GString *out, const char *usage)
{
    char *end = NULL;
    long ifno = argv[1] && argv[2] ? strtol(argv[2], &end, 10) : -1;
    if (!argv[1] || !argv[2] || !argv[3] || argv[4] || *end != '\0' || ifno < 0) {
        reply_usage(out, usage);
        return;
    }
    Instance *inst = command_target(argv, out, usage);
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
