#define _GNU_SOURCE
#include "CFileIdentity.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

int accessory_file_identity_of(const char *path, accessory_file_identity *identity) {
    struct statx sx;
    if (statx(AT_FDCWD, path, 0, STATX_INO | STATX_BTIME | STATX_CTIME, &sx) != 0) {
        if (errno != ENOSYS && errno != EPERM) return -1;
        // A kernel before 4.11, or a seccomp filter that refuses statx: no birth times.
        struct stat st;
        if (stat(path, &st) != 0) return -1;
        identity->device = (uint64_t)st.st_dev;
        identity->inode = (uint64_t)st.st_ino;
        identity->time = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
        identity->birth = 0;
        return 0;
    }
    identity->device = (uint64_t)makedev(sx.stx_dev_major, sx.stx_dev_minor);
    identity->inode = sx.stx_ino;
    const struct statx_timestamp *t = (sx.stx_mask & STATX_BTIME) ? &sx.stx_btime : &sx.stx_ctime;
    identity->time = t->tv_sec * 1000000000 + (int64_t)t->tv_nsec;
    identity->birth = (sx.stx_mask & STATX_BTIME) != 0;
    return 0;
}
