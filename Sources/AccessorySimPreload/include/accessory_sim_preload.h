/*
 * libaccessory-sim-preload.so: accessory-sim's own LD_PRELOAD shim, loaded in
 * front of umockdev's libumockdev-preload.so.0. It has no API: it interposes
 * socket(), bind(), recvmsg() and close() for the emulated netlink uevent
 * socket (see preload.c). This header only names the file names it uses, so
 * the simulator and the shim agree on them.
 */
#ifndef ACCESSORY_SIM_PRELOAD_H
#define ACCESSORY_SIM_PRELOAD_H

/* Uevent sockets are bound at $UMOCKDEV_DIR/event00PPPPPPPF...: "event00",
 * the pid in 7 digits, then the fd. umockdev's sender globs event[0-9]*, so
 * it sends to them; umockdev's own name (event<fd>, printed with %i) never
 * starts with "0" past "event0", so the two kinds can be told apart. */
#define ACCESSORY_SIM_UEVENT_PREFIX "event00"

/* A lock file in $UMOCKDEV_DIR: the simulator holds it (flock LOCK_EX) while
 * umockdev sends a uevent (it globs the sockets, then connects to each and
 * aborts on ENOENT), and the shim holds it while it unlinks a socket. */
#define ACCESSORY_SIM_UEVENT_LOCK ".accessory-sim-uevent.lock"

#endif
