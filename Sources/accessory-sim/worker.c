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

/* A call on the worker thread that another thread waits for. Both hold a
 * reference: a wait that gives up leaves nothing for the worker to find
 * freed, neither the call nor its data (freed by the last of the two). */
typedef struct {
    void (*fn)(gpointer data);
    gpointer data;
    GDestroyNotify destroy;
    GMutex mutex;
    GCond cond;
    gboolean done;
    gint refs;
} WorkerCall;

static void call_unref(WorkerCall *c)
{
    if (g_atomic_int_dec_and_test(&c->refs)) {
        if (c->destroy)
            c->destroy(c->data);
        g_mutex_clear(&c->mutex);
        g_cond_clear(&c->cond);
        g_free(c);
    }
}

static gboolean call_cb(gpointer data)
{
    WorkerCall *c = data;
    if (c->fn)
        c->fn(c->data);
    g_mutex_lock(&c->mutex);
    c->done = TRUE;
    g_cond_signal(&c->cond);
    g_mutex_unlock(&c->mutex);
    return G_SOURCE_REMOVE;
}

gboolean worker_run(void (*fn)(gpointer data), gpointer data, GDestroyNotify destroy, gint64 timeout_us)
{
    if (!sim.worker_ctx) {
        if (destroy)
            destroy(data);
        return FALSE;
    }
    WorkerCall *c = g_new0(WorkerCall, 1);
    c->fn = fn;
    c->data = data;
    c->destroy = destroy;
    g_mutex_init(&c->mutex);
    g_cond_init(&c->cond);
    c->refs = 2; /* this wait's, and the worker's (dropped once its callback has run) */
    g_main_context_invoke_full(sim.worker_ctx, G_PRIORITY_DEFAULT, call_cb, c, (GDestroyNotify)call_unref);
    gint64 end = g_get_monotonic_time() + timeout_us;
    g_mutex_lock(&c->mutex);
    while (!c->done && g_cond_wait_until(&c->cond, &c->mutex, end))
        ;
    gboolean done = c->done;
    g_mutex_unlock(&c->mutex);
    call_unref(c);
    return done;
}

void worker_barrier(void)
{
    worker_run(NULL, NULL, NULL, 5 * G_TIME_SPAN_SECOND);
}
