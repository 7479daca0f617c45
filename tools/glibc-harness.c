/*
 * The glibc side of `dyld3 bench` (Sources/LaunchBench): times glibc's loader on an ELF
 * twin built by `tools/gen-app --elf`. Compiled by the bench with the system cc.
 *
 *   glibc-harness ROOT [PREFIX]
 *
 * ROOT is the shared object to load (the bench passes a copy of the twin's executable with
 * DF_1_PIE cleared, since glibc refuses to dlopen a PIE). Commands are read from stdin,
 * one per line, so the bench can interleave samples with its own:
 *
 *   load    dlopen(ROOT, RTLD_NOW), timed alone with CLOCK_MONOTONIC, then dlclose;
 *           prints "ns N"
 *   dirty   dlopen, then sums Private_Dirty of every mapping of a file under PREFIX
 *           (/proc/self/smaps), then dlclose; prints "dirty_kb N"
 *
 * At end of input it prints "maxrss_kb N" (VmHWM of /proc/self/status: ru_maxrss of a
 * process spawned from a big one keeps the spawner's peak) and exits 0. Any failure
 * prints "error TEXT" and exits 1. The twin's initializers live in a renamed section
 * that ld.so does not run, so nothing but loading and relocating is timed.
 *
 *   glibc-harness --rss PROGRAM ARG...
 *
 * runs PROGRAM (stdout and stderr passed through) from this small process, so that its
 * ru_maxrss is its own, then prints "maxrss_kb N" on a line of its own and exits with
 * PROGRAM's status. The bench uses it for the fresh `dyld3 launch` processes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void fail(const char *what) {
    printf("error %s\n", what);
    exit(1);
}

static void *load(const char *root) {
    void *handle = dlopen(root, RTLD_NOW | RTLD_LOCAL);
    if (!handle) fail(dlerror());
    return handle;
}

static void unload(void *handle) {
    if (dlclose(handle) != 0) fail(dlerror());
}

static long long nanoseconds(const struct timespec *t) {
    return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* Private_Dirty (kB) of the mappings whose file lies under prefix. */
static long dirty_kb(const char *prefix) {
    FILE *smaps = fopen("/proc/self/smaps", "r");
    if (!smaps) fail("cannot open /proc/self/smaps");
    char line[4096];
    int counting = 0;
    long total = 0;
    while (fgets(line, sizeof line, smaps)) {
        unsigned long start, end;
        char path[4096];
        path[0] = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &start, &end, path) >= 2 && strchr(line, '-') < strchr(line, ' ')) {
            counting = prefix[0] != 0 && strncmp(path, prefix, strlen(prefix)) == 0;
            continue;
        }
        long kb;
        if (counting && sscanf(line, "Private_Dirty: %ld kB", &kb) == 1) total += kb;
    }
    fclose(smaps);
    return total;
}

/* Peak resident set of this process (kB), from /proc/self/status. */
static long peak_rss_kb(void) {
    FILE *status = fopen("/proc/self/status", "r");
    if (!status) fail("cannot open /proc/self/status");
    char line[256];
    long kb = 0;
    while (fgets(line, sizeof line, status))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
    fclose(status);
    return kb;
}

static int run_measuring_rss(char **argv) {
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) fail("fork");
    if (child == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    struct rusage usage;
    if (wait4(child, &status, 0, &usage) < 0) fail("wait4");
    printf("\nmaxrss_kb %ld\n", usage.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv) {
    if (argc < 2) fail("usage: glibc-harness ROOT [PREFIX] | glibc-harness --rss PROGRAM ARG...");
    if (strcmp(argv[1], "--rss") == 0) {
        if (argc < 3) fail("--rss needs a program");
        return run_measuring_rss(argv + 2);
    }
    const char *root = argv[1];
    const char *prefix = argc > 2 ? argv[2] : "";
    char command[64];
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(command, sizeof command, stdin)) {
        if (strncmp(command, "load", 4) == 0) {
            struct timespec before, after;
            clock_gettime(CLOCK_MONOTONIC, &before);
            void *handle = load(root);
            clock_gettime(CLOCK_MONOTONIC, &after);
            unload(handle);
            printf("ns %lld\n", nanoseconds(&after) - nanoseconds(&before));
        } else if (strncmp(command, "dirty", 5) == 0) {
            void *handle = load(root);
            long kb = dirty_kb(prefix);
            unload(handle);
            printf("dirty_kb %ld\n", kb);
        } else {
            fail("unknown command");
        }
    }
    printf("maxrss_kb %ld\n", peak_rss_kb());
    return 0;
}
