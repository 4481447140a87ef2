/*
 * accessory-sim: the control socket (control.c) and its commands
 * (commands.c), main thread.
 */
#ifndef ACCESSORY_SIM_CONTROL_H
#define ACCESSORY_SIM_CONTROL_H

#include "state.h"

/* Runs one command line; the reply goes to out. */
void commands_execute(const char *line, GString *out);

gboolean control_start(const char *path, char **error);
void control_stop(void);

#endif
