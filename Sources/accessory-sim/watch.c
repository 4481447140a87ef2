/*
 * accessory-sim: inotify on the testbed's writable sysfs files (see watch.h).
 * The simulator's own writes come through too; the handler compares the
 * value with its state, so that a write of what already is changes nothing.
 */
#define _GNU_SOURCE
#include "watch.h"

#include <errno.h>
#include <glib-unix.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <unistd.h>

static int inotify_fd = -1;
static GHashTable *dirs; /* wd -> char* dir */
static void (*write_handler)(const char *dir, const char *name);

static gboolean on_inotify(gint fd, GIOCondition cond, gpointer data)
{
    (void)cond, (void)data;
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n = read(fd, buf, sizeof(buf));
    for (char *p = buf; n > 0 && p < buf + n;) {
        const struct inotify_event *ev = (const struct inotify_event *)p;
        p += sizeof(struct inotify_event) + ev->len;
        if (ev->mask & IN_IGNORED) {
            g_hash_table_remove(dirs, GINT_TO_POINTER(ev->wd));
            continue;
        }
        const char *dir = g_hash_table_lookup(dirs, GINT_TO_POINTER(ev->wd));
        if (dir && ev->len > 0 && (ev->mask & IN_CLOSE_WRITE) && write_handler) {
            char *copy = g_strdup(dir);
            write_handler(copy, ev->name);
            g_free(copy);
        }
    }
    return G_SOURCE_CONTINUE;
}

void watch_init(void (*handler)(const char *dir, const char *name))
{
    write_handler = handler;
    dirs = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd < 0) {
        g_printerr("accessory-sim: warning: no inotify (%s): writes to sysfs files go unnoticed\n", g_strerror(errno));
        return;
    }
    g_unix_fd_add(inotify_fd, G_IO_IN, on_inotify, NULL);
}

void watch_dir(const char *dir)
{
    if (inotify_fd < 0)
        return;
    int wd = inotify_add_watch(inotify_fd, dir, IN_CLOSE_WRITE);
    if (wd < 0) {
        g_printerr("accessory-sim: warning: cannot watch %s: %s\n", dir, g_strerror(errno));
        return;
    }
    g_hash_table_replace(dirs, GINT_TO_POINTER(wd), g_strdup(dir));
}

int watch_read_flag(const char *dir, const char *name)
{
    char *path = g_build_filename(dir, name, NULL);
    char *text = NULL;
    int value = -1;
    if (g_file_get_contents(path, &text, NULL, NULL)) {
        char *end = NULL;
        long v = strtol(g_strstrip(text), &end, 10);
        if (end && end != text && *end == '\0')
            value = (int)v;
    }
    g_free(text);
    g_free(path);
    return value;
}
