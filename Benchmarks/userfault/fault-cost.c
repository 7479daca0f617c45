/*
 * What one first touch of a page costs on this kernel, for each way page-in linking could
 * fill it (docs/page-in.md, "Designs measured"). No fixups are applied: only the kernel's
 * share. 2048 pages touched in order, one word each; microseconds per page.
 *
 *   cc -O2 -o /tmp/fault-cost Benchmarks/userfault/fault-cost.c
 *   head -c 8388608 /dev/urandom > /tmp/fault-cost.data
 *   for mode in cow sigbus sigbus-pread sigbus-16 sigbus-pread-16; do chrt -f 10 /tmp/fault-cost $mode /tmp/fault-cost.data; done
 *
 * cow:             a private file mapping written (an eager launch's copy-on-write fault)
 * sigbus:          UFFD_FEATURE_SIGBUS, the faulting thread installs the page (UFFDIO_COPY)
 * sigbus-pread:    the same, the page's bytes read from the file first (what page-in does)
 * sigbus-16:       each fault installs 16 pages with one UFFDIO_COPY (fault-around)
 * sigbus-pread-16: each fault reads 16 pages with one pread, then one UFFDIO_COPY
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGES 2048
static int uffd, file, around, readFile;
static char *region;
static char staging[16 * 4096];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void fill(int signal, siginfo_t *info, void *context) {
    (void)signal; (void)context;
    uint64_t page = (uint64_t)info->si_addr & ~4095ULL;
    uint64_t count = ((uint64_t)region + PAGES * 4096ULL - page) / 4096;
    if (count > (uint64_t)around) count = around;
    if (readFile) pread(file, staging, count * 4096, page - (uint64_t)region);
    struct uffdio_copy copy = { .dst = page, .src = (uint64_t)staging, .len = count * 4096, .mode = UFFDIO_COPY_MODE_DONTWAKE };
    ioctl(uffd, UFFDIO_COPY, &copy);
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: fault-cost cow|sigbus|sigbus-pread|sigbus-16|sigbus-pread-16 DATA\n"); return 64; }
    const char *mode = argv[1];
    file = open(argv[2], O_RDONLY);
    if (file < 0) { perror(argv[2]); return 1; }
    volatile long sum = 0;
    double start, end;
    if (strcmp(mode, "cow") == 0) {
        region = mmap(0, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, file, 0);
        start = now();
        for (int page = 0; page < PAGES; page++) region[page * 4096] = 1;
        end = now();
    } else {
        around = strstr(mode, "-16") ? 16 : 1;
        readFile = strstr(mode, "pread") != 0;
        uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1 /* UFFD_USER_MODE_ONLY */);
        struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_SIGBUS };
        if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api) != 0) { perror("userfaultfd"); return 1; }
        region = mmap(0, PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        struct uffdio_register reg = { .range = { .start = (uint64_t)region, .len = PAGES * 4096 }, .mode = UFFDIO_REGISTER_MODE_MISSING };
        if (ioctl(uffd, UFFDIO_REGISTER, &reg) != 0) { perror("UFFDIO_REGISTER"); return 1; }
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = fill;
        action.sa_flags = SA_SIGINFO;
        sigaction(SIGBUS, &action, 0);
        start = now();
        for (int page = 0; page < PAGES; page++) sum += region[page * 4096];
        end = now();
    }
    printf("%-16s %.2f µs per page\n", mode, (end - start) / PAGES);
    return 0;
}
