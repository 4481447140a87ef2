/* A libusb client that keeps the simulator's usbdevfs handler busy while a storm unplugs
 * and replugs its devices (scripts/sanitize accessory-sim).
 *
 *   storm-client [--seconds N] [--depth D] [--no-hotplug] [--watch-only]
 *
 * It takes every loopback (1209:*) it can, two ways, and keeps transfers in flight on
 * each until the device goes:
 *   - hotplug: libusb's ARRIVED callback only queues the device (libusb forbids I/O in
 *     the callback); the main loop opens it (--no-hotplug: no hotplug, no uevent socket);
 *   - sysfs: every 10 ms it scans /sys/bus/usb/devices for devices it holds no handle on
 *     (a lossy storm loses their add events), opens /dev/bus/usb/BBB/DDD itself and hands
 *     the descriptor to libusb_wrap_sys_device.
 * On each handle: a claim of interface 0 (another client may hold it: EBUSY, and the
 * handle closes), D bulk OUT transfers on 0x01 and D bulk IN transfers on 0x81 and one
 * GET_DESCRIPTOR control transfer, each resubmitted from its callback; the first error
 * (NO_DEVICE, the simulator's ENODEV, a cancel) cancels the rest, and the handle is
 * released and closed once every transfer has called back. Errors are expected (the
 * device vanishes under it); only a failure to start counts. --watch-only: hotplug alone.
 *
 * Runs until SIGTERM/SIGINT, N seconds, or MAX_FAILED_OPENS failed opens (see there),
 * then prints one line:
 *   storm-client: opens=O hotplug=H scanned=S transfers=T errors=E failed-opens=F
 * and exits 0 (1 if libusb could not start).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libusb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_HANDLES 16
#define MAX_DEPTH 8
#define EP_OUT 0x01
#define EP_IN 0x81

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

typedef struct Slot Slot;
struct Slot {
    int used;
    int bus, addr;
    int fd; /* ours when wrapped from sysfs, else -1 */
    libusb_device_handle *h;
    int claimed;
    int dead;     /* a transfer ended with an error: submit no more */
    int inflight; /* transfers not yet called back */
    struct libusb_transfer *xfers[2 * MAX_DEPTH + 1];
    unsigned char bufs[2 * MAX_DEPTH + 1][16384 + LIBUSB_CONTROL_SETUP_SIZE];
};

static Slot slots[MAX_HANDLES];
static int depth = 4;
static unsigned long n_opens, n_hotplug, n_scanned, n_transfers, n_errors, n_failed_opens;

/* umockdev's preload (0.17) connects a failed open() of a /dev path to the ioctl
 * socket all the same and keeps that socket in a table of 50 that nothing ever
 * empties: the 50th aborts the process. So a client that has had this many opens
 * fail (nodes that went between the scan and the open) ends, cleanly, and the
 * script starts a fresh one. */
#define MAX_FAILED_OPENS 40

/* Arrivals queued by the hotplug callback (libusb forbids I/O inside it). */
static libusb_device *arrivals[256];
static int narrivals;

static int LIBUSB_CALL on_hotplug(libusb_context *ctx, libusb_device *dev, libusb_hotplug_event event, void *user)
{
    (void)ctx, (void)user;
    if (event == LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED && narrivals < (int)(sizeof arrivals / sizeof arrivals[0]))
        arrivals[narrivals++] = libusb_ref_device(dev);
    return 0;
}

static Slot *find(int bus, int addr)
{
    for (int i = 0; i < MAX_HANDLES; i++)
        if (slots[i].used && slots[i].bus == bus && slots[i].addr == addr)
            return &slots[i];
    return NULL;
}

static Slot *free_slot(void)
{
    for (int i = 0; i < MAX_HANDLES; i++)
        if (!slots[i].used)
            return &slots[i];
    return NULL;
}

static void LIBUSB_CALL on_transfer(struct libusb_transfer *t);

static void submit(Slot *s, struct libusb_transfer *t)
{
    if (s->dead || stop) {
        return;
    }
    if (libusb_submit_transfer(t) == 0) {
        s->inflight++;
    } else {
        n_errors++;
        s->dead = 1;
    }
}

static void LIBUSB_CALL on_transfer(struct libusb_transfer *t)
{
    Slot *s = t->user_data;
    s->inflight--;
    if (t->status == LIBUSB_TRANSFER_COMPLETED) {
        n_transfers++;
        if (t->type == LIBUSB_TRANSFER_TYPE_BULK && t->endpoint == EP_OUT)
            t->length = 1 + rand() % 16384;
        submit(s, t);
    } else {
        n_errors++;
        if (!s->dead) {
            /* the rest would wait forever for data that no OUT sends: cancel them */
            s->dead = 1;
            for (int k = 0; k < 2 * depth + 1; k++)
                if (s->xfers[k] && s->xfers[k] != t)
                    libusb_cancel_transfer(s->xfers[k]);
        }
    }
}

/* Claims interface 0 and starts the transfers; the slot owns h (and fd). */
static void start(Slot *s, libusb_device_handle *h, int bus, int addr, int fd)
{
    memset(s, 0, sizeof *s);
    s->used = 1;
    s->bus = bus;
    s->addr = addr;
    s->fd = fd;
    s->h = h;
    n_opens++;
    if (libusb_claim_interface(h, 0) != 0) {
        s->dead = 1;
        return;
    }
    s->claimed = 1;
    for (int i = 0; i < 2 * depth + 1; i++) {
        struct libusb_transfer *t = libusb_alloc_transfer(0);
        s->xfers[i] = t;
        if (i == 2 * depth) {
            /* a control transfer: the string descriptor of the protocol interface */
            libusb_fill_control_setup(s->bufs[i], LIBUSB_ENDPOINT_IN, LIBUSB_REQUEST_GET_DESCRIPTOR,
                                      (LIBUSB_DT_STRING << 8) | 4, 0x0409, 255);
            libusb_fill_control_transfer(t, h, s->bufs[i], on_transfer, s, 1000);
        } else if (i % 2 == 0) {
            libusb_fill_bulk_transfer(t, h, EP_OUT, s->bufs[i], 1 + rand() % 16384, on_transfer, s, 0);
        } else {
            libusb_fill_bulk_transfer(t, h, EP_IN, s->bufs[i], 16384, on_transfer, s, 0);
        }
        submit(s, t);
    }
}

/* Closes the slots whose transfers have all ended. */
static void reap_dead(int force)
{
    for (int i = 0; i < MAX_HANDLES; i++) {
        Slot *s = &slots[i];
        if (!s->used || (!s->dead && !force) || s->inflight > 0)
            continue;
        if (s->claimed)
            libusb_release_interface(s->h, 0);
        libusb_close(s->h);
        if (s->fd >= 0)
            close(s->fd);
        for (int k = 0; k < 2 * MAX_DEPTH + 1; k++)
            if (s->xfers[k])
                libusb_free_transfer(s->xfers[k]);
        s->used = 0;
    }
}

static void open_arrivals(void)
{
    for (int i = 0; i < narrivals; i++) {
        libusb_device *dev = arrivals[i];
        struct libusb_device_descriptor d;
        int bus = libusb_get_bus_number(dev), addr = libusb_get_device_address(dev);
        Slot *s;
        libusb_device_handle *h;
        if (libusb_get_device_descriptor(dev, &d) == 0 && d.idVendor == 0x1209 && !find(bus, addr) &&
            (s = free_slot())) {
            if (libusb_open(dev, &h) == 0) {
                n_hotplug++;
                start(s, h, bus, addr, -1);
            } else {
                n_failed_opens++;
            }
        }
        libusb_unref_device(dev);
    }
    narrivals = 0;
}

static int read_int(const char *dir, const char *name, int base)
{
    char path[512], buf[32];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    return (int)strtol(buf, NULL, base);
}

/* Devices that sysfs lists and we hold no handle on: open their nodes ourselves. */
static void scan_sysfs(libusb_context *ctx)
{
    DIR *d = opendir("/sys/bus/usb/devices");
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        char dir[300];
        if (e->d_name[0] == '.' || strchr(e->d_name, ':') || strncmp(e->d_name, "usb", 3) == 0)
            continue;
        snprintf(dir, sizeof dir, "/sys/bus/usb/devices/%s", e->d_name);
        int vid = read_int(dir, "idVendor", 16), bus = read_int(dir, "busnum", 10), addr = read_int(dir, "devnum", 10);
        if (vid != 0x1209 || bus < 0 || addr < 0 || find(bus, addr))
            continue;
        Slot *s = free_slot();
        if (!s)
            break;
        char node[64];
        snprintf(node, sizeof node, "/dev/bus/usb/%03d/%03d", bus, addr);
        int fd = open(node, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            n_failed_opens++;
            continue;
        }
        libusb_device_handle *h;
        if (libusb_wrap_sys_device(ctx, (intptr_t)fd, &h) != 0) {
            close(fd);
            continue;
        }
        n_scanned++;
        start(s, h, bus, addr, fd);
    }
    closedir(d);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double seconds = 1e9;
    int hotplug = 1, io = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-hotplug") == 0)
            hotplug = 0;
        else if (strcmp(argv[i], "--watch-only") == 0)
            io = 0;
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--depth") == 0 && i + 1 < argc)
            depth = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: storm-client [--seconds N] [--depth D]\n");
            return 2;
        }
    }
    if (depth < 1 || depth > MAX_DEPTH)
        depth = 4;
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    srand((unsigned)getpid());

    libusb_context *ctx;
    if (!hotplug)
        libusb_set_option(NULL, LIBUSB_OPTION_NO_DEVICE_DISCOVERY);
    if (libusb_init(&ctx) != 0) {
        fprintf(stderr, "storm-client: libusb_init failed\n");
        return 1;
    }
    libusb_hotplug_callback_handle cb = 0;
    if (hotplug && libusb_hotplug_register_callback(ctx, LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED, LIBUSB_HOTPLUG_ENUMERATE,
                                         LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY,
                                         on_hotplug, NULL, &cb) != 0) {
        fprintf(stderr, "storm-client: hotplug registration failed\n");
        return 1;
    }
    double end = now() + seconds, next_scan = 0;
    while (!stop && now() < end && n_failed_opens < MAX_FAILED_OPENS) {
        struct timeval tv = {0, 2000};
        unsigned long before = n_transfers + n_errors;
        libusb_handle_events_timeout_completed(ctx, &tv, NULL);
        /* An emulated node is a plain file, always "writable", so libusb's poll never
         * waits (TESTBED.md): when nothing completed, wait a little rather than spin. */
        if (n_transfers + n_errors == before)
            usleep(500);
        if (!io) {
            for (int i = 0; i < narrivals; i++)
                libusb_unref_device(arrivals[i]);
            n_hotplug += (unsigned long)narrivals;
            narrivals = 0;
            continue;
        }
        open_arrivals();
        if (now() >= next_scan) {
            scan_sysfs(ctx);
            next_scan = now() + 0.01;
        }
        reap_dead(0);
    }
    stop = 1;
    /* Cancel what is left and wait (briefly) for the callbacks. */
    for (int i = 0; i < MAX_HANDLES; i++)
        for (int k = 0; slots[i].used && k < 2 * MAX_DEPTH + 1; k++)
            if (slots[i].xfers[k])
                libusb_cancel_transfer(slots[i].xfers[k]);
    double give_up = now() + 2;
    for (;;) {
        int pending = 0;
        for (int i = 0; i < MAX_HANDLES; i++)
            pending += slots[i].used ? slots[i].inflight : 0;
        if (pending == 0 || now() > give_up)
            break;
        struct timeval tv = {0, 10000};
        libusb_handle_events_timeout_completed(ctx, &tv, NULL);
    }
    reap_dead(1);
    if (hotplug)
        libusb_hotplug_deregister_callback(ctx, cb);
    for (int i = 0; i < narrivals; i++)
        libusb_unref_device(arrivals[i]);
    libusb_exit(ctx);
    printf("storm-client: opens=%lu hotplug=%lu scanned=%lu transfers=%lu errors=%lu failed-opens=%lu\n", n_opens,
           n_hotplug, n_scanned, n_transfers, n_errors, n_failed_opens);
    return 0;
}
