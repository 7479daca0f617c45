// The host services the project's libSystem calls: threads for code in the images, and
// dlopen and its family (docs/dyld-rules.md, rule 24).
#ifndef DYLD3_CHOSTSERVICES_H
#define DYLD3_CHOSTSERVICES_H

#include <stdint.h>

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
