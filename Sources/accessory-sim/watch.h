/*
 * accessory-sim: sysfs files that clients write (watch.c). Under umockdev a
 * write to /sys lands in the testbed directory as a plain file write, so the
 * simulator learns of it through inotify: a hub port's `disable` and a
 * device's `authorized`. Main thread.
 */
#ifndef ACCESSORY_SIM_WATCH_H
#define ACCESSORY_SIM_WATCH_H

#include "state.h"

/* Starts watching (on the main context); handler(dir, name) runs after a
 * client closed the file NAME it wrote in the watched directory DIR (the
 * testbed path). */
void watch_init(void (*handler)(const char *dir, const char *name));
/* Watches one directory of the testbed (absolute path) until it is removed. */
void watch_dir(const char *dir);
/* The value a watched attribute holds now: its first line as a number, or -1. */
int watch_read_flag(const char *dir, const char *name);

#endif
