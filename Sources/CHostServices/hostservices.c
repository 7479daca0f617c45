// The host services the project's libSystem calls: see hostservices.h.
#include "hostservices.h"

#include <pthread.h>
#include <stdlib.h>

// Host services: threads for code in the images.

struct thread_start {
    int (*function)(int);
    int argument;
    int result;
    pthread_t thread;
};

static void *run_thread(void *context) {
    struct thread_start *start = context;
    start->result = start->function(start->argument);
    return NULL;
}

static int64_t host_thread_start(int (*function)(int), int argument) {
    struct thread_start *start = calloc(1, sizeof *start);
    if (start == NULL) return 0;
    start->function = function;
    start->argument = argument;
    if (pthread_create(&start->thread, NULL, run_thread, start) != 0) {
        free(start);
        return 0;
    }
    return (int64_t)(uintptr_t)start;
}

static int host_thread_join(int64_t handle) {
    struct thread_start *start = (struct thread_start *)(uintptr_t)handle;
    if (start == NULL) return -1;
    pthread_join(start->thread, NULL);
    int result = start->result;
    free(start);
    return result;
}

static struct dyld3_dl_handlers dl_handlers;
static pthread_once_t dl_once = PTHREAD_ONCE_INIT;
static struct dyld3_dl_handlers dl_pending;

static void set_dl_handlers(void) { dl_handlers = dl_pending; }

void dyld3_dl_set_handlers(struct dyld3_dl_handlers handlers) {
    dl_pending = handlers;
    pthread_once(&dl_once, set_dl_handlers);
}

static void *host_dlopen(const void *table, const char *path, int mode) {
    return dl_handlers.open ? (void *)(uintptr_t)dl_handlers.open((uint64_t)(uintptr_t)table, path, mode) : NULL;
}

static void *host_dlsym(const void *table, void *handle, const char *name) {
    return dl_handlers.symbol ? (void *)(uintptr_t)dl_handlers.symbol((uint64_t)(uintptr_t)table, (uint64_t)(uintptr_t)handle, name) : NULL;
}

static int host_dlclose(const void *table, void *handle) {
    return dl_handlers.close ? dl_handlers.close((uint64_t)(uintptr_t)table, (uint64_t)(uintptr_t)handle) : -1;
}

static int host_dladdr(const void *table, const void *address, struct dyld3_dl_info *info) {
    return dl_handlers.address ? dl_handlers.address((uint64_t)(uintptr_t)table, (uint64_t)(uintptr_t)address, info) : 0;
}

static const char *host_dlerror(const void *table) {
    return dl_handlers.error ? dl_handlers.error((uint64_t)(uintptr_t)table) : NULL;
}

void dyld3_host_services_words(uint64_t words[DYLD3_HOST_SERVICES_WORDS]) {
    words[0] = DYLD3_HOST_SERVICES_VERSION;
    words[1] = (uint64_t)(uintptr_t)&host_thread_start;
    words[2] = (uint64_t)(uintptr_t)&host_thread_join;
    words[3] = (uint64_t)(uintptr_t)&host_dlopen;
    words[4] = (uint64_t)(uintptr_t)&host_dlsym;
    words[5] = (uint64_t)(uintptr_t)&host_dlclose;
    words[6] = (uint64_t)(uintptr_t)&host_dladdr;
    words[7] = (uint64_t)(uintptr_t)&host_dlerror;
}
