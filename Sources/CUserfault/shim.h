// The userfaultfd system call and ioctls, and the eventfd and poll a page-in handler waits
// on, as static inline functions: Swift cannot call the variadic syscall() or ioctl().
// Every function returns a value >= 0 on success and -errno on failure.
#ifndef DYLD3_CUSERFAULT_SHIM_H
#define DYLD3_CUSERFAULT_SHIM_H

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

/// A new userfaultfd (close-on-exec, non-blocking), through the system call or, when that
/// is refused, /dev/userfaultfd. `user_mode_only`: faults the kernel takes on the process's
/// behalf (copy_to_user in read(2)) are not delivered and fail with EFAULT.
static inline int dyld3_uffd_open(int user_mode_only, int *through_device) {
    int flags = O_CLOEXEC | O_NONBLOCK | (user_mode_only ? UFFD_USER_MODE_ONLY : 0);
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

/// The API handshake: no optional features; fails unless registering and UFFDIO_COPY exist.
static inline int dyld3_uffd_api(int fd) {
    struct uffdio_api api = { .api = UFFD_API, .features = 0 };
    if (ioctl(fd, UFFDIO_API, &api) != 0) return -errno;
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

static inline int dyld3_uffd_unregister(int fd, uint64_t start, uint64_t length) {
    struct uffdio_range range = { .start = start, .len = length };
    return ioctl(fd, UFFDIO_UNREGISTER, &range) == 0 ? 0 : -errno;
}

/// Installs `length` bytes from `source` at `destination` atomically and wakes the threads
/// waiting on it. -EEXIST when the page was already there (a second fault message for a
/// page an earlier one filled): the waiters are woken all the same.
static inline int dyld3_uffd_copy(int fd, uint64_t destination, const void *source, uint64_t length) {
    struct uffdio_copy copy = { .dst = destination, .src = (uint64_t)(uintptr_t)source, .len = length, .mode = 0 };
    if (ioctl(fd, UFFDIO_COPY, &copy) == 0) return 0;
    if (errno == EEXIST) {
        struct uffdio_range range = { .start = destination, .len = length };
        ioctl(fd, UFFDIO_WAKE, &range);
        return -EEXIST;
    }
    return -errno;
}

static inline int dyld3_uffd_wake(int fd, uint64_t start, uint64_t length) {
    struct uffdio_range range = { .start = start, .len = length };
    return ioctl(fd, UFFDIO_WAKE, &range) == 0 ? 0 : -errno;
}

/// The most fault messages one read takes (one read(2) returns every pending message up
/// to the buffer's size).
#define DYLD3_UFFD_BATCH 16

/// Reads the pending events in one read(2), up to DYLD3_UFFD_BATCH: stores each page
/// fault's address in `addresses` (room for DYLD3_UFFD_BATCH) and returns how many; other
/// events are skipped. `*full` is 1 when the batch was full (more may be pending, read
/// again), 0 when fewer were pending (wait again). 0 with `*full` = 0 when none is pending;
/// -errno on failure.
static inline int dyld3_uffd_read_faults(int fd, uint64_t *addresses, int *full) {
    struct uffd_msg messages[DYLD3_UFFD_BATCH];
    *full = 0;
    ssize_t got = read(fd, messages, sizeof messages);
    if (got < 0) return (errno == EAGAIN || errno == EINTR) ? 0 : -errno;
    if (got % (ssize_t)sizeof messages[0] != 0) return -EIO;
    int count = (int)(got / (ssize_t)sizeof messages[0]), faults = 0;
    for (int index = 0; index < count; index++) {
        if (messages[index].event == UFFD_EVENT_PAGEFAULT) addresses[faults++] = messages[index].arg.pagefault.address;
    }
    *full = count == DYLD3_UFFD_BATCH;
    return faults;
}

/// An eventfd that stops a handler (close-on-exec).
static inline int dyld3_stop_event(void) {
    int fd = eventfd(0, EFD_CLOEXEC);
    return fd >= 0 ? fd : -errno;
}

static inline int dyld3_signal_stop(int fd) {
    uint64_t one = 1;
    return write(fd, &one, sizeof one) == (ssize_t)sizeof one ? 0 : -errno;
}

/// Names the calling thread (at most 15 bytes; shown in /proc/self/task/*/comm).
static inline int dyld3_name_thread(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0) == 0 ? 0 : -errno;
}

/// Waits until `uffd` has an event or `stop` is signalled: bit 0 for uffd, bit 1 for stop.
static inline int dyld3_wait(int uffd, int stop) {
    struct pollfd fds[2] = { { .fd = uffd, .events = POLLIN }, { .fd = stop, .events = POLLIN } };
    for (;;) {
        int ready = poll(fds, 2, -1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return -errno;
        return ((fds[0].revents & (POLLIN | POLLERR | POLLHUP)) ? 1 : 0) | ((fds[1].revents & POLLIN) ? 2 : 0);
    }
}

#endif
