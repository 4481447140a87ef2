/*
 * libaccessory-sim-preload.so: one uevent socket name per process (issue #16).
 *
 * umockdev emulates the kernel's netlink uevent socket with an AF_UNIX
 * datagram socket bound at $UMOCKDEV_DIR/event<FD>, and unlinks whatever is
 * at that path first. Two processes that open their uevent socket under the
 * same fd number (two runs of one program do) share that name: the second
 * takes it over and the first never receives a uevent again.
 *
 * accessory-sim puts this library in LD_PRELOAD in front of
 * libumockdev-preload.so.0. Inside a testbed ($UMOCKDEV_DIR set) it takes the
 * uevent socket away from umockdev:
 *
 *   socket(AF_NETLINK, ..., NETLINK_KOBJECT_UEVENT)
 *       an AF_UNIX socket of the same type, made by libc (umockdev never
 *       sees it);
 *   bind() on it
 *       binds it at $UMOCKDEV_DIR/event00<PID, 7 digits><FD>, which
 *       umockdev's sender (it globs event[0-9]* for every uevent) reaches
 *       like its own sockets. A live socket already at that path is never
 *       taken over: bind fails with EADDRINUSE and says so on stderr;
 *   recvmsg() on it
 *       what umockdev's recvmsg does for its own sockets, which libudev
 *       needs to accept the message: the sender address becomes netlink
 *       (nl_pid 0, nl_groups 2, udev's group) and the SCM_CREDENTIALS uid 0;
 *   close() of it, and exit
 *       unlinks the socket file while holding the simulator's uevent lock
 *       (umockdev's sender aborts when a socket it globbed is gone before
 *       it connects). Without the lock file the file stays, and the sender
 *       removes it at the next uevent (ECONNREFUSED).
 *
 * Everything else goes on to the next definition (umockdev's wrappers, or
 * libc), so outside a testbed the library does nothing. Its own socket calls
 * go straight to libc, as umockdev's do, and its file calls are raw system
 * calls, which umockdev's path redirection does not see.
 */
#define _GNU_SOURCE
#include "accessory_sim_preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#define VISIBLE __attribute__((visibility("default")))
#define MAX_SOCKETS 32
#define UDEV_MONITOR_GROUP 2

typedef int (*socket_fn)(int, int, int);
typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);
typedef int (*close_fn)(int);

/* ---- the functions behind this one ------------------------------------------- */

static void *libc_handle(void)
{
    static void *handle;
    void *h = __atomic_load_n(&handle, __ATOMIC_ACQUIRE);
    if (!h) {
        h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            h = dlopen("libc.so.6", RTLD_LAZY);
        if (!h) {
            fprintf(stderr, "accessory-sim-preload: cannot open libc.so.6: %s\n", dlerror());
            abort();
        }
        __atomic_store_n(&handle, h, __ATOMIC_RELEASE);
    }
    return h;
}

/* Resolves a symbol once (racing threads store the same value). */
static void *resolve(void **slot, void *handle, const char *name)
{
    void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!f) {
        f = dlsym(handle, name);
        if (!f) {
            fprintf(stderr, "accessory-sim-preload: cannot find %s: %s\n", name, dlerror());
            abort();
        }
        __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    }
    return f;
}

/* libc_NAME(): libc's own NAME, past every preload; next_NAME(): the next
 * definition after this library (umockdev's wrapper, or libc's). */
#define LIBC(type, name)                                                                                     \
    static type libc_##name(void)                                                                            \
    {                                                                                                        \
        static void *slot;                                                                                   \
        return (type)resolve(&slot, libc_handle(), #name);                                                   \
    }
#define NEXT(type, name)                                                                                     \
    LIBC(type, name)                                                                                         \
    static type next_##name(void)                                                                            \
    {                                                                                                        \
        static void *slot;                                                                                   \
        return (type)resolve(&slot, RTLD_NEXT, #name);                                                       \
    }

NEXT(socket_fn, socket)
NEXT(bind_fn, bind)
LIBC(connect_fn, connect)
NEXT(recvmsg_fn, recvmsg)
NEXT(close_fn, close)

/* ---- the uevent sockets of this process ---------------------------------------- */

typedef struct {
    int fd;              /* -1: free slot */
    pid_t owner;         /* the process that bound it (a forked child must not unlink it) */
    dev_t dev;           /* the socket's identity, to notice an fd closed behind our back */
    ino_t ino;
    bool bound;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} UeventSocket;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static UeventSocket table[MAX_SOCKETS];
static int table_used; /* slots in use; read without the lock as a fast path */

static const char *testbed_dir(void)
{
    const char *dir = getenv("UMOCKDEV_DIR");
    return dir && *dir ? dir : NULL;
}

static bool identity(int fd, dev_t *dev, ino_t *ino)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return false;
    *dev = st.st_dev;
    *ino = st.st_ino;
    return true;
}

/* The slot of fd if it is still the socket this library made; table_lock held. */
static UeventSocket *find_locked(int fd)
{
    for (int i = 0; i < MAX_SOCKETS; i++) {
        if (table[i].fd != fd)
            continue;
        dev_t dev;
        ino_t ino;
        if (identity(fd, &dev, &ino) && dev == table[i].dev && ino == table[i].ino)
            return &table[i];
        table[i].fd = -1; /* the fd was closed some other way and reused */
        table_used--;
        return NULL;
    }
    return NULL;
}

static bool is_tracked(int fd, UeventSocket *copy)
{
    if (fd < 0 || __atomic_load_n(&table_used, __ATOMIC_ACQUIRE) == 0)
        return false;
    pthread_mutex_lock(&table_lock);
    UeventSocket *s = find_locked(fd);
    if (s && copy)
        *copy = *s;
    pthread_mutex_unlock(&table_lock);
    return s != NULL;
}

static void table_init(void)
{
    static bool done;
    if (done)
        return;
    for (int i = 0; i < MAX_SOCKETS; i++)
        table[i].fd = -1;
    done = true;
}

static bool track(int fd)
{
    bool ok = false;
    dev_t dev;
    ino_t ino;
    if (!identity(fd, &dev, &ino))
        return false;
    pthread_mutex_lock(&table_lock);
    table_init();
    (void)find_locked(fd); /* drops a stale entry with this number */
    for (int i = 0; i < MAX_SOCKETS && !ok; i++) {
        if (table[i].fd >= 0)
            continue;
        table[i] = (UeventSocket){.fd = fd, .owner = 0, .dev = dev, .ino = ino, .bound = false};
        __atomic_add_fetch(&table_used, 1, __ATOMIC_RELEASE);
        ok = true;
    }
    pthread_mutex_unlock(&table_lock);
    return ok;
}

/* ---- the simulator's uevent lock ------------------------------------------------ */

/* Takes the simulator's uevent lock; -1 when there is none (not under
 * accessory-sim) or it stays busy for a second. */
static int uevent_lock(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", dir, ACCESSORY_SIM_UEVENT_LOCK) >= (int)sizeof(path))
        return -1;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    for (int i = 0; i < 1000; i++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd;
        if (errno != EWOULDBLOCK && errno != EINTR)
            break;
        usleep(1000);
    }
    libc_close()(fd);
    return -1;
}

static void uevent_unlock(int fd)
{
    if (fd >= 0)
        libc_close()(fd); /* releases the flock */
}

static void unlink_socket_file(const char *path)
{
    const char *dir = testbed_dir();
    int lock = dir ? uevent_lock(dir) : -1;
    if (lock < 0)
        return; /* umockdev's sender removes it at the next uevent */
    syscall(SYS_unlinkat, AT_FDCWD, path, 0);
    uevent_unlock(lock);
}

/* Whether a socket at path accepts datagrams (a live listener). */
static bool socket_is_live(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    strcpy(sa.sun_path, path);
    int probe = libc_socket()(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (probe < 0)
        return false;
    bool live = libc_connect()(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    libc_close()(probe);
    return live;
}

/* ---- the interposed functions ------------------------------------------------------ */

VISIBLE int socket(int domain, int type, int protocol)
{
    if (domain != AF_NETLINK || protocol != NETLINK_KOBJECT_UEVENT || !testbed_dir())
        return next_socket()(domain, type, protocol);
    int fd = libc_socket()(AF_UNIX, type, 0);
    if (fd < 0)
        return fd;
    if (!track(fd)) {
        /* more uevent sockets than slots: leave this one to umockdev */
        libc_close()(fd);
        fprintf(stderr, "accessory-sim-preload: more than %d uevent sockets in process %d; "
                        "this one gets umockdev's per-fd name\n", MAX_SOCKETS, (int)getpid());
        return next_socket()(domain, type, protocol);
    }
    return fd;
}

VISIBLE int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    const char *dir = testbed_dir();
    if (!dir || !is_tracked(fd, NULL))
        return next_bind()(fd, addr, len);

    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/" ACCESSORY_SIM_UEVENT_PREFIX "%07d%d", dir,
                     (int)getpid(), fd);
    if (n < 0 || n >= (int)sizeof(sa.sun_path)) {
        fprintf(stderr, "accessory-sim-preload: the uevent socket path under %s is too long\n", dir);
        errno = ENAMETOOLONG;
        return -1;
    }
    int lock = uevent_lock(dir);
    struct stat st;
    if (syscall(SYS_newfstatat, AT_FDCWD, sa.sun_path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (socket_is_live(sa.sun_path)) {
            /* Never take over a live listener's socket: that is issue #16. */
            uevent_unlock(lock);
            fprintf(stderr, "accessory-sim-preload: ERROR: uevent socket %s is already bound by a live "
                            "process; not taking it over (it would stop receiving uevents)\n", sa.sun_path);
            errno = EADDRINUSE;
            return -1;
        }
        syscall(SYS_unlinkat, AT_FDCWD, sa.sun_path, 0); /* left by a dead process with our pid */
    }
    int rc = libc_bind()(fd, (struct sockaddr *)&sa, sizeof(sa));
    int saved = errno;
    uevent_unlock(lock);
    if (rc == 0) {
        pthread_mutex_lock(&table_lock);
        UeventSocket *s = find_locked(fd);
        if (s) {
            s->bound = true;
            s->owner = getpid();
            strcpy(s->path, sa.sun_path);
        }
        pthread_mutex_unlock(&table_lock);
    }
    errno = saved;
    return rc;
}

/* What the kernel would have said: from netlink (pid 0, the udev group), by root. */
static void fake_netlink_sender(struct msghdr *msg, socklen_t name_room)
{
    /* name_room: the caller's msg_namelen before the call (the kernel has set
     * it to the AF_UNIX sender's length, 0 for umockdev's unbound sender) */
    if (msg->msg_name && name_room >= sizeof(struct sockaddr_nl)) {
        struct sockaddr_nl nl;
        memset(&nl, 0, sizeof(nl));
        nl.nl_family = AF_NETLINK;
        nl.nl_pid = 0;
        nl.nl_groups = UDEV_MONITOR_GROUP;
        memcpy(msg->msg_name, &nl, sizeof(nl));
        msg->msg_namelen = sizeof(nl);
    }
    if (msg->msg_controllen == 0)
        return;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
            c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
            const uid_t root = 0;
            /* byte copy: CMSG_DATA need not be aligned for struct ucred */
            memcpy(CMSG_DATA(c) + offsetof(struct ucred, uid), &root, sizeof(root));
        }
    }
}

VISIBLE ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    if (!is_tracked(fd, NULL))
        return next_recvmsg()(fd, msg, flags);
    socklen_t name_room = msg->msg_namelen;
    ssize_t n = libc_recvmsg()(fd, msg, flags);
    if (n > 0)
        fake_netlink_sender(msg, name_room);
    return n;
}

VISIBLE int close(int fd)
{
    UeventSocket s;
    if (is_tracked(fd, &s)) {
        pthread_mutex_lock(&table_lock);
        UeventSocket *slot = find_locked(fd);
        if (slot) {
            slot->fd = -1;
            __atomic_sub_fetch(&table_used, 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&table_lock);
        if (s.bound && s.owner == getpid())
            unlink_socket_file(s.path);
    }
    return next_close()(fd);
}

/* At exit, the sockets still open: their files go (the sockets die with us). */
__attribute__((destructor)) static void remove_socket_files(void)
{
    char paths[MAX_SOCKETS][sizeof(((struct sockaddr_un *)0)->sun_path)];
    int count = 0;
    if (__atomic_load_n(&table_used, __ATOMIC_ACQUIRE) == 0)
        return;
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < MAX_SOCKETS; i++)
        if (table[i].fd >= 0 && table[i].bound && table[i].owner == getpid())
            strcpy(paths[count++], table[i].path);
    pthread_mutex_unlock(&table_lock);
    for (int i = 0; i < count; i++)
        unlink_socket_file(paths[i]);
}
