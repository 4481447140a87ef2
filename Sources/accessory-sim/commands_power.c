/*
 * accessory-sim: the control socket's commands on port power and on devices
 * that need it: power (switch a port as its hub allows), power-log, wedge
 * and vanish (through power.c). Main thread.
 */
#define _GNU_SOURCE
#include "commands_internal.h"
#include "power.h"

#include <string.h>

/* power PORT on|off: as a PORT_POWER request to the port's hub would. */
void cmd_power(gchar **argv, GString *out, const char *usage)
{
    if (!argv[1] || !argv[2] || argv[3] || (strcmp(argv[2], "on") != 0 && strcmp(argv[2], "off") != 0)) {
        reply_usage(out, usage);
        return;
    }
    char *err = NULL;
    if (!power_switch(argv[1], strcmp(argv[2], "on") == 0, &err)) {
        reply_error(out, err);
        return;
    }
    g_string_append(out, "ok\n");
}

/* One line per port power change so far, "PORT off" or "PORT on" (no "ok" line). */
void cmd_power_log(gchar **argv, GString *out, const char *usage)
{
    if (argv[1]) {
        reply_usage(out, usage);
        return;
    }
    g_rec_mutex_lock(&sim.lock);
    for (guint i = 0; i < sim.power_log->len; i++)
        g_string_append_printf(out, "%s\n", (const char *)g_ptr_array_index(sim.power_log, i));
    g_rec_mutex_unlock(&sim.lock);
}

/* wedge BUS:ADDRESS --cured-by reset|reauthorize|power-cycle|never */
void cmd_wedge(gchar **argv, GString *out, const char *usage)
{
    Wedge w = WEDGE_NONE;
    if (argv[1] && argv[2] && argv[3] && !argv[4] && strcmp(argv[2], "--cured-by") == 0) {
        const char *names[] = {NULL, "reset", "reauthorize", "power-cycle", "never"};
        for (int i = 1; i <= WEDGE_NEVER; i++)
            if (strcmp(argv[3], names[i]) == 0)
                w = (Wedge)i;
    }
    if (w == WEDGE_NONE) {
        reply_usage(out, usage);
        return;
    }
    Instance *inst = command_target(argv, out, usage);
    if (!inst)
        return;
    g_rec_mutex_lock(&sim.lock);
    inst->spec.wedge = w;
    g_rec_mutex_unlock(&sim.lock);
    g_string_append(out, "ok\n");
}

/* vanish BUS:ADDRESS --back-on power-cycle|never */
void cmd_vanish(gchar **argv, GString *out, const char *usage)
{
    gboolean ok = argv[1] && argv[2] && argv[3] && !argv[4] && strcmp(argv[2], "--back-on") == 0 &&
                  (strcmp(argv[3], "power-cycle") == 0 || strcmp(argv[3], "never") == 0);
    if (!ok) {
        reply_usage(out, usage);
        return;
    }
    Instance *inst = command_target(argv, out, usage);
    if (!inst)
        return;
    power_vanish(inst, strcmp(argv[3], "power-cycle") == 0);
    g_string_append(out, "ok\n");
}
