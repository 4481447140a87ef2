/*
 * Uevent delivery guard (issue #16).
 *
 * umockdev's sender delivers each uevent to every socket in the testbed named
 * event[0-9]*. umockdev's preload names a process's socket event<FD> and
 * unlinks whatever is there first, so two processes with the same fd number
 * shared one name and the first silently stopped receiving uevents. The
 * simulator's preload shim (Sources/AccessorySimPreload) names the socket
 * event00<PID><FD> instead. This file
 *
 *  - holds the uevent lock (ACCESSORY_SIM_UEVENT_LOCK) while umockdev sends a
 *    uevent: the sender globs the sockets, then connects to each one and
 *    aborts when one has vanished in between; the shim takes the lock to
 *    unlink its socket;
 *  - checks, at most every GUARD_INTERVAL and on "ctl uevent-check", that no
 *    two live sockets are bound at one event path (the kernel keeps listing
 *    a socket in /proc/net/unix under the path it was bound at, even after
 *    another process unlinked that path and took the name), and that every
 *    socket has the shim's name. A shared name is an error, reported on
 *    stderr and by "ctl uevent-check"; a socket with umockdev's own name (a
 *    process without the shim in LD_PRELOAD) is a warning.
 */
#define _GNU_SOURCE
#include "uevent_guard.h"
#include "../AccessorySimPreload/include/accessory_sim_preload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#define GUARD_INTERVAL_US (50 * 1000)

static int lock_fd = -1;
static gint64 last_check;
static GHashTable *reported; /* "path inode..." already reported */

gboolean uevent_guard_init(void)
{
    char *path = g_build_filename(sim.root, ACCESSORY_SIM_UEVENT_LOCK, NULL);
    /* raw system call: the simulator runs under umockdev's path redirection */
    lock_fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0)
        fprintf(stderr, "accessory-sim: cannot create %s: %s\n", path, g_strerror(errno));
    g_free(path);
    reported = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return lock_fd >= 0;
}

void uevent_guard_shutdown(void)
{
    if (lock_fd >= 0)
        close(lock_fd);
    lock_fd = -1;
    g_clear_pointer(&reported, g_hash_table_unref);
}

static gboolean is_own_name(const char *name)
{
    return g_str_has_prefix(name, ACCESSORY_SIM_UEVENT_PREFIX) && strlen(name) > strlen(ACCESSORY_SIM_UEVENT_PREFIX) + 7;
}

/* Reads /proc/net/unix: every bound socket under the testbed named event*,
 * as path -> GPtrArray of inode strings. */
static GHashTable *bound_event_sockets(void)
{
    GHashTable *byPath = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_ptr_array_unref);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/net/unix", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return byPath;
    GString *text = g_string_new(NULL);
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        g_string_append_len(text, buf, n);
    }
    close(fd);
    char *prefix = g_strdup_printf("%s/event", sim.root);
    gchar **lines = g_strsplit(text->str, "\n", -1);
    for (gchar **l = lines; *l; l++) {
        gchar **f = g_strsplit_set(*l, " ", -1);
        /* Num RefCount Protocol Flags Type St Inode Path, blanks collapsed */
        const char *fields[8];
        int k = 0;
        for (gchar **w = f; *w && k < 8; w++)
            if (**w)
                fields[k++] = *w;
        if (k == 8 && g_str_has_prefix(fields[7], prefix) && g_ascii_isdigit(fields[7][strlen(prefix)])) {
            GPtrArray *inodes = g_hash_table_lookup(byPath, fields[7]);
            if (!inodes) {
                inodes = g_ptr_array_new_with_free_func(g_free);
                g_hash_table_insert(byPath, g_strdup(fields[7]), inodes);
            }
            g_ptr_array_add(inodes, g_strdup(fields[6]));
        }
        g_strfreev(f);
    }
    g_strfreev(lines);
    g_free(prefix);
    g_string_free(text, TRUE);
    return byPath;
}

/* Checks the uevent sockets now; reports new problems on stderr and returns
 * them (NULL when there are none; the caller frees it). *sockets gets the
 * number of names checked. */
char *uevent_guard_check(guint *sockets)
{
    GHashTable *byPath = bound_event_sockets();
    GString *problems = g_string_new(NULL);
    GHashTableIter it;
    gpointer key, value;

    last_check = g_get_monotonic_time();
    if (sockets)
        *sockets = g_hash_table_size(byPath);
    g_hash_table_iter_init(&it, byPath);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        const char *path = key;
        GPtrArray *inodes = value;
        const char *name = strrchr(path, '/') + 1;
        GString *id = g_string_new(path);
        for (guint i = 0; i < inodes->len; i++)
            g_string_append_printf(id, " %s", (char *)g_ptr_array_index(inodes, i));
        gboolean fresh = reported && !g_hash_table_contains(reported, id->str);
        if (inodes->len > 1) {
            g_string_append_printf(problems, "%s%s shared by %u live sockets", problems->len ? "; " : "", name,
                                   inodes->len);
            if (fresh)
                fprintf(stderr,
                        "accessory-sim: ERROR: %u live processes' uevent sockets are bound at %s: only the last "
                        "one bound receives uevents, the others miss every plug and unplug (issue #16). "
                        "Run them under accessory-sim with libaccessory-sim-preload.so in LD_PRELOAD.\n",
                        inodes->len, path);
        } else if (!is_own_name(name)) {
            g_string_append_printf(problems, "%s%s has umockdev's per-fd name", problems->len ? "; " : "", name);
            if (fresh)
                fprintf(stderr,
                        "accessory-sim: WARNING: uevent socket %s has umockdev's per-fd name: its process runs "
                        "without libaccessory-sim-preload.so in front of libumockdev-preload.so.0, and another "
                        "process with the same fd number would take its uevents away (issue #16).\n",
                        path);
        }
        if (fresh && (inodes->len > 1 || !is_own_name(name)))
            g_hash_table_add(reported, g_string_free(id, FALSE));
        else
            g_string_free(id, TRUE);
    }
    g_hash_table_unref(byPath);
    if (problems->len == 0) {
        g_string_free(problems, TRUE);
        return NULL;
    }
    return g_string_free(problems, FALSE);
}

void sim_uevent(const char *syspath, const char *action)
{
    if (g_get_monotonic_time() - last_check >= GUARD_INTERVAL_US)
        g_free(uevent_guard_check(NULL));
    if (lock_fd >= 0)
        while (flock(lock_fd, LOCK_EX) < 0 && errno == EINTR) {
        }
    umockdev_testbed_uevent(sim.testbed, syspath, action);
    if (lock_fd >= 0)
        flock(lock_fd, LOCK_UN);
}
