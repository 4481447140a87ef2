/*
 * accessory-sim: the control socket's commands (see control.c for the
 * protocol). One table names them all: each command's name, the function
 * that runs it, and its usage line, from which both "help" and the command's
 * "error usage:" replies are written. The commands are in commands_plug.c
 * (what is plugged where) and commands_device.c (one device's faults,
 * drivers and logs): each parses its arguments and calls the layers below
 * (main thread).
 */
#define _GNU_SOURCE
#include "commands_internal.h"
#include "control.h"
#include "uevent_guard.h"

#include <string.h>

static CommandFn cmd_uevent_check, cmd_help;

static const struct {
    const char *name;
    CommandFn *run;
    const char *usage; /* its line of "help", and what its "error usage:" says */
} commands[] = {
    {"plug", cmd_plug, "plug VID:PID[:SERIAL[:PROTOCOL]][,interface=N][,interrupt][,noname][,android] [--port P] [--silent]"},
    {"plug-hub", cmd_plug_hub, "plug-hub PORT NPORTS [--power per-port|ganged|none] [--usb3] [--no-disable]"},
    {"unplug", cmd_unplug, "unplug BUS:ADDRESS [--silent | --urbs-first [--uevent-delay MS]]"},
    {"replug", cmd_replug, "replug BUS:ADDRESS [--silent]"},
    {"storm", cmd_storm, "storm BUS:ADDRESS N [--lossy SEED]"},
    {"fault", cmd_fault, "fault BUS:ADDRESS stall|timeout|unplug-after=BYTES|no-node|none"},
    {"list", cmd_list, "list"},
    {"power", cmd_power, "power PORT on|off"},
    {"power-log", cmd_power_log, "power-log"},
    {"wedge", cmd_wedge, "wedge BUS:ADDRESS --cured-by reset|reauthorize|power-cycle|never"},
    {"vanish", cmd_vanish, "vanish BUS:ADDRESS --back-on power-cycle|never"},
    {"aoa-strings", cmd_aoa_strings, "aoa-strings BUS:ADDRESS"},
    {"ioctl-log", cmd_ioctl_log, "ioctl-log BUS:ADDRESS"},
    {"kernel-driver", cmd_kernel_driver, "kernel-driver BUS:ADDRESS IFACE NAME|-"},
    {"uevent-check", cmd_uevent_check, "uevent-check"},
    {"help", cmd_help, "help"},
};

static void cmd_uevent_check(gchar **argv, GString *out, const char *usage)
{
    if (argv[1]) {
        reply_usage(out, usage);
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

/* "ok", then every command's usage line (arguments are ignored). */
static void cmd_help(gchar **argv, GString *out, const char *usage)
{
    (void)argv, (void)usage;
    g_string_append(out, "ok\n");
    for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
        g_string_append_printf(out, "%s\n", commands[i].usage);
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
    gsize i = 0;

    sim_log("ctl: %s", line);
    while (i < G_N_ELEMENTS(commands) && strcmp(cmd, commands[i].name) != 0)
        i++;
    if (i < G_N_ELEMENTS(commands)) {
        commands[i].run(argv, out, commands[i].usage);
    } else {
        g_string_append_printf(out, "error usage: unknown command '%s' (", cmd);
        for (i = 0; i < G_N_ELEMENTS(commands); i++)
            g_string_append_printf(out, "%s%s", i ? ", " : "", commands[i].name);
        g_string_append(out, ")\n");
    }
    g_ptr_array_unref(args);
    g_strfreev(parts);
}
