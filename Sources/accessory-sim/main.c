/*
 * accessory-sim: run a command with virtual USB accessories (umockdev).
 *
 *   accessory-sim [--accessory SPEC]... [--first-address N] [--buses N] [--kernel-order[=MS]] -- COMMAND [ARGS...]
 *   accessory-sim ctl CMD [ARGS...]
 *
 * --kernel-order[=MS] makes every plain unplug (ctl unplug, replug, storm) go in a
 * real kernel's order, as "unplug --urbs-first --uevent-delay MS" does (default 0).
 *
 * SPEC is VID:PID[:SERIAL[:PROTOCOL]] (hex VID and PID), for example
 * 1209:0001:SN1:org.example.loopback. Each accessory is a high-speed
 * loopback device on bus 1 (behind a root hub usb1 at address 1): one
 * vendor-specific interface (ff/00/00) whose iInterface string is PROTOCOL
 * (default org.example.loopback), bulk OUT 0x01 echoed on bulk IN 0x81,
 * 512-byte packets, manufacturer "Example", product "Loopback Accessory",
 * serial SERIAL. Accessories get ports 1-1, 1-2, ... and addresses like the
 * kernel hands them out: the next free one from --first-address (default
 * 2), wrapping after 127.
 *
 * COMMAND runs under the testbed (LD_PRELOAD with libumockdev-preload,
 * UMOCKDEV_DIR) with ACCESSORY_SIM_SOCKET naming the control socket and
 * TMPDIR a private directory. The testbed and the socket live in another
 * private directory, on a tmpfs when one is available ($TMPDIR if it is a
 * tmpfs, else $XDG_RUNTIME_DIR or /dev/shm) because a disk file system makes
 * every plug and unplug take tens of milliseconds. Both directories are
 * removed when COMMAND exits. SIGINT,
 * SIGTERM, SIGHUP and SIGQUIT sent to the simulator are forwarded to
 * COMMAND (signals from the terminal already reach it). The simulator exits
 * with COMMAND's exit status (128+N if killed by signal N), 127 if it could
 * not be started, 2 on a usage error.
 *
 * "accessory-sim ctl" sends one command to $ACCESSORY_SIM_SOCKET (see
 * control.c for the commands), prints the reply and exits 0 on "ok" (and
 * for "list"), 1 on "error", 2 if the simulator cannot be reached.
 *
 * ACCESSORY_SIM_DEBUG=1 logs what the simulator does to stderr.
 *
 * This file parses the command line, runs COMMAND and wires the layers
 * together (see state.h for them); the ctl client is ctl_client.c, the
 * private directories privdir.c.
 */
#define _GNU_SOURCE
#include "control.h"
#include "devices.h"
#include "power.h"
#include "process.h"
#include "uevent_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <glib-unix.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define REEXEC_MARKER "ACCESSORY_SIM_PRELOADED"
#define PRELOAD_LIB "libumockdev-preload.so.0"
#define PRELOAD_SHIM "libaccessory-sim-preload.so"


static GMainLoop *loop;
static pid_t child_pid = -1;
static int child_status;
static int signal_pipe[2] = {-1, -1};
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: accessory-sim [--accessory VID:PID[:SERIAL[:PROTOCOL]][,OPTION]...]... [--first-address N] [--buses N]\n"
            "                     [--kernel-order[=MS]] -- COMMAND [ARGS...]\n"
            "       accessory-sim ctl CMD [ARGS...]\n"
            "\n"
            "ctl commands:\n"
            "  plug VID:PID[:SERIAL[:PROTOCOL]][,interface=N][,interrupt][,noname][,android] [--port P] [--silent]\n"
            "                                                           ok BUS ADDRESS PORT\n"
            "  plug-hub PORT NPORTS [--power per-port|ganged|none] [--usb3] [--no-disable]\n"
            "                                                           ok BUS ADDRESS PORT (a hub; plug behind it at PORT.N;\n"
            "                                                           --usb3 adds its SuperSpeed half on the next bus:\n"
            "                                                           ok BUS ADDRESS PORT BUS2 ADDRESS2 PORT2;\n"
            "                                                           --no-disable: no port `disable` files, as before Linux 6.0)\n"
            "  unplug BUS:ADDRESS [--silent]                            ok (a hub: the devices behind it first, deepest first)\n"
            "  unplug BUS:ADDRESS --urbs-first [--uevent-delay MS]      ok (URBs fail, then sysfs, then the uevent)\n"
            "  replug BUS:ADDRESS [--silent]                            ok BUS ADDRESS PORT\n"
            "  storm BUS:ADDRESS N                                      ok BUS ADDRESS PORT\n"
            "  fault BUS:ADDRESS stall|timeout|unplug-after=BYTES|no-node|none  ok\n"
            "  list                                                     BUS ADDRESS PORT VID:PID SERIAL per line (hubs too)\n"
            "  power PORT on|off                                        ok (as a PORT_POWER request to PORT's hub)\n"
            "  power-log                                                PORT off|on per line, every power change so far\n"
            "  wedge BUS:ADDRESS --cured-by reset|reauthorize|power-cycle|never\n"
            "                                                           ok (transfers time out until that step)\n"
            "  vanish BUS:ADDRESS --back-on power-cycle|never           ok (leaves; back when its port is power-cycled)\n"
            "  aoa-strings BUS:ADDRESS                                  INDEX STRING, six lines\n"
            "  ioctl-log BUS:ADDRESS                                    ok open=N claimed=LIST released=N ...\n"
            "  kernel-driver BUS:ADDRESS IFACE NAME|-                   ok\n"
            "  uevent-check                                             ok sockets=N (error: a shared uevent socket)\n"
            "  help\n"
            "\n"
            "sysfs: a hub port's `disable` (…/1-1:1.0/1-1-port4/disable) is writable: 1 powers the port off, 0 on;\n"
            "a device's `authorized` too: 0 removes it (the file stays), 1 brings it back at the next address.\n");
}


static void on_signal_raw(int signo, siginfo_t *info, void *ctx)
{
    (void)ctx;
    int saved = errno;
    int msg[2] = {signo, info ? info->si_code : SI_USER};
    if (write(signal_pipe[1], msg, sizeof(msg)) < 0) {
        /* nothing to do: the pipe is full */
    }
    errno = saved;
}

static gboolean on_signal(int fd, GIOCondition cond, gpointer user)
{
    int msg[2];
    (void)cond;
    (void)user;
    while (read(fd, msg, sizeof(msg)) == (ssize_t)sizeof(msg)) {
        /* Signals from the terminal (si_code SI_KERNEL) already went to the
         * whole foreground process group, COMMAND included. */
        if (child_pid > 0 && msg[1] != SI_KERNEL) {
            sim_log("forwarding signal %d to %d", msg[0], (int)child_pid);
            kill(child_pid, msg[0]);
        }
    }
    return G_SOURCE_CONTINUE;
}

static void install_signals(void)
{
    struct sigaction sa;
    if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        perror("accessory-sim: pipe");
        return;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal_raw;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (guint i = 0; i < G_N_ELEMENTS(forwarded_signals); i++)
        sigaction(forwarded_signals[i], &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    g_unix_fd_add(signal_pipe[0], G_IO_IN, on_signal, NULL);
}

static void on_child_exit(GPid pid, gint status, gpointer user)
{
    (void)pid;
    (void)user;
    child_status = status;
    child_pid = -1;
    g_main_loop_quit(loop);
}

/* Runs cmd with envp, its environment (not the simulator's own: by the time the
 * command starts, umockdev's worker and the trash thread run, and a setenv() then
 * could free the environment under a getenv() of theirs). */
static int spawn_command(char **cmd, char **envp)
{
    posix_spawnattr_t attr;
    sigset_t defaults, empty;
    pid_t pid;
    int err;

    sigemptyset(&defaults);
    for (guint i = 0; i < G_N_ELEMENTS(forwarded_signals); i++)
        sigaddset(&defaults, forwarded_signals[i]);
    sigaddset(&defaults, SIGPIPE);
    sigemptyset(&empty);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setsigmask(&attr, &empty);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    err = posix_spawnp(&pid, cmd[0], NULL, &attr, cmd, envp);
    if (err == ENOEXEC) {
        /* a script without #! line: run it with /bin/sh, like execvp() */
        GPtrArray *sh = g_ptr_array_new();
        g_ptr_array_add(sh, (gpointer) "/bin/sh");
        for (char **a = cmd; *a; a++)
            g_ptr_array_add(sh, *a);
        g_ptr_array_add(sh, NULL);
        err = posix_spawn(&pid, "/bin/sh", NULL, &attr, (char **)sh->pdata, envp);
        g_ptr_array_unref(sh);
    }
    posix_spawnattr_destroy(&attr);
    if (err != 0) {
        fprintf(stderr, "accessory-sim: cannot run %s: %s\n", cmd[0], g_strerror(err));
        return -1;
    }
    child_pid = pid;
    g_child_watch_add(pid, on_child_exit, NULL);
    return 0;
}

static char *find_preload_shim(void)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "accessory-sim: cannot find my own binary (/proc/self/exe): %s\n", g_strerror(errno));
        exit(127);
    }
    self[n] = '\0';
    char *dir = g_path_get_dirname(self);
    char *shim = g_build_filename(dir, PRELOAD_SHIM, NULL);
    g_free(dir);
    if (access(shim, R_OK) != 0) {
        fprintf(stderr,
                "accessory-sim: %s is missing (%s).\n"
                "  It must sit beside accessory-sim: without it, two processes that watch hotplug\n"
                "  events steal each other's uevent socket (issue #16). Build it with\n"
                "  `swift build --product accessory-sim`, which builds it beside the simulator\n"
                "  (Sources/AccessorySimPreload is a package that accessory-sim links).\n",
                shim, g_strerror(errno));
        exit(127);
    }
    if (strpbrk(shim, ": \t")) {
        fprintf(stderr, "accessory-sim: %s cannot go into LD_PRELOAD (its path has a blank or a colon)\n", shim);
        exit(127);
    }
    return shim;
}

/* LD_PRELOAD for the simulator and COMMAND: what was there (sanitizer
 * runtimes must stay first), then the shim, then umockdev's library. */
static char *preload_list(const char *old, const char *shim)
{
    GString *list = g_string_new(NULL);
    if (old) {
        gchar **entries = g_strsplit_set(old, ": ", -1);
        for (gchar **e = entries; *e; e++) {
            if (!**e || strstr(*e, "libumockdev-preload.so") || g_str_has_suffix(*e, "/" PRELOAD_SHIM))
                continue;
            g_string_append_printf(list, "%s:", *e);
        }
        g_strfreev(entries);
    }
    g_string_append_printf(list, "%s:%s", shim, PRELOAD_LIB);
    return g_string_free(list, FALSE);
}

static void reexec_with_preload(char **argv)
{
    char *shim = find_preload_shim();
    char *preload = preload_list(getenv("LD_PRELOAD"), shim);

    setenv("LD_PRELOAD", preload, 1);
    setenv(REEXEC_MARKER, "1", 1);
    g_free(preload);
    g_free(shim);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "accessory-sim: cannot re-execute under %s: %s\n", PRELOAD_LIB, g_strerror(errno));
    exit(127);
}

static gboolean parse_int(const char *s, int min, int max, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < min || v > max)
        return FALSE;
    *out = (int)v;
    return TRUE;
}

static int run_main(int argc, char **argv)
{
    GPtrArray *specs = g_ptr_array_new();
    int first_address = 2;
    int nbuses = 1;
    int i, rc;
    char *privdir, *childtmp, *sock, *err = NULL;

    sim.kernel_order_ms = -1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *value = NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--kernel-order") == 0 || g_str_has_prefix(a, "--kernel-order=")) {
            int ms = 0;
            if (a[strlen("--kernel-order")] == '=' && !parse_int(a + strlen("--kernel-order="), 0, 60000, &ms)) {
                fprintf(stderr, "accessory-sim: --kernel-order=MS needs 0-60000\n");
                return 2;
            }
            sim.kernel_order_ms = ms;
            continue;
        } else if (strcmp(a, "--accessory") == 0 || strcmp(a, "--first-address") == 0 || strcmp(a, "--buses") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "accessory-sim: %s needs a value\n", a);
                return 2;
            }
            value = argv[++i];
        } else if (g_str_has_prefix(a, "--accessory=") || g_str_has_prefix(a, "--first-address=") || g_str_has_prefix(a, "--buses=")) {
            value = strchr(a, '=') + 1;
        } else if (a[0] == '-') {
            fprintf(stderr, "accessory-sim: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else {
            break; /* COMMAND without "--" */
        }
        if (g_str_has_prefix(a, "--accessory")) {
            Spec check;
            if (!spec_parse(value, &check, &err)) {
                fprintf(stderr, "accessory-sim: %s\n", err);
                return 2;
            }
            spec_clear(&check);
            g_ptr_array_add(specs, (gpointer)value);
        } else if (g_str_has_prefix(a, "--buses")) {
            if (!parse_int(value, 1, SIM_MAX_BUSES, &nbuses)) {
                fprintf(stderr, "accessory-sim: --buses must be 1-%d\n", SIM_MAX_BUSES);
                return 2;
            }
        } else if (!parse_int(value, 1, 127, &first_address)) {
            fprintf(stderr, "accessory-sim: --first-address must be 1-127\n");
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "accessory-sim: no command given\n");
        usage(stderr);
        return 2;
    }
    char **cmd = argv + i;

    /* umockdev only sends uevents from a process that runs under its
     * preload library; and umockdev_in_mock_environment() caches its first
     * answer, so nothing may ask before the testbed exists. */
    if (!getenv(REEXEC_MARKER))
        reexec_with_preload(argv);
    unsetenv(REEXEC_MARKER);
    sim.debug = getenv("ACCESSORY_SIM_DEBUG") && *getenv("ACCESSORY_SIM_DEBUG") &&
                strcmp(getenv("ACCESSORY_SIM_DEBUG"), "0") != 0;

    /* Two private directories, both removed at exit: one (on a tmpfs if
     * possible) for the testbed and the control socket, one as COMMAND's
     * TMPDIR. Set TMPDIR before any GLib call: g_get_tmp_dir() caches it,
     * and umockdev creates the testbed there. */
    const char *tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    privdir = privdir_make(privdir_testbed_base(tmpdir), "accessory-sim");
    if (!privdir)
        return 2;
    childtmp = privdir_make(tmpdir, "accessory-sim-tmp");
    if (!childtmp) {
        privdir_remove(privdir);
        return 2;
    }
    setenv("TMPDIR", privdir, 1);
    sock = g_build_filename(privdir, "ctl.sock", NULL);

    g_rec_mutex_init(&sim.lock);
    sim.testbed = umockdev_testbed_new();
    sim.root = umockdev_testbed_get_root_dir(sim.testbed);
    sim_log("testbed %s", sim.root);
    if (!uevent_guard_init()) {
        privdir_remove(privdir);
        privdir_remove(childtmp);
        return 2;
    }
    loop = g_main_loop_new(NULL, FALSE);
    devices_init(first_address, nbuses);
    power_init();

    rc = 0;
    for (guint k = 0; k < specs->len; k++) {
        Spec spec;
        spec_parse(g_ptr_array_index(specs, k), &spec, &err);
        Instance *inst = device_plug(&spec, NULL, FALSE, &err);
        spec_clear(&spec);
        if (!inst) {
            fprintf(stderr, "accessory-sim: %s\n", err);
            g_free(err);
            rc = 2;
            break;
        }
    }
    if (rc == 0 && !control_start(sock, &err)) {
        fprintf(stderr, "accessory-sim: %s\n", err);
        g_free(err);
        rc = 2;
    }
    if (rc == 0) {
        /* The command's environment: a temporary folder of its own, the control socket, and
         * where this binary is, so tests can run `$ACCESSORY_SIM ctl ...`. */
        char **envp = g_get_environ();
        envp = g_environ_setenv(envp, "TMPDIR", childtmp, TRUE);
        envp = g_environ_setenv(envp, "ACCESSORY_SIM_SOCKET", sock, TRUE);
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n > 0) {
            self[n] = '\0';
            envp = g_environ_setenv(envp, "ACCESSORY_SIM", self, TRUE);
        }
        install_signals();
        int spawned = spawn_command(cmd, envp);
        g_strfreev(envp);
        if (spawned < 0) {
            rc = 127;
        } else {
            g_main_loop_run(loop);
            if (WIFEXITED(child_status))
                rc = WEXITSTATUS(child_status);
            else if (WIFSIGNALED(child_status))
                rc = 128 + WTERMSIG(child_status);
            else
                rc = 1;
        }
    }

    control_stop();
    devices_shutdown();
    uevent_guard_shutdown();
    g_clear_object(&sim.testbed);
    privdir_remove(privdir);
    privdir_remove(childtmp);
    g_free(childtmp);
    g_free(sim.root);
    g_free(sock);
    g_free(privdir);
    g_ptr_array_unref(specs);
    g_main_loop_unref(loop);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "ctl") == 0) {
        if (argc < 3) {
            usage(stderr);
            return 2;
        }
        return ctl_client_main(argc - 2, argv + 2);
    }
    return run_main(argc, argv);
}
