// Page-in linking's fault path on the faulting thread (docs/page-in.md): a process-wide
// SIGBUS handler and a registry of the launch regions whose missing pages it fills.
//
// A region's segments are registered with a userfaultfd opened with UFFD_FEATURE_SIGBUS:
// a touch of a missing page raises SIGBUS on the touching thread instead of waiting for a
// handler thread. The handler looks the address up in the registry and calls the region's
// fill function with a page-sized staging buffer on the faulting thread's stack; the fill
// installs the page (UFFDIO_COPY) and the instruction is retried. A page that cannot be
// filled ends the process by SIGBUS with the default action, after the fill's one line;
// any other SIGBUS goes to the handler that was installed before (the Swift runtime's
// crash handler, or the default action).
//
// The fill may run on any thread, at any instruction, on many threads at once: on a thread
// inside malloc, or on one made by a raw clone(2) that shares another thread's thread
// pointer. So the functions below that the fill calls touch no thread-local (errno
// included), take no lock and allocate nothing.
#ifndef DYLD3_CPAGEIN_H
#define DYLD3_CPAGEIN_H

#include <stddef.h>
#include <stdint.h>

/// The staging buffer's size: page-in needs pages of exactly this size.
#define DYLD3_PAGEIN_PAGE_SIZE 4096

/// The most regions live at once (launches with page-in memory in one process).
#define DYLD3_PAGEIN_REGIONS 256

/// What a fill did with a fault.
enum {
    /// The address is not in one of the region's ranges: the previous handler decides.
    DYLD3_PAGEIN_NOT_MINE = 0,
    /// Retry the instruction: the page is there now, or the memory is gone and the retry
    /// faults as on any unmapped address.
    DYLD3_PAGEIN_RETRY = 1,
    /// The page cannot be filled; the fill has written its one line. The process ends by
    /// SIGBUS with the default action, not through the previous handler.
    DYLD3_PAGEIN_FAILED = 2,
};

/// Fills the missing page holding `address`, assembling it in `staging`
/// (DYLD3_PAGEIN_PAGE_SIZE bytes): one of the values above. Runs in a signal handler on the
/// faulting thread: no allocation, no locks, no thread-locals.
typedef int (*dyld3_pagein_fill)(void *context, uint64_t address, void *staging);

/// Installs the SIGBUS handler once per process (later calls do nothing); 0 or -errno.
int dyld3_pagein_install(void);

/// Makes [start, end) a live region whose faults `fill` resolves with `context`: the slot
/// to deactivate it with, or -1 when every slot is taken.
int dyld3_pagein_activate(uint64_t start, uint64_t end, void *context, dyld3_pagein_fill fill);

/// Ends a region: no fill starts for it after this returns. Waits up to `limit_ns` for the
/// fills that had started to return: 1 when they all did (the slot is free again), 0 when
/// one is still running (a thread stopped inside its fill): the slot then stays taken and
/// the caller must keep the region's context alive for good.
int dyld3_pagein_deactivate(int slot, uint64_t limit_ns);

/// Writes `dyld3: page-in: PATH: cannot fill page +0xVMOFFSET: REASON\n` to standard error
/// (a failed fill's one line; `path` and `reason` are UTF-8 bytes, not NUL-terminated).
void dyld3_pagein_report_failure(const void *path, uint64_t path_length, uint64_t vm_offset, const void *reason, uint64_t reason_length);

// The fault path's system calls, made directly: each returns its result or -errno and
// leaves errno alone.

/// Reads up to `count` bytes of `fd` at `offset` (pread, retried when interrupted): the bytes
/// read, 0 at the file's end, or -errno.
int64_t dyld3_pagein_pread(int fd, void *buffer, uint64_t count, uint64_t offset);

/// Installs `length` bytes (whole pages) from `source` at `destination` with UFFDIO_COPY,
/// without waking waiters (none wait under UFFD_FEATURE_SIGBUS): 0 or -errno (-EEXIST: a
/// page was already there; -ENOENT, -EFAULT: the range is gone), the bytes installed in
/// `*copied`.
int dyld3_pagein_copy(int fd, uint64_t destination, const void *source, uint64_t length, int64_t *copied);

// The page hash: BoringSSL's one-shot digests, linked through swift-crypto (whose C library
// prefixes every BoringSSL symbol with CCryptoBoringSSL_). Each hashes with a context on the
// caller's stack: no allocation, no lock, no thread-local once the process has hashed once
// (BoringSSL detects the CPU's features on first use; dyld3_pagein_install hashes first).
uint8_t *CCryptoBoringSSL_SHA1(const uint8_t *data, size_t length, uint8_t out[20]);
uint8_t *CCryptoBoringSSL_SHA256(const uint8_t *data, size_t length, uint8_t out[32]);
uint8_t *CCryptoBoringSSL_SHA384(const uint8_t *data, size_t length, uint8_t out[48]);

/// Whether the `count` bytes at `bytes`, hashed under code-signature hash type `type`
/// (kSecCodeSignatureHash*: 1 SHA-1, 2 SHA-256, 3 SHA-256 truncated, 4 SHA-384), begin with
/// the `expected_count` bytes at `expected`: 1 or 0 (0 for any other type, or an expected
/// hash longer than the digest).
int dyld3_pagein_hash_matches(uint8_t type, const void *bytes, uint64_t count, const void *expected, uint64_t expected_count);

#endif
