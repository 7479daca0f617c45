// The userfaultfd system call and ioctls, as static inline functions: Swift cannot call the
// variadic syscall() or ioctl().
// Every function returns a value >= 0 on success and -errno on failure.
#ifndef DYLD3_CUSERFAULT_SHIM_H
#define DYLD3_CUSERFAULT_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

/// A new userfaultfd (close-on-exec, non-blocking), through the system call or, when that
/// is refused, /dev/userfaultfd. UFFD_USER_MODE_ONLY, what an unprivileged process may ask
/// for: a fault the kernel takes on the process's behalf (copy_to_user in read(2)) is not
/// handled and the system call fails with EFAULT (as it would under UFFD_FEATURE_SIGBUS anyway).
static inline int dyld3_uffd_open(int *through_device) {
    int flags = O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY;
    *through_device = 0;
#ifdef SYS_userfaultfd
    long fd = syscall(SYS_userfaultfd, flags);
    if (fd >= 0) return (int)fd;
    int first = errno;
#else
    int first = ENOSYS;
#endif
    int device = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (device < 0) return -first;
    int fd2 = ioctl(device, USERFAULTFD_IOC_NEW, flags);
    int second = errno;
    close(device);
    if (fd2 < 0) return -(second ? second : first);
    *through_device = 1;
    return fd2;
}

/// The API handshake, asking for UFFD_FEATURE_SIGBUS: a missing-page fault raises SIGBUS on
/// the faulting thread instead of queueing a message. -ENOTSUP unless the kernel offers it
/// and registering.
static inline int dyld3_uffd_api(int fd) {
    struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_SIGBUS };
    if (ioctl(fd, UFFDIO_API, &api) != 0) return -errno;
    if (!(api.features & UFFD_FEATURE_SIGBUS)) return -ENOTSUP;
    if (!(api.ioctls & (1ULL << _UFFDIO_REGISTER))) return -ENOTSUP;
    return 0;
}

/// Registers [start, start + length) for missing-page faults; fails unless UFFDIO_COPY works there.
static inline int dyld3_uffd_register(int fd, uint64_t start, uint64_t length) {
    struct uffdio_register reg = { .range = { .start = start, .len = length }, .mode = UFFDIO_REGISTER_MODE_MISSING };
    if (ioctl(fd, UFFDIO_REGISTER, &reg) != 0) return -errno;
    if (!(reg.ioctls & (1ULL << _UFFDIO_COPY))) return -ENOTSUP;
    return 0;
}

/// Installs `length` bytes (whole pages) from `source` at `destination` atomically, the
/// bytes installed in `*copied`. -EEXIST when a page was already there (another thread
/// installed it first: `*copied` says how far the copy got); -ENOENT or -EFAULT when the
/// range is no longer mapped or registered.
static inline int dyld3_uffd_copy(int fd, uint64_t destination, const void *source, uint64_t length, int64_t *copied) {
    struct uffdio_copy copy = { .dst = destination, .src = (uint64_t)(uintptr_t)source, .len = length, .mode = UFFDIO_COPY_MODE_DONTWAKE };
    int result = ioctl(fd, UFFDIO_COPY, &copy) == 0 ? 0 : -errno;
    *copied = copy.copy > 0 ? copy.copy : 0;
    return result;
}

#endif
