// Thread-local variables of the Mach-O images a launch runs (docs/dyld-rules.md, rule 23),
// and the host services the project's libSystem calls (threads, dlopen and its family).
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

/// The project's libSystem exports `_dyld3_host_services`, words the loader fills so that
/// code in the images can use services of this process:
///   [0] the version (DYLD3_HOST_SERVICES_VERSION)
///   [1] `int64_t thread_start(int (*function)(int), int argument)`: a handle, or 0
///   [2] `int thread_join(int64_t handle)`: waits, returns what the function returned
///   [3] `void *dlopen(const void *table, const char *path, int mode)`
///   [4] `void *dlsym(const void *table, void *handle, const char *name)`
///   [5] `int dlclose(const void *table, void *handle)`
///   [6] `int dladdr(const void *table, const void *address, struct dyld3_dl_info *info)`
///   [7] `const char *dlerror(const void *table)`
/// The dl functions take the table's own address first: it identifies the launch (its
/// loader) that mapped the calling libSystem, so the words are the same in every launch.
#define DYLD3_HOST_SERVICES_VERSION 2
#define DYLD3_HOST_SERVICES_WORDS 8

/// `Dl_info` as Darwin lays it out.
struct dyld3_dl_info {
    const char *fname;
    void *fbase;
    const char *sname;
    void *saddr;
};

/// The table's words as the loader writes them (the version, then the functions'
/// addresses: the same in every launch of this process).
void dyld3_host_services_words(uint64_t words[DYLD3_HOST_SERVICES_WORDS]);

/// Where the dl functions go: set once by the loader (process-wide) before any table is
/// written; until then they fail (dlopen and dlsym return NULL, the others -1 or NULL).
struct dyld3_dl_handlers {
    uint64_t (*open)(uint64_t table, const char *path, int32_t mode);
    uint64_t (*symbol)(uint64_t table, uint64_t handle, const char *name);
    int32_t (*close)(uint64_t table, uint64_t handle);
    int32_t (*address)(uint64_t table, uint64_t address, struct dyld3_dl_info *info);
    const char *(*error)(uint64_t table);
};
void dyld3_dl_set_handlers(struct dyld3_dl_handlers handlers);

#endif
