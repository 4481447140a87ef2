/* Baseline for the hotplug latency benchmark: a plain C libusb hotplug client.
 *
 * Prints "ready" once its callback is registered, then one line per event:
 *   arrived|left BUS ADDRESS MONOTONIC_NS
 * with the CLOCK_MONOTONIC time taken inside the libusb callback. Runs until SIGTERM.
 */
#include <libusb.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_term(int sig) { (void)sig; stop = 1; }

static int LIBUSB_CALL on_hotplug(libusb_context *ctx, libusb_device *dev, libusb_hotplug_event event, void *user)
{
    (void)ctx; (void)user;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("%s %d %d %lld\n", event == LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED ? "arrived" : "left",
           libusb_get_bus_number(dev), libusb_get_device_address(dev),
           (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    fflush(stdout);
    return 0;
}

int main(void)
{
    libusb_context *ctx;
    if (libusb_init(&ctx) != 0) { fprintf(stderr, "libusb_init failed\n"); return 1; }
    libusb_hotplug_callback_handle handle;
    int rc = libusb_hotplug_register_callback(ctx, LIBUSB_HOTPLUG_EVENT_DEVICE_ARRIVED | LIBUSB_HOTPLUG_EVENT_DEVICE_LEFT, 0,
                                              LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY, LIBUSB_HOTPLUG_MATCH_ANY,
                                              on_hotplug, NULL, &handle);
    if (rc != LIBUSB_SUCCESS) { fprintf(stderr, "hotplug registration failed: %s\n", libusb_error_name(rc)); return 1; }
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    /* A parent may hand down a blocked SIGTERM (Foundation's Process does, from a Swift
     * Testing thread), which would leave the loop below running forever. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    sigprocmask(SIG_UNBLOCK, &stop_signals, NULL);
    printf("ready\n");
    fflush(stdout);
    while (!stop) {
        struct timeval tv = { 0, 100000 };
        libusb_handle_events_timeout_completed(ctx, &tv, NULL);
    }
    libusb_hotplug_deregister_callback(ctx, handle);
    libusb_exit(ctx);
    return 0;
}
