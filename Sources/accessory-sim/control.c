/*
 * accessory-sim: the control socket ($ACCESSORY_SIM_SOCKET); the commands
 * are in commands.c.
 *
 * Protocol: the client sends one line, the command and its arguments
 * separated by blanks, and may then shut down its writing side. The
 * simulator answers with one or more lines and closes the connection.
 * Replies start with "ok" or "error", except for "list", which prints one
 * line per accessory and nothing else, and "aoa-strings" (six lines).
 *
 *   plug SPEC [--port P] [--silent]   -> ok BUS ADDRESS PORT
 *       SPEC is VID:PID[:SERIAL[:PROTOCOL]][,OPTION]... (an empty PROTOCOL: the
 *       kind's default); options, unknown ones are errors:
 *       ",interface=N" the loopback interface's bInterfaceNumber, 0-255;
 *       ",interrupt" the loopback with interrupt OUT 0x01 / IN 0x81 (64 bytes,
 *         bInterval 1) instead of bulk, still echoed; an INTERRUPT URB on a bulk
 *         endpoint fails with EINVAL, a BULK URB on an interrupt one runs as interrupt;
 *       ",noname" the loopback interface without a string (iInterface 0), as most
 *         real devices' interfaces are: a protocol rule or its number opens it;
 *       ",android" an Android phone (Google "Pixel 8", one MTP interface: bulk
 *         0x81/0x01, interrupt 0x82; no echo) speaking Android Open Accessory 2:
 *         GET_PROTOCOL (51) -> 2, SEND_STRING (52) index 0-5, START (53) -> ~20 ms
 *         later it leaves and comes back on its port at the next address as
 *         18d1:2d01 (interface 0 accessory, echoing bulk 0x81/0x01; interface 1 adb,
 *         bulk 0x82/0x02) with the strings it got; see android.c
 *   plug-hub PORT NPORTS              -> ok BUS ADDRESS PORT: a USB 2.0 hub (05e3:0608)
 *       with ports PORT.1 ... PORT.NPORTS; hubs nest
 *   unplug BUS:ADDRESS [--silent]     -> ok (a hub: everything behind it first, deepest
 *       first, each with its uevent, then the hub)
 *   unplug BUS:ADDRESS --urbs-first [--uevent-delay MS] -> ok, once the remove
 *       uevent is sent: the pending URBs fail first (OUT -ESHUTDOWN, IN -EPROTO),
 *       then sysfs's listing and the node go, and MS ms later the uevent
 *   replug BUS:ADDRESS [--silent]     -> ok BUS ADDRESS PORT
 *   storm BUS:ADDRESS N [--lossy SEED] -> ok BUS ADDRESS PORT [sent=S lost=L overflows=O]
 *   fault BUS:ADDRESS stall|timeout|unplug-after=BYTES|no-node|none -> ok
 *       (no-node: only the /dev node goes; sysfs still lists the device)
 *   list                              -> BUS ADDRESS PORT VID:PID SERIAL...
 *   aoa-strings BUS:ADDRESS           -> six lines "INDEX STRING" (INDEX 0-5, nothing
 *       after the blank for a string never sent), no ok line; an ",android" phone or
 *       the 18d1:2d01 instance it became, else error
 *   ioctl-log BUS:ADDRESS             -> ok open=N opens=N claimed=LIST ...
 *       ... bulk_urbs=N interrupt_urbs=N control_urbs=N (URBs by the type they ran as)
 *   kernel-driver BUS:ADDRESS IFACE NAME|-  -> ok
 *   uevent-check                      -> ok sockets=N | error WHAT (issue #16)
 *   help                              -> ok, then this list
 *
 * Extras beyond the documented contract: "plug --silent" (attach with no
 * uevent), "storm ... --lossy SEED" (a seeded mix of lost uevents and
 * overflows), "fault ... none" (clear a scripted fault), "ioctl-log",
 * "kernel-driver", "uevent-check" and "help". "uevent-check" fails when two live
 * uevent sockets share one name, or a socket has umockdev's per-fd name (a
 * process without libaccessory-sim-preload.so): see uevent_guard.c.
 */
#define _GNU_SOURCE
#include "control.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int listen_fd = -1;
static guint listen_src;
static char *listen_path;

typedef struct {
    int fd;
    GString *in;
} Conn;

/* ---- socket ------------------------------------------------------------------ */

static void write_all(int fd, const char *data, gsize len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return; /* the client went away */
        }
        data += n;
        len -= (gsize)n;
    }
}

static gboolean on_conn(int fd, GIOCondition cond, gpointer user)
{
    Conn *conn = user;
    char buf[4096];
    ssize_t n = 0;
    (void)cond;

    n = read(fd, buf, sizeof(buf));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return G_SOURCE_CONTINUE;
    if (n > 0) {
        g_string_append_len(conn->in, buf, n);
        if (!memchr(conn->in->str, '\n', conn->in->len) && conn->in->len < 65536)
            return G_SOURCE_CONTINUE;
    }
    /* a full line, or end of input */
    char *nl = memchr(conn->in->str, '\n', conn->in->len);
    if (nl)
        g_string_truncate(conn->in, (gsize)(nl - conn->in->str));
    if (conn->in->len > 0 || n > 0) {
        GString *out = g_string_new(NULL);
        int flags = fcntl(fd, F_GETFL);
        commands_execute(conn->in->str, out);
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
        write_all(fd, out->str, out->len);
        g_string_free(out, TRUE);
    }
    close(fd);
    g_string_free(conn->in, TRUE);
    g_free(conn);
    return G_SOURCE_REMOVE;
}

static gboolean on_accept(int fd, GIOCondition cond, gpointer user)
{
    (void)cond;
    (void)user;
    int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0)
        return G_SOURCE_CONTINUE;
    Conn *conn = g_new0(Conn, 1);
    conn->fd = c;
    conn->in = g_string_new(NULL);
    g_unix_fd_add(c, G_IO_IN | G_IO_HUP | G_IO_ERR, on_conn, conn);
    return G_SOURCE_CONTINUE;
}

gboolean control_start(const char *path, char **error)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        *error = g_strdup_printf("socket path too long: %s", path);
        return FALSE;
    }
    strcpy(sa.sun_path, path);
    listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(listen_fd, 64) < 0) {
        *error = g_strdup_printf("cannot listen on %s: %s", path, g_strerror(errno));
        if (listen_fd >= 0)
            close(listen_fd);
        listen_fd = -1;
        return FALSE;
    }
    listen_path = g_strdup(path);
    listen_src = g_unix_fd_add(listen_fd, G_IO_IN, on_accept, NULL);
    return TRUE;
}

void control_stop(void)
{
    if (listen_src)
        g_source_remove(listen_src);
    listen_src = 0;
    if (listen_fd >= 0)
        close(listen_fd);
    listen_fd = -1;
    if (listen_path)
        unlink(listen_path);
    g_clear_pointer(&listen_path, g_free);
}
