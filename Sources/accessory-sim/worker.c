/*
 * accessory-sim: umockdev's worker thread, which runs every usbdevfs ioctl.
 * umockdev has no API for its main context; it is learned once at start-up
 * (sim.worker_ctx), so that URB work can be queued there and the main
 * thread can wait until the worker has caught up.
 */
#define _GNU_SOURCE
#include "state.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static GMutex worker_mutex;
static GCond worker_cond;

void worker_note_context(void)
{
    g_mutex_lock(&worker_mutex);
    if (!sim.worker_ctx) {
        sim.worker_ctx = g_main_context_ref_thread_default();
        g_cond_broadcast(&worker_cond);
    }
    g_mutex_unlock(&worker_mutex);
}

gboolean worker_capture(const char *devnode)
{
    /* umockdev has no API for its worker context; open a connection to an
     * ioctl socket like a client would, and note the thread-default
     * context when umockdev reports the client. */
    struct sockaddr_un sa;
    char *path = g_strdup_printf("%s/ioctl%s", sim.root, devnode);
    gboolean ok = FALSE;
    int fd = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    g_strlcpy(sa.sun_path, path, sizeof(sa.sun_path));
    if (fd >= 0 && syscall(SYS_connect, fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        gint64 end = g_get_monotonic_time() + 5 * G_TIME_SPAN_SECOND;
        g_mutex_lock(&worker_mutex);
        while (!sim.worker_ctx && g_cond_wait_until(&worker_cond, &worker_mutex, end))
            ;
        ok = sim.worker_ctx != NULL;
        g_mutex_unlock(&worker_mutex);
    }
    if (fd >= 0)
        syscall(SYS_close, fd);
    g_free(path);
    return ok;
}

typedef struct {
    GMutex mutex;
    GCond cond;
    gboolean done;
    gint refs;
} Barrier;

static void barrier_unref(Barrier *b)
{
    if (g_atomic_int_dec_and_test(&b->refs)) {
        g_mutex_clear(&b->mutex);
        g_cond_clear(&b->cond);
        g_free(b);
    }
}

static gboolean barrier_cb(gpointer data)
{
    Barrier *b = data;
    g_mutex_lock(&b->mutex);
    b->done = TRUE;
    g_cond_signal(&b->cond);
    g_mutex_unlock(&b->mutex);
    return G_SOURCE_REMOVE;
}

void worker_barrier(void)
{
    if (!sim.worker_ctx)
        return;
    Barrier *b = g_new0(Barrier, 1);
    g_mutex_init(&b->mutex);
    g_cond_init(&b->cond);
    b->refs = 2;
    g_main_context_invoke_full(sim.worker_ctx, G_PRIORITY_DEFAULT, barrier_cb, b, (GDestroyNotify)barrier_unref);
    gint64 end = g_get_monotonic_time() + 5 * G_TIME_SPAN_SECOND;
    g_mutex_lock(&b->mutex);
    while (!b->done && g_cond_wait_until(&b->cond, &b->mutex, end))
        ;
    g_mutex_unlock(&b->mutex);
    barrier_unref(b);
}
