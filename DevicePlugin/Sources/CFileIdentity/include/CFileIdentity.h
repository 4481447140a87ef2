#ifndef C_FILE_IDENTITY_H
#define C_FILE_IDENTITY_H

#include <stdint.h>

/// What identifies a file at a path (a symbolic link followed, as `stat(2)` does): its device,
/// inode, and the time it was made when the file system reports one (`statx(2)`'s
/// STATX_BTIME), else its status change time.
typedef struct {
    uint64_t device;
    uint64_t inode;
    /// Nanoseconds since the Unix epoch.
    int64_t time;
    /// 1 when `time` is the file's birth time, 0 when it is its change time.
    int birth;
} accessory_file_identity;

/// Fills `identity` for `path`: 0, or -1 with errno set (ENOENT when nothing is there).
int accessory_file_identity_of(const char *path, accessory_file_identity *identity);

#endif
