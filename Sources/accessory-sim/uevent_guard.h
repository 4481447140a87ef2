/*
 * accessory-sim: the uevent lock and the shared-socket guard (uevent_guard.c,
 * main thread).
 */
#ifndef ACCESSORY_SIM_UEVENT_GUARD_H
#define ACCESSORY_SIM_UEVENT_GUARD_H

#include "state.h"

gboolean uevent_guard_init(void);
void uevent_guard_shutdown(void);
/* umockdev_testbed_uevent() under the uevent lock, after a guard check */
void sim_uevent(const char *syspath, const char *action);
/* NULL when every uevent socket is its process's own, else what is wrong */
char *uevent_guard_check(guint *sockets);

#endif
