/*
 * accessory-sim: what the control socket's command files share
 * (commands_args.c, commands_plug.c, commands_device.c, commands.c).
 * Main thread.
 */
#ifndef ACCESSORY_SIM_COMMANDS_INTERNAL_H
#define ACCESSORY_SIM_COMMANDS_INTERNAL_H

#include "state.h"

/* One command. argv is the line's words (argv[0] the command's name, NULL
 * after the last); usage is the command's line of "help", from the table in
 * commands.c; the reply is appended to out. */
typedef void CommandFn(gchar **argv, GString *out, const char *usage);

/* commands_args.c: the arguments and replies the commands share */
/* "error usage: USAGE" */
void reply_usage(GString *out, const char *usage);
/* "error MESSAGE"; frees message. */
void reply_error(GString *out, char *message);
/* "ok BUS ADDRESS PORT" */
void reply_instance(GString *out, const Instance *inst);
/* The device that argv[1] (BUS:ADDRESS) names, or NULL after the error reply. */
Instance *command_target(gchar **argv, GString *out, const char *usage);

/* commands_plug.c: what is plugged where */
CommandFn cmd_plug, cmd_plug_hub, cmd_unplug, cmd_replug, cmd_storm, cmd_list;

/* commands_device.c: one device's faults and pretend drivers, and what it saw */
CommandFn cmd_fault, cmd_kernel_driver, cmd_ioctl_log, cmd_aoa_strings;

/* commands_power.c: port power, and devices that need it */
CommandFn cmd_power, cmd_power_log, cmd_wedge, cmd_vanish;

#endif
