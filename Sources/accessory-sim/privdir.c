/*
 * accessory-sim: the simulator's private directories (one for the testbed
 * and the control socket, on a tmpfs when there is one; one as COMMAND's
 * TMPDIR), each with an owner file so that a later simulator removes what a
 * killed one left behind.
 */
#define _GNU_SOURCE
#include "process.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void privdir_remove(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static gboolean is_tmpfs_dir(const char *path)
{
    struct statfs fs;
    return path && *path && statfs(path, &fs) == 0 && fs.f_type == TMPFS_MAGIC && access(path, W_OK | X_OK) == 0;
}

/* The testbed is thousands of small files written and removed on every
 * plug/unplug; on a disk file system that costs milliseconds per device,
 * so it goes on a tmpfs when there is one. */
const char *privdir_testbed_base(const char *tmpdir)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (is_tmpfs_dir(tmpdir))
        return tmpdir;
    if (is_tmpfs_dir(xdg))
        return xdg;
    if (is_tmpfs_dir("/dev/shm"))
        return "/dev/shm";
    return tmpdir;
}

#define OWNER_FILE ".accessory-sim-owner"

/* The kernel's start time of a process (field 22 of /proc/PID/stat), which
 * tells a live owner from a recycled PID; 0 if there is no such process. */
static unsigned long long process_start_time(long pid)
{
    char path[64], *text = NULL, *p;
    unsigned long long start = 0;
    g_snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    p = strrchr(text, ')'); /* the command name may contain anything */
    if (p) {
        gchar **fields = g_strsplit(p + 2, " ", 0);
        if (g_strv_length(fields) > 19)
            start = g_ascii_strtoull(fields[19], NULL, 10);
        g_strfreev(fields);
    }
    g_free(text);
    return start;
}

static void write_owner(const char *dir)
{
    char *path = g_build_filename(dir, OWNER_FILE, NULL);
    char *text = g_strdup_printf("%ld %llu\n", (long)getpid(), process_start_time((long)getpid()));
    if (!g_file_set_contents(path, text, -1, NULL))
        fprintf(stderr, "accessory-sim: cannot write %s\n", path);
    g_free(text);
    g_free(path);
}

/* Removes directories left behind by simulators that were killed (SIGKILL
 * skips the clean-up): PREFIX.* in BASE whose owner process is gone. */
static void sweep_stale(const char *base, const char *prefix)
{
    GDir *d = g_dir_open(base, 0, NULL);
    const char *name;
    char *want = g_strdup_printf("%s.", prefix);
    if (!d) {
        g_free(want);
        return;
    }
    while ((name = g_dir_read_name(d)) != NULL) {
        if (!g_str_has_prefix(name, want) || strlen(name) != strlen(want) + 6)
            continue;
        char *dir = g_build_filename(base, name, NULL);
        char *owner = g_build_filename(dir, OWNER_FILE, NULL);
        char *text = NULL;
        long pid = 0;
        unsigned long long start = 0;
        if (g_file_get_contents(owner, &text, NULL, NULL) && sscanf(text, "%ld %llu", &pid, &start) == 2 &&
            pid > 0 && process_start_time(pid) != start)
            privdir_remove(dir);
        g_free(text);
        g_free(owner);
        g_free(dir);
    }
    g_dir_close(d);
    g_free(want);
}

char *privdir_make(const char *base, const char *prefix)
{
    char *tmpl;
    struct sockaddr_un sa;

    tmpl = g_strdup_printf("%s/%s.XXXXXX", base, prefix);
    /* the control socket must fit in sun_path */
    if (strlen(tmpl) + strlen("/ctl.sock") >= sizeof(sa.sun_path)) {
        g_free(tmpl);
        tmpl = g_strdup_printf("/tmp/%s.XXXXXX", prefix);
    }
    char *parent = g_path_get_dirname(tmpl);
    sweep_stale(parent, prefix);
    g_free(parent);
    if (!mkdtemp(tmpl)) {
        fprintf(stderr, "accessory-sim: cannot create a directory in %s: %s\n", base, g_strerror(errno));
        g_free(tmpl);
        return NULL;
    }
    write_owner(tmpl);
    return tmpl;
}

/* The simulator's own preload shim (Sources/AccessorySimPreload), which must
 * sit in front of umockdev's in LD_PRELOAD: it gives every process's uevent
 * socket a name of its own (issue #16). SwiftPM builds it beside this binary. */
