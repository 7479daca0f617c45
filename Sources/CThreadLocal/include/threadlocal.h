// Thread-local variables of the Mach-O images a launch runs (docs/dyld-rules.md, rule 23).
//
// A Mach-O image's `__thread_vars` holds one descriptor per variable: {thunk, key, offset}.
// Code reaches a variable by calling `descriptor->thunk(descriptor)`, which returns its
// address in the calling thread's block for the image, with every register but RAX kept
// (the TLV calling convention). The loader points each thunk at `dyld3_tlv_get_addr` and
// each key at the image's key: a block per thread and key, allocated on a thread's first
// access from the image's template (its `__thread_data` bytes, then zeros for
// `__thread_bss`), freed when the thread ends or, lazily, once its key is released and reused.
#ifndef DYLD3_CTHREADLOCAL_H
#define DYLD3_CTHREADLOCAL_H

#include <stdint.h>

/// The most keys (images with thread-local variables in live launches) at once.
#define DYLD3_TLV_KEYS 1024

/// A key for the image whose template is `initial_size` bytes at address `template_start`
/// followed by zeros up to `total_size`: the lowest free key (so the same sequence of
/// launches gets the same keys), or -1 when all are taken.
int64_t dyld3_tlv_key_create(uint64_t template_start, uint64_t initial_size, uint64_t total_size);

/// Frees `key` (its launch's memory is going away). Blocks threads allocated for it are
/// freed when a thread next uses the key after it is reused, or when the thread ends.
void dyld3_tlv_key_release(int64_t key);

/// The address every descriptor's thunk is set to.
uint64_t dyld3_tlv_thunk(void);

#endif
