import CFileIdentity

/// Which file is at a path: its device, its inode, and the time it was made (its birth
/// time, `statx(2)`'s `stx_btime`). It changes when the file is removed and made again, even
/// when the new file gets the old inode back (ext4 hands a freed one straight back), and it
/// stays the same through a `chmod`, `chown` or SELinux relabel, which change only the
/// file's change time.
///
/// On a file system that keeps no birth time, the change time stands in for it: a file made
/// again is still told apart, but a `chmod` then counts as a new file too.
struct FileIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    /// Nanoseconds since the Unix epoch: the birth time, or the change time without one.
    var time: Int64
    /// Whether ``time`` is the birth time.
    var isBirthTime: Bool

    /// The file at `path` (a symbolic link followed), or nil when there is none.
    init?(path: String) {
        var identity = accessory_file_identity()
        guard accessory_file_identity_of(path, &identity) == 0 else { return nil }
        device = identity.device
        inode = identity.inode
        time = identity.time
        isBirthTime = identity.birth != 0
    }
}
