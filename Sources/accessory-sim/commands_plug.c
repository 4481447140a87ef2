/*
 * accessory-sim: the control socket's commands on what is plugged where:
 * plug, plug-hub, unplug, replug, storm (through devices.c) and list.
 * Main thread.
 */
#define _GNU_SOURCE
#include "commands_internal.h"
#include "devices.h"
#include "materialize.h"
#include "topology.h"

#include <stdlib.h>
#include <string.h>

void cmd_plug(gchar **argv, GString *out, const char *usage)
{
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
            reply_usage(out, usage);
            return;
        }
    }
    if (!spec_text) {
        reply_usage(out, usage);
        return;
    }
    if (!spec_parse(spec_text, &spec, &err)) {
        reply_error(out, err);
        return;
    }
    Instance *inst = device_plug(&spec, port, silent, &err);
    spec_clear(&spec);
    if (!inst) {
        reply_error(out, err);
        return;
    }
    reply_instance(out, inst);
}

/* plug-hub PORT NPORTS [--power per-port|ganged|none] [--usb3] [--no-disable]:
 * a USB 2.0 hub (class 9) with NPORTS downstream ports; with --usb3 also its
 * SuperSpeed half at the same place on the next bus, the ports linked by
 * `peer`; --no-disable: its ports have no sysfs `disable` (before Linux 6.0). */
void cmd_plug_hub(gchar **argv, GString *out, const char *usage)
{
    char *end = NULL;
    PowerSwitching power = POWER_PER_PORT;
    gboolean usb3 = FALSE, no_disable = FALSE, ok = argv[1] && argv[2];
    guint64 n = ok ? g_ascii_strtoull(argv[2], &end, 10) : 0;
    ok = ok && end && !*end && end != argv[2] && n >= 1 && n <= 31;
    for (int i = 3; ok && argv[i]; i++) {
        if (strcmp(argv[i], "--usb3") == 0)
            usb3 = TRUE;
        else if (strcmp(argv[i], "--no-disable") == 0)
            no_disable = TRUE;
        else if (strcmp(argv[i], "--power") == 0 && argv[i + 1]) {
            const char *p = argv[++i];
            if (strcmp(p, "per-port") == 0)
                power = POWER_PER_PORT;
            else if (strcmp(p, "ganged") == 0)
                power = POWER_GANGED;
            else if (strcmp(p, "none") == 0)
                power = POWER_NONE;
            else
                ok = FALSE;
        } else
            ok = FALSE;
    }
    if (!ok) {
        g_string_append_printf(out, "error usage: %s (NPORTS 1-31)\n", usage);
        return;
    }
    Spec spec = {.vid = 0x05e3, .pid = usb3 ? 0x0610 : 0x0608, .kind = KIND_HUB, .hub_ports = (guint8)n,
                 .power = power, .paired = usb3, .no_disable = no_disable};
    char *err = NULL;
    char *peer_port = NULL;
    if (usb3) {
        int bus = topology_bus_of(argv[1]);
        const char *dash = strchr(argv[1], '-');
        if (!dash || bus < 1 || bus + 1 > sim.nbuses) {
            reply_error(out, g_strdup_printf("a USB 3 hub's SuperSpeed half goes on the next bus: start with --buses %d", bus + 1));
            return;
        }
        peer_port = g_strdup_printf("%d%s", bus + 1, dash);
    }
    Instance *inst = device_plug(&spec, argv[1], FALSE, &err);
    if (!inst) {
        g_free(peer_port);
        reply_error(out, err);
        return;
    }
    if (usb3) {
        Spec ss = spec;
        ss.pid = 0x0626;
        ss.superspeed = TRUE;
        Instance *peer = device_plug(&ss, peer_port, FALSE, &err);
        if (!peer) {
            device_unplug(inst, FALSE);
            g_free(peer_port);
            reply_error(out, err);
            return;
        }
        materialize_peer_links(inst, peer);
        g_string_append_printf(out, "ok %d %d %s %d %d %s\n", inst->bus, inst->addr, inst->port, peer->bus, peer->addr,
                               peer->port);
        g_free(peer_port);
        return;
    }
    reply_instance(out, inst);
}

/* BUS:ADDRESS [--silent]: the device, or NULL after the error reply. */
static Instance *silent_target(gchar **argv, GString *out, const char *usage, gboolean *silent)
{
    *silent = FALSE;
    for (int i = 2; argv[1] && argv[i]; i++) {
        if (strcmp(argv[i], "--silent") != 0) {
            reply_usage(out, usage);
            return NULL;
        }
        *silent = TRUE;
    }
    return command_target(argv, out, usage);
}

void cmd_unplug(gchar **argv, GString *out, const char *usage)
{
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
        Instance *inst = command_target(argv, out, usage);
        if (!inst)
            return;
        device_unplug_urbs_first(inst, delay);
        g_string_append(out, "ok\n");
        return;
    }
    Instance *inst = silent_target(argv, out, usage, &silent);
    if (!inst)
        return;
    device_unplug(inst, silent);
    g_string_append(out, "ok\n");
}

void cmd_replug(gchar **argv, GString *out, const char *usage)
{
    gboolean silent;
    char *err = NULL;
    Instance *inst = silent_target(argv, out, usage, &silent);
    if (!inst)
        return;
    Instance *fresh = device_replug(inst, silent, &err);
    if (!fresh) {
        reply_error(out, err);
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
void cmd_storm(gchar **argv, GString *out, const char *usage)
{
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
        reply_usage(out, usage);
        return;
    }
    Instance *inst = command_target(argv, out, usage);
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
            reply_error(out, err);
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

/* One line per device: BUS ADDRESS PORT VID:PID SERIAL (no "ok" line). */
void cmd_list(gchar **argv, GString *out, const char *usage)
{
    if (argv[1]) {
        reply_usage(out, usage);
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
