/*
 * accessory-sim: "accessory-sim ctl CMD [ARGS...]": sends one command to
 * $ACCESSORY_SIM_SOCKET, prints the reply and exits 0 on "ok" (and for
 * "list"), 1 on "error", 2 if the simulator cannot be reached. Runs in a
 * process of its own: it touches no simulator state.
 */
#define _GNU_SOURCE
#include "process.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int ctl_client_main(int argc, char **argv)
{
    const char *path = getenv("ACCESSORY_SIM_SOCKET");
    struct sockaddr_un sa;
    GString *line, *reply;
    int fd;

    if (!path || !*path) {
        fprintf(stderr, "accessory-sim ctl: ACCESSORY_SIM_SOCKET is not set (run under accessory-sim)\n");
        return 2;
    }
    line = g_string_new(NULL);
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] == '\0' || strpbrk(argv[i], " \t\r\n")) {
            printf("error usage: arguments must be non-empty and contain no blanks\n");
            g_string_free(line, TRUE);
            return 1;
        }
        g_string_append_printf(line, "%s%s", i ? " " : "", argv[i]);
    }
    g_string_append_c(line, '\n');

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        fprintf(stderr, "accessory-sim ctl: socket path too long: %s\n", path);
        return 2;
    }
    strcpy(sa.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr, "accessory-sim ctl: cannot connect to %s: %s\n", path, g_strerror(errno));
        return 2;
    }
    for (gsize off = 0; off < line->len;) {
        ssize_t n = send(fd, line->str + off, line->len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "accessory-sim ctl: send: %s\n", g_strerror(errno));
            return 2;
        }
        off += (gsize)n;
    }
    shutdown(fd, SHUT_WR);
    reply = g_string_new(NULL);
    for (;;) {
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        g_string_append_len(reply, buf, n);
    }
    close(fd);
    fwrite(reply->str, 1, reply->len, stdout);
    fflush(stdout);

    int rc;
    if (g_str_has_prefix(reply->str, "error"))
        rc = 1;
    else if (g_str_has_prefix(reply->str, "ok") || strcmp(argv[0], "list") == 0 || strcmp(argv[0], "power-log") == 0
             || (strcmp(argv[0], "aoa-strings") == 0 && !g_str_has_prefix(reply->str, "error")))
        rc = 0;
    else {
        fprintf(stderr, "accessory-sim ctl: no reply from the simulator\n");
        rc = 2;
    }
    g_string_free(reply, TRUE);
    g_string_free(line, TRUE);
    return rc;
}

