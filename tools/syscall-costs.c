// What the kernel charges for the steps of a launch that no decoding can remove, measured
// in C on the images of a generated app (tools/syscall-costs builds and runs it):
// the mapping floor as `dyld3 bench` defines it (open, fstat, map every segment, one store
// per writable page), then the same plus each extra a loader that honours the images' own
// rules pays: the `__DATA_CONST` mprotect (in the run of read-write segments mapped at
// once, or with `__DATA_CONST` mapped apart), reading each header through the mapping or
// with pread; and one mprotect of a written page in a process with and without a second
// thread (a TLB shootdown reaches every CPU the process ran on).
//
// usage: syscall-costs LIST_OF_MACHO_FILES [ROUNDS]
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { PAGE = 4096, MAX_SEGMENTS = 16 };
typedef struct { char name[17]; uint64_t vmaddr, vmsize, fileoff, filesize; int prot; } segment;
typedef struct { char *path; segment segments[MAX_SEGMENTS]; int count; uint64_t span; } image;

static image *images;
static int imageCount;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint64_t pages(uint64_t size) { return (size + PAGE - 1) / PAGE * PAGE; }

// Reads the LC_SEGMENT_64 commands of a thin 64-bit Mach-O (what gen-app writes).
static int load_image(const char *path, image *out) {
    unsigned char buffer[65536];
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t got = pread(fd, buffer, sizeof buffer, 0);
    close(fd);
    if (got < 32 || *(uint32_t *)buffer != 0xfeedfacf) return -1;
    uint32_t commands = *(uint32_t *)(buffer + 16);
    size_t offset = 32;
    out->path = strdup(path);
    out->count = 0;
    out->span = 0;
    for (uint32_t i = 0; i < commands && offset + 8 <= (size_t)got; i++) {
        uint32_t command = *(uint32_t *)(buffer + offset), size = *(uint32_t *)(buffer + offset + 4);
        if (size < 8 || offset + size > (size_t)got) return -1;
        if (command == 0x19 && size >= 72) {
            segment s;
            memcpy(s.name, buffer + offset + 8, 16);
            s.name[16] = 0;
            s.vmaddr = *(uint64_t *)(buffer + offset + 24);
            s.vmsize = *(uint64_t *)(buffer + offset + 32);
            s.fileoff = *(uint64_t *)(buffer + offset + 40);
            s.filesize = *(uint64_t *)(buffer + offset + 48);
            s.prot = *(int *)(buffer + offset + 60);
            if (strcmp(s.name, "__PAGEZERO") != 0 && out->count < MAX_SEGMENTS) out->segments[out->count++] = s;
        }
        offset += size;
    }
    if (out->count == 0) return -1;
    uint64_t base = out->segments[0].vmaddr;
    for (int k = 0; k < out->count; k++) {
        uint64_t top = out->segments[k].vmaddr + out->segments[k].vmsize - base;
        if (top > out->span) out->span = top;
    }
    out->span = pages(out->span);
    return 0;
}

static int protection(int machProtection) {
    return (machProtection & 1 ? PROT_READ : 0) | (machProtection & 2 ? PROT_WRITE : 0) | (machProtection & 4 ? PROT_EXEC : 0);
}

enum { PROTECT = 1, DATA_CONST_APART = 2, TOUCH_HEADER = 4, PREAD_HEADER = 8 };

// One launch-like pass over every image; returns its milliseconds.
static double launch(int mode) {
    uint64_t total = 0;
    for (int i = 0; i < imageCount; i++) total += images[i].span + PAGE;
    double start = now_ms();
    char *region = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED) { perror("reserve"); exit(1); }
    char *cursor = region, header[PAGE];
    volatile uint64_t sink = 0;
    for (int i = 0; i < imageCount; i++) {
        image *m = &images[i];
        int fd = open(m->path, O_RDONLY | O_CLOEXEC);
        struct stat status;
        if (fd < 0 || fstat(fd, &status) != 0) { perror(m->path); exit(1); }
        char *base = cursor - m->segments[0].vmaddr;
        for (int k = 0; k < m->count; k++) {
            segment *s = &m->segments[k];
            int writable = s->prot & 2;
            if (s->filesize == 0) {
                mmap(base + s->vmaddr, pages(s->vmsize), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0);
                continue;
            }
            // Back-to-back read-write segments of whole pages take one mmap, as LaunchMemory maps them.
            if (writable && !(mode & DATA_CONST_APART) && k + 1 < m->count && (m->segments[k + 1].prot & 2)
                && s->filesize == s->vmsize && m->segments[k + 1].filesize == m->segments[k + 1].vmsize
                && s->fileoff + s->filesize == m->segments[k + 1].fileoff) {
                mmap(base + s->vmaddr, s->filesize + m->segments[k + 1].filesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
                     (off_t)s->fileoff);
                k++;
                continue;
            }
            mmap(base + s->vmaddr, pages(s->filesize), writable ? PROT_READ | PROT_WRITE : protection(s->prot), MAP_PRIVATE | MAP_FIXED,
                 fd, (off_t)s->fileoff);
            // The zero-filled pages past the file's bytes (a __DATA segment's tail), as LaunchMemory maps them.
            if (pages(s->vmsize) > pages(s->filesize))
                mmap(base + s->vmaddr + pages(s->filesize), pages(s->vmsize) - pages(s->filesize),
                     writable ? PROT_READ | PROT_WRITE : protection(s->prot), MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0);
        }
        if (mode & TOUCH_HEADER) sink += *(volatile uint64_t *)(base + m->segments[0].vmaddr + 16);
        if (mode & PREAD_HEADER) sink += (uint64_t)pread(fd, header, sizeof header, (off_t)m->segments[0].fileoff);
        for (int k = 0; k < m->count; k++) {
            segment *s = &m->segments[k];
            if (!(s->prot & 2)) continue;
            for (uint64_t offset = 0; offset < s->vmsize; offset += PAGE)
                *(volatile uint64_t *)(base + s->vmaddr + offset) = (uint64_t)(uintptr_t)(base + offset);
        }
        if (mode & PROTECT)
            for (int k = 0; k < m->count; k++)
                if (strcmp(m->segments[k].name, "__DATA_CONST") == 0)
                    mprotect(base + m->segments[k].vmaddr, pages(m->segments[k].vmsize), PROT_READ);
        close(fd);
        cursor += m->span + PAGE;
    }
    double elapsed = now_ms() - start;
    munmap(region, total);
    return elapsed;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void *idle_thread(void *unused) {
    (void)unused;
    for (;;) pause();
    return NULL;
}

// Microseconds per mprotect to read-only of one written page, in a split of a larger mapping.
static double mprotect_of_written_page(void) {
    enum { COUNT = 400 };
    char *memory = mmap(NULL, (size_t)PAGE * 3 * COUNT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < 3 * COUNT; i++) memory[(size_t)i * PAGE] = 1;
    double start = now_ms();
    for (int i = 0; i < COUNT; i++) mprotect(memory + (size_t)i * 3 * PAGE, PAGE, PROT_READ);
    double elapsed = now_ms() - start;
    munmap(memory, (size_t)PAGE * 3 * COUNT);
    return elapsed * 1000 / COUNT;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s LIST_OF_MACHO_FILES [ROUNDS]\n", argv[0]); return 2; }
    int rounds = argc > 2 ? atoi(argv[2]) : 21;
    FILE *list = fopen(argv[1], "r");
    if (!list) { perror(argv[1]); return 1; }
    char line[4096];
    int capacity = 64;
    images = malloc(sizeof(image) * capacity);
    while (fgets(line, sizeof line, list)) {
        line[strcspn(line, "\n")] = 0;
        if (imageCount == capacity) images = realloc(images, sizeof(image) * (capacity *= 2));
        if (load_image(line, &images[imageCount]) == 0) imageCount++;
    }
    fclose(list);
    const struct { int mode; const char *name; } variants[] = {
        {0, "floor (open, fstat, map, one store per writable page)"},
        {PROTECT, "floor + __DATA_CONST mprotect"},
        {DATA_CONST_APART, "floor, __DATA_CONST mapped apart"},
        {DATA_CONST_APART | PROTECT, "floor, __DATA_CONST mapped apart + mprotect"},
        {TOUCH_HEADER, "floor + header read through the mapping"},
        {PREAD_HEADER, "floor + header read with pread"},
    };
    enum { VARIANTS = sizeof variants / sizeof variants[0] };
    double *samples = malloc(sizeof(double) * rounds * VARIANTS);
    launch(0);  // warm the page cache
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v < VARIANTS; v++) samples[v * rounds + r] = launch(variants[v].mode);
    printf("%d images, %d interleaved rounds, medians:\n", imageCount, rounds);
    for (int v = 0; v < VARIANTS; v++) {
        qsort(samples + v * rounds, rounds, sizeof(double), compare);
        printf("  %-50s %8.3f ms\n", variants[v].name, samples[v * rounds + rounds / 2]);
    }
    printf("  mprotect of a written page, one thread:          %8.2f us\n", mprotect_of_written_page());
    pthread_t thread;
    pthread_create(&thread, NULL, idle_thread, NULL);
    usleep(10000);
    printf("  mprotect of a written page, a second thread idle: %7.2f us\n", mprotect_of_written_page());
    return 0;
}
