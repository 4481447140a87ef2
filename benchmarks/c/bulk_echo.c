/* Baseline for the session benchmark: a plain C libusb bulk echo client.
 *
 *   bulk_echo [--sync | --async DEPTH] [--size BYTES] [--chunk BYTES] [--transfer-size BYTES]
 *             [--device VID:PID] [--capture FILE]
 *
 * Opens the first device with VID:PID (default 1209:0001, the simulator's loopback),
 * claims interface 0, sends SIZE bytes (default 64 MiB) of a pseudo-random pattern on bulk
 * OUT 0x01 in transfers of CHUNK bytes (default 65536; --transfer-size is the same option)
 * and reads them back on bulk IN 0x81, checking every byte.
 *
 *   --sync          libusb_bulk_transfer: write one chunk, read it back, repeat (the default)
 *   --async DEPTH   DEPTH OUT and DEPTH IN transfers kept in flight, resubmitted from their
 *                   callbacks, one thread running libusb_handle_events_completed
 *   --capture FILE  (--async only) the cheapest capture a plain C client can keep: a usbmon
 *                   pcapng file (LINKTYPE_USB_LINUX_MMAPPED) with one `S` record per
 *                   submission (with its OUT data) and one `C` record per completion (with
 *                   its IN data), each written with one writev(2) where it happens, on the
 *                   one thread, before the callback goes on: the baseline of a capture's cost
 *
 * Prints one line and exits 0 (1 on a mismatch or a libusb error):
 *   bytes=N seconds=S MB/s=R cpu=C transfers=T us_per_transfer=U
 * seconds and cpu (user + system, from getrusage) cover the echo alone, not the set-up;
 * us_per_transfer is seconds per chunk (a round trip in --sync mode).
 */
#include <libusb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#define EP_OUT 0x01
#define EP_IN 0x81
#define PACKET 512

static unsigned char *source;
static size_t total;
static size_t chunk;
static size_t in_length; /* chunk rounded up to whole packets */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static int fail(const char *what, int status)
{
    fprintf(stderr, "bulk_echo: %s: %s\n", what, libusb_error_name(status));
    return 1;
}

/* ---- sync ---------------------------------------------------------------------------- */

static int echo_sync(libusb_device_handle *h)
{
    unsigned char *in = malloc(in_length);
    size_t offset = 0;
    while (offset < total) {
        size_t n = total - offset < chunk ? total - offset : chunk;
        int moved = 0;
        int r = libusb_bulk_transfer(h, EP_OUT, source + offset, (int)n, &moved, 5000);
        if (r != 0 || (size_t)moved != n) {
            free(in);
            return fail("bulk OUT", r);
        }
        size_t got = 0;
        while (got < n) {
            r = libusb_bulk_transfer(h, EP_IN, in, (int)in_length, &moved, 5000);
            if (r != 0) {
                free(in);
                return fail("bulk IN", r);
            }
            if (got + (size_t)moved > n || memcmp(in, source + offset + got, (size_t)moved) != 0) {
                fprintf(stderr, "bulk_echo: data mismatch at byte %zu\n", offset + got);
                free(in);
                return 1;
            }
            got += (size_t)moved;
        }
        offset += n;
    }
    free(in);
    return 0;
}

/* ---- capture -------------------------------------------------------------------------- */

static int capture_fd = -1;
static uint64_t next_urb_id = 1;

static int write_all(const void *bytes, size_t n)
{
    return write(capture_fd, bytes, n) == (ssize_t)n ? 0 : -1;
}

/* The section header and one interface: USB with the 64-byte usbmon header, no snap length. */
static int capture_open(const char *path)
{
    capture_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (capture_fd < 0) {
        perror("bulk_echo: --capture");
        return -1;
    }
    uint32_t shb[7] = {0x0A0D0D0A, 28, 0x1A2B3C4D, 0x00000001 /* version 1.0 */, 0xFFFFFFFF, 0xFFFFFFFF, 28};
    uint32_t idb[5] = {1, 20, 220, 0, 20};
    if (write_all(shb, sizeof shb) || write_all(idb, sizeof idb)) {
        perror("bulk_echo: --capture");
        return -1;
    }
    return 0;
}

/* One Enhanced Packet Block: the usbmon header, then `data`, padded, in one writev. */
static void capture_record(uint64_t id, char type, unsigned char endpoint, int status, unsigned urb_length,
                           const unsigned char *data, unsigned data_length)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t micros = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    unsigned captured = 64 + data_length;
    unsigned padded = (captured + 3) & ~3u;
    uint32_t block[7] = {6, 28 + padded + 4, 0, (uint32_t)(micros >> 32), (uint32_t)micros, captured, captured};
    unsigned char header[64] = {0};
    memcpy(header, &id, 8);
    header[8] = (unsigned char)type;
    header[9] = 3; /* bulk */
    header[10] = endpoint;
    header[11] = 2; /* devnum */
    uint16_t bus = 1;
    memcpy(header + 12, &bus, 2);
    header[14] = '-';
    header[15] = data_length ? 0 : (type == 'S' ? '<' : '>');
    int64_t sec = ts.tv_sec;
    int32_t usec = (int32_t)(ts.tv_nsec / 1000);
    memcpy(header + 16, &sec, 8);
    memcpy(header + 24, &usec, 4);
    memcpy(header + 28, &status, 4);
    memcpy(header + 32, &urb_length, 4);
    memcpy(header + 36, &data_length, 4);
    static const unsigned char zeros[4] = {0};
    uint32_t trailer = block[1];
    struct iovec iov[5] = {
        {block, sizeof block}, {header, 64}, {(void *)data, data_length}, {(void *)zeros, padded - captured}, {&trailer, 4}};
    if (writev(capture_fd, iov, 5) != (ssize_t)block[1]) {
        perror("bulk_echo: --capture");
        exit(1);
    }
}

/* Submits `t`, with its `S` record first when capturing. */
static int submit(struct libusb_transfer *t)
{
    if (capture_fd >= 0) {
        uint64_t id = next_urb_id++;
        t->user_data = (void *)(uintptr_t)id;
        int out = !(t->endpoint & 0x80);
        capture_record(id, 'S', t->endpoint, -115 /* -EINPROGRESS */, (unsigned)t->length, out ? t->buffer : NULL,
                       out ? (unsigned)t->length : 0);
    }
    return libusb_submit_transfer(t);
}

/* The `C` record of a completed transfer, when capturing. */
static void completed(struct libusb_transfer *t)
{
    if (capture_fd < 0)
        return;
    int in = t->endpoint & 0x80;
    capture_record((uint64_t)(uintptr_t)t->user_data, 'C', t->endpoint, t->status == LIBUSB_TRANSFER_COMPLETED ? 0 : -5,
                   (unsigned)t->actual_length, in ? t->buffer : NULL, in ? (unsigned)t->actual_length : 0);
}

/* ---- async --------------------------------------------------------------------------- */

static size_t out_next;   /* next byte to send */
static size_t in_expected; /* next byte to receive */
static size_t in_submitted; /* chunks asked for on IN */
static size_t chunks_total;
static int in_flight;
static int failed;

static void LIBUSB_CALL on_out(struct libusb_transfer *t)
{
    in_flight--;
    completed(t);
    if (t->status != LIBUSB_TRANSFER_COMPLETED || t->actual_length != t->length) {
        fprintf(stderr, "bulk_echo: bulk OUT status %d\n", t->status);
        failed = 1;
        return;
    }
    if (out_next < total && !failed) {
        size_t n = total - out_next < chunk ? total - out_next : chunk;
        memcpy(t->buffer, source + out_next, n);
        t->length = (int)n;
        out_next += n;
        if (submit(t) == 0)
            in_flight++;
        else
            failed = 1;
    }
}

static void LIBUSB_CALL on_in(struct libusb_transfer *t)
{
    in_flight--;
    completed(t);
    if (t->status != LIBUSB_TRANSFER_COMPLETED) {
        fprintf(stderr, "bulk_echo: bulk IN status %d\n", t->status);
        failed = 1;
        return;
    }
    size_t n = (size_t)t->actual_length;
    if (in_expected + n > total || memcmp(t->buffer, source + in_expected, n) != 0) {
        fprintf(stderr, "bulk_echo: data mismatch at byte %zu\n", in_expected);
        failed = 1;
        return;
    }
    in_expected += n;
    if (in_submitted < chunks_total && !failed) {
        in_submitted++;
        if (submit(t) == 0)
            in_flight++;
        else
            failed = 1;
    }
}

static int echo_async(libusb_context *ctx, libusb_device_handle *h, int depth)
{
    struct libusb_transfer **outs = calloc((size_t)depth, sizeof(*outs));
    struct libusb_transfer **ins = calloc((size_t)depth, sizeof(*ins));
    chunks_total = (total + chunk - 1) / chunk;
    for (int i = 0; i < depth; i++) {
        outs[i] = libusb_alloc_transfer(0);
        ins[i] = libusb_alloc_transfer(0);
        libusb_fill_bulk_transfer(outs[i], h, EP_OUT, malloc(chunk), 0, on_out, NULL, 0);
        libusb_fill_bulk_transfer(ins[i], h, EP_IN, malloc(in_length), (int)in_length, on_in, NULL, 0);
    }
    for (int i = 0; i < depth && in_submitted < chunks_total; i++) {
        in_submitted++;
        if (submit(ins[i]) != 0)
            return fail("submit IN", LIBUSB_ERROR_IO);
        in_flight++;
    }
    for (int i = 0; i < depth && out_next < total; i++) {
        size_t n = total - out_next < chunk ? total - out_next : chunk;
        memcpy(outs[i]->buffer, source + out_next, n);
        outs[i]->length = (int)n;
        out_next += n;
        if (submit(outs[i]) != 0)
            return fail("submit OUT", LIBUSB_ERROR_IO);
        in_flight++;
    }
    while (in_flight > 0 && !(failed && in_flight == 0)) {
        int r = libusb_handle_events_completed(ctx, NULL);
        if (r != 0 && r != LIBUSB_ERROR_INTERRUPTED)
            return fail("handle events", r);
        if (failed) {
            for (int i = 0; i < depth; i++) {
                libusb_cancel_transfer(outs[i]);
                libusb_cancel_transfer(ins[i]);
            }
        }
    }
    for (int i = 0; i < depth; i++) {
        free(outs[i]->buffer);
        free(ins[i]->buffer);
        libusb_free_transfer(outs[i]);
        libusb_free_transfer(ins[i]);
    }
    free(outs);
    free(ins);
    return failed || in_expected != total;
}

/* ---- main ---------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    int depth = 0; /* 0: sync */
    unsigned vid = 0x1209, pid = 0x0001;
    const char *capture = NULL;
    total = 64u << 20;
    chunk = 65536;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sync")) {
            depth = 0;
        } else if (!strcmp(argv[i], "--async") && i + 1 < argc) {
            depth = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            total = (size_t)strtoull(argv[++i], NULL, 10);
        } else if ((!strcmp(argv[i], "--chunk") || !strcmp(argv[i], "--transfer-size")) && i + 1 < argc) {
            chunk = (size_t)strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            if (sscanf(argv[++i], "%x:%x", &vid, &pid) != 2) {
                fprintf(stderr, "bulk_echo: --device takes VID:PID in hex\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--capture") && i + 1 < argc) {
            capture = argv[++i];
        } else {
            fprintf(stderr,
                    "usage: bulk_echo [--sync | --async DEPTH] [--size BYTES] [--chunk BYTES] [--transfer-size BYTES] "
                    "[--device VID:PID] [--capture FILE]\n");
            return 2;
        }
    }
    if (chunk == 0 || depth < 0) {
        fprintf(stderr, "bulk_echo: --chunk must be positive and --async DEPTH at least 1\n");
        return 2;
    }
    if (capture && depth == 0) {
        fprintf(stderr, "bulk_echo: --capture needs --async DEPTH\n");
        return 2;
    }
    if (capture && capture_open(capture) != 0)
        return 1;
    in_length = (chunk + PACKET - 1) / PACKET * PACKET;
    source = malloc(total ? total : 1);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < total; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        source[i] = (unsigned char)x;
    }

    libusb_context *ctx;
    int r = libusb_init(&ctx);
    if (r != 0)
        return fail("libusb_init", r);
    libusb_device_handle *h = libusb_open_device_with_vid_pid(ctx, (uint16_t)vid, (uint16_t)pid);
    if (!h) {
        fprintf(stderr, "bulk_echo: no device %04x:%04x\n", vid, pid);
        return 1;
    }
    r = libusb_claim_interface(h, 0);
    if (r != 0)
        return fail("claim interface 0", r);

    double t0 = now(), c0 = cpu();
    int status = depth > 0 ? echo_async(ctx, h, depth) : echo_sync(h);
    double seconds = now() - t0, cpus = cpu() - c0;

    if (capture_fd >= 0 && close(capture_fd) != 0) {
        perror("bulk_echo: --capture");
        return 1;
    }
    libusb_release_interface(h, 0);
    libusb_close(h);
    libusb_exit(ctx);
    if (status != 0)
        return 1;
    size_t transfers = (total + chunk - 1) / chunk;
    printf("bytes=%zu seconds=%.6f MB/s=%.2f cpu=%.6f transfers=%zu us_per_transfer=%.2f\n", total, seconds,
           (double)total / seconds / 1e6, cpus, transfers, transfers ? seconds / (double)transfers * 1e6 : 0.0);
    free(source);
    return 0;
}
