/*
 * accessory-sim: files in the testbed directory (testbed.c), by raw system
 * calls (main thread).
 */
#ifndef ACCESSORY_SIM_TESTBED_H
#define ACCESSORY_SIM_TESTBED_H

#include "state.h"

/* Starts and stops the thread that deletes removed trees. */
void tb_init(void);
void tb_shutdown(void);
/* sim.root + REL */
char *tb_path(const char *rel);
int tb_raw_unlink(const char *path, int flags);
/* Unlinks sim.root + REL (missing is fine). */
void tb_unlink(const char *rel);
void tb_mkdir_p(const char *path);
/* rm -r without following symlinks */
void tb_remove_tree(const char *path);
/* Renames PATH away at once; the tree is deleted later. */
void tb_trash_tree(const char *path);
void tb_write_file(const char *path, const void *data, gsize len);
/* Writes DIR/NAME with a printf-formatted value. */
void tb_attr(const char *dir, const char *name, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* A symlink DIR/NAME -> a printf-formatted target, replacing what was there. */
void tb_link(const char *dir, const char *name, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* "../" repeated once per path component below /sys of a /sys/... path. */
char *tb_up_to_sys(const char *syspath);

#endif
