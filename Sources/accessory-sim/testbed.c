/*
 * accessory-sim: files in the testbed directory (sim.root).
 *
 * The simulator itself runs under libumockdev-preload, whose wrappers make
 * every libc file call check the testbed first; plain system calls keep a
 * plug or unplug (about a hundred file operations) well under a
 * millisecond's worth of wrapper overhead. Removed trees are renamed away
 * (so they vanish at once) and deleted by a thread of their own.
 */
#define _GNU_SOURCE
#include "testbed.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

char *tb_path(const char *rel)
{
    return g_build_filename(sim.root, rel, NULL);
}

static int raw_open(const char *path, int flags, int mode)
{
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static int raw_mkdir(const char *path, int mode)
{
    return (int)syscall(SYS_mkdirat, AT_FDCWD, path, mode);
}

int tb_raw_unlink(const char *path, int flags)
{
    return (int)syscall(SYS_unlinkat, AT_FDCWD, path, flags);
}

void tb_mkdir_p(const char *path)
{
    if (raw_mkdir(path, 0755) == 0 || errno == EEXIST)
        return;
    if (errno == ENOENT) {
        char *parent = g_path_get_dirname(path);
        if (strcmp(parent, path) != 0)
            tb_mkdir_p(parent);
        g_free(parent);
        if (raw_mkdir(path, 0755) == 0 || errno == EEXIST)
            return;
    }
    g_printerr("accessory-sim: cannot create %s: %s\n", path, g_strerror(errno));
}

/* rm -r without following symlinks */
void tb_remove_tree(const char *path)
{
    int fd = raw_open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0) {
        if (tb_raw_unlink(path, 0) < 0 && errno != ENOENT)
            g_printerr("accessory-sim: cannot remove %s: %s\n", path, g_strerror(errno));
        return;
    }
    char buf[8192];
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct dirent64 *de = (struct dirent64 *)(buf + off);
            off += de->d_reclen;
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            g_ptr_array_add(names, g_build_filename(path, de->d_name, NULL));
        }
    }
    syscall(SYS_close, fd);
    for (guint i = 0; i < names->len; i++)
        tb_remove_tree(g_ptr_array_index(names, i));
    g_ptr_array_unref(names);
    if (tb_raw_unlink(path, AT_REMOVEDIR) < 0 && errno != ENOENT)
        g_printerr("accessory-sim: cannot remove %s: %s\n", path, g_strerror(errno));
}

void tb_write_file(const char *path, const void *data, gsize len)
{
    int fd = raw_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        g_printerr("accessory-sim: cannot write %s: %s\n", path, g_strerror(errno));
        return;
    }
    const char *p = data;
    while (len > 0) {
        long n = syscall(SYS_write, fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            g_printerr("accessory-sim: cannot write %s: %s\n", path, g_strerror(errno));
            break;
        }
        p += n;
        len -= (gsize)n;
    }
    syscall(SYS_close, fd);
}

/* A symlink PATH -> TARGET, replacing what was there. */
static void make_link(const char *target, const char *path)
{
    if (tb_raw_unlink(path, 0) < 0 && errno != ENOENT)
        g_printerr("accessory-sim: cannot remove %s: %s\n", path, g_strerror(errno));
    if (syscall(SYS_symlinkat, target, AT_FDCWD, path) < 0)
        g_printerr("accessory-sim: cannot link %s: %s\n", path, g_strerror(errno));
}

/* DIR/NAME from a printf-formatted text: a file holding it (tb_attr) or a
 * symlink to it (tb_link). */
static void G_GNUC_PRINTF(4, 0)
    make_formatted(gboolean as_link, const char *dir, const char *name, const char *fmt, va_list ap)
{
    char *text = g_strdup_vprintf(fmt, ap);
    char *path = g_build_filename(dir, name, NULL);
    if (as_link)
        make_link(text, path);
    else
        tb_write_file(path, text, strlen(text));
    g_free(path);
    g_free(text);
}

void tb_attr(const char *dir, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    make_formatted(FALSE, dir, name, fmt, ap);
    va_end(ap);
}

void tb_link(const char *dir, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    make_formatted(TRUE, dir, name, fmt, ap);
    va_end(ap);
}

/* "../" repeated once per path component below /sys of a /sys/... path. */
char *tb_up_to_sys(const char *syspath)
{
    GString *s = g_string_new(NULL);
    for (const char *p = syspath + strlen("/sys"); *p; p++)
        if (*p == '/')
            g_string_append(s, "../");
    return g_string_free(s, FALSE);
}
/* ---- deferred deletion -------------------------------------------------- */

/* Removed device directories are renamed away (so they vanish at once) and
 * deleted by this thread, off the control path. */
static GThread *trash_thread;
static GAsyncQueue *trash_queue;
static guint trash_serial;
static char *const trash_stop = (char *)"";

static gpointer trash_main(gpointer data)
{
    (void)data;
    for (;;) {
        char *path = g_async_queue_pop(trash_queue);
        if (path == trash_stop)
            return NULL;
        tb_remove_tree(path);
        g_free(path);
    }
}

void tb_trash_tree(const char *path)
{
    char *dest = g_strdup_printf("%s/.trash/%u", sim.root, ++trash_serial);
    if (rename(path, dest) == 0) {
        g_async_queue_push(trash_queue, dest);
    } else {
        g_free(dest);
        tb_remove_tree(path);
    }
}


void tb_unlink(const char *rel)
{
    char *path = tb_path(rel);
    if (tb_raw_unlink(path, 0) < 0 && errno != ENOENT)
        g_printerr("accessory-sim: cannot remove %s: %s\n", path, g_strerror(errno));
    g_free(path);
}


void tb_init(void)
{
    char *trash = g_build_filename(sim.root, ".trash", NULL);
    tb_mkdir_p(trash);
    g_free(trash);
    trash_queue = g_async_queue_new();
    trash_thread = g_thread_new("accessory-sim-trash", trash_main, NULL);
}

void tb_shutdown(void)
{
    if (trash_thread) {
        g_async_queue_push(trash_queue, trash_stop);
        g_thread_join(trash_thread);
        trash_thread = NULL;
        g_async_queue_unref(trash_queue);
        trash_queue = NULL;
    }
}
