// openat2 and renameat2 for unpacking archives, as static inline functions: Swift cannot
// call the variadic syscall(), and glibc has no openat2 wrapper.
// Every function returns a value >= 0 on success and -errno on failure.
#ifndef DYLD3_CUNPACK_SHIM_H
#define DYLD3_CUNPACK_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RESOLVE_NO_SYMLINKS
#define RESOLVE_NO_SYMLINKS 0x04
#endif
#ifndef RESOLVE_BENEATH
#define RESOLVE_BENEATH 0x08
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

/// openat2(2)'s `struct open_how`, spelled here so that older kernel headers do not matter.
struct dyld3_open_how {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};

/// `path` opened relative to `directory` with `flags` and `mode`, resolved beneath it and
/// through no symbolic link at any level (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): the
/// descriptor, else -errno (-ENOSYS where the kernel has no openat2).
static inline int dyld3_open_beneath(int directory, const char *path, int flags, unsigned mode) {
#ifdef SYS_openat2
    struct dyld3_open_how how = { .flags = (uint64_t)(unsigned)flags, .mode = mode, .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS };
    long fd = syscall(SYS_openat2, directory, path, &how, sizeof how);
    return fd >= 0 ? (int)fd : -errno;
#else
    (void)directory; (void)path; (void)flags; (void)mode;
    return -ENOSYS;
#endif
}

/// Renames `from` to `to` (both relative to `directory`) unless `to` exists: 0, else
/// -errno (-EEXIST when it exists; -EINVAL or -ENOSYS where the file system or kernel
/// cannot refuse to replace).
static inline int dyld3_rename_noreplace(int directory, const char *from, const char *to) {
#ifdef SYS_renameat2
    long result = syscall(SYS_renameat2, directory, from, directory, to, RENAME_NOREPLACE);
    return result == 0 ? 0 : -errno;
#else
    (void)directory; (void)from; (void)to;
    return -ENOSYS;
#endif
}

#endif
