/* What writing a capture's bytes costs by itself, without USB: the floor under a capture.
 *
 *   capture_write FILE [--megabytes N] [--chunk BYTES] [--rounds R]
 *
 * Writes N MiB (default 128, the data of a 64 MiB echo, both ways) to FILE in writev(2)s of
 * CHUNK bytes (default 65,632: a 64 KiB transfer with its 64-byte usbmon header and block
 * fields), R rounds (default 6) alternating two ways: plain appends, and appends into space
 * reserved ahead with fallocate(FALLOC_FL_KEEP_SIZE) 8 MiB at a time. FILE is emptied before
 * and removed after each round. Prints one line per round:
 *   round=I mode=plain|fallocate cpu=C seconds=S
 * cpu is user + system of this process (getrusage), the writes alone.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double cpu(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)r.ru_utime.tv_sec + (double)r.ru_utime.tv_usec / 1e6 + (double)r.ru_stime.tv_sec +
           (double)r.ru_stime.tv_usec / 1e6;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int one_round(const char *path, int reserve, size_t total, size_t chunk, const char *buf, int round)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        perror("capture_write: open");
        return 1;
    }
    double c0 = cpu(), t0 = now();
    off_t written = 0, reserved = 0;
    const off_t step = 8 << 20;
    while ((size_t)written < total) {
        if (reserve && written + (off_t)chunk > reserved) {
            if (fallocate(fd, FALLOC_FL_KEEP_SIZE, reserved, step) != 0) {
                perror("capture_write: fallocate");
                return 1;
            }
            reserved += step;
        }
        struct iovec v = {(void *)buf, chunk};
        if (writev(fd, &v, 1) != (ssize_t)chunk) {
            perror("capture_write: writev");
            return 1;
        }
        written += (off_t)chunk;
    }
    printf("round=%d mode=%s cpu=%.3f seconds=%.3f\n", round, reserve ? "fallocate" : "plain", cpu() - c0, now() - t0);
    close(fd);
    unlink(path);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: capture_write FILE [--megabytes N] [--chunk BYTES] [--rounds R]\n");
        return 2;
    }
    size_t total = 128u << 20, chunk = 65536 + 64 + 32;
    int rounds = 6;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--megabytes"))
            total = (size_t)strtoull(argv[i + 1], NULL, 10) << 20;
        else if (!strcmp(argv[i], "--chunk"))
            chunk = (size_t)strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "capture_write: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (chunk == 0 || rounds < 1) {
        fprintf(stderr, "capture_write: --chunk and --rounds must be positive\n");
        return 2;
    }
    char *buf = malloc(chunk);
    memset(buf, 7, chunk);
    for (int r = 1; r <= rounds; r++) {
        if (one_round(argv[1], 0, total, chunk, buf, r) || one_round(argv[1], 1, total, chunk, buf, r))
            return 1;
    }
    free(buf);
    return 0;
}
