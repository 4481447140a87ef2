/*
 * accessory-sim: the process around the simulator: the ctl client
 * (ctl_client.c) and the private directories (privdir.c). main.c uses them.
 */
#ifndef ACCESSORY_SIM_PROCESS_H
#define ACCESSORY_SIM_PROCESS_H

#include <glib.h>

/* "accessory-sim ctl CMD [ARGS...]" (argc >= 1): its exit status. */
int ctl_client_main(int argc, char **argv);

/* Where the testbed goes: a tmpfs if TMPDIR, $XDG_RUNTIME_DIR or /dev/shm is one, else TMPDIR. */
const char *privdir_testbed_base(const char *tmpdir);
/* BASE/PREFIX.XXXXXX (or /tmp/... if the control socket's path would not fit),
 * after removing stale ones; NULL (reported) if it cannot be made. */
char *privdir_make(const char *base, const char *prefix);
/* rm -r without following symlinks */
void privdir_remove(const char *path);

#endif
