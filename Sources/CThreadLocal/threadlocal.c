// Thread-local variables for Mach-O x86_64 code run in this process: see threadlocal.h.
#include "threadlocal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct template {
    const void *start;
    uint64_t initial_size;
    uint64_t total_size;
    int live;
};

/// One thread's block for one key, valid while `generation` is the key's.
struct entry {
    void *block;
    uint64_t generation;
};

static struct template templates[DYLD3_TLV_KEYS];
/// Bumped when a key is created and when it is released: an entry made for an earlier use
/// of the key no longer matches. 0 never matches (entries start at 0). Read by the thunk.
__attribute__((visibility("hidden"))) _Atomic uint64_t dyld3_tlv_generations[DYLD3_TLV_KEYS];
/// Per thread, per key: the thunk reads it through the initial-exec TLS model.
__attribute__((visibility("hidden"), tls_model("initial-exec"))) __thread struct entry dyld3_tlv_entries[DYLD3_TLV_KEYS];
static __thread int cleanup_registered;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t cleanup_key;
static pthread_once_t cleanup_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t next_generation = 1;

static void free_blocks(void *unused) {
    (void)unused;
    for (int key = 0; key < DYLD3_TLV_KEYS; key++) {
        free(dyld3_tlv_entries[key].block);
        dyld3_tlv_entries[key].block = NULL;
        dyld3_tlv_entries[key].generation = 0;
    }
}

static void make_cleanup_key(void) { pthread_key_create(&cleanup_key, free_blocks); }

int64_t dyld3_tlv_key_create(uint64_t template_start, uint64_t initial_size, uint64_t total_size) {
    if (initial_size > total_size) return -1;
    pthread_mutex_lock(&lock);
    int64_t found = -1;
    for (int key = 0; key < DYLD3_TLV_KEYS; key++) {
        if (!templates[key].live) {
            templates[key] = (struct template){(const void *)(uintptr_t)template_start, initial_size, total_size, 1};
            atomic_store(&dyld3_tlv_generations[key], atomic_fetch_add(&next_generation, 1));
            found = key;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

void dyld3_tlv_key_release(int64_t key) {
    if (key < 0 || key >= DYLD3_TLV_KEYS) return;
    pthread_mutex_lock(&lock);
    templates[key].live = 0;
    atomic_store(&dyld3_tlv_generations[key], atomic_fetch_add(&next_generation, 1));
    pthread_mutex_unlock(&lock);
}

static void fail(const char *message) {
    (void)!write(2, message, strlen(message));
    abort();
}

/// The thunk's slow path: this thread's first use of the descriptor's key (or of a key
/// reused since). Returns the variable's address.
__attribute__((visibility("hidden"))) void *dyld3_tlv_allocate(const uint64_t *descriptor) {
    uint64_t key = descriptor[1];
    if (key >= DYLD3_TLV_KEYS) fail("dyld3: a thread-local variable's descriptor holds no key this loader made\n");
    pthread_mutex_lock(&lock);
    struct template template = templates[key];
    uint64_t generation = atomic_load(&dyld3_tlv_generations[key]);
    pthread_mutex_unlock(&lock);
    if (!template.live) fail("dyld3: a thread-local variable of an image no longer loaded was used\n");
    struct entry *entry = &dyld3_tlv_entries[key];
    free(entry->block);
    uint64_t size = (template.total_size + 63) & ~(uint64_t)63;
    void *block = aligned_alloc(64, size ? size : 64);
    if (block == NULL) fail("dyld3: out of memory for a thread's thread-local variables\n");
    memcpy(block, template.start, template.initial_size);
    memset((char *)block + template.initial_size, 0, size - template.initial_size);
    entry->block = block;
    entry->generation = generation;
    if (!cleanup_registered) {
        pthread_once(&cleanup_once, make_cleanup_key);
        pthread_setspecific(cleanup_key, (void *)1);
        cleanup_registered = 1;
    }
    return (char *)block + descriptor[2];
}

// The thunk: RDI = the descriptor; returns RAX = the variable's address in this thread's
// block; every other register (vector state included) is as it was.
__asm__(
    ".text\n"
    ".globl dyld3_tlv_get_addr\n"
    ".hidden dyld3_tlv_get_addr\n"
    ".type dyld3_tlv_get_addr, @function\n"
    "dyld3_tlv_get_addr:\n"
    "  movq 8(%rdi), %rax\n"
    "  cmpq $" "1024" ", %rax\n"
    "  jae 2f\n"
    "  pushq %rcx\n"
    "  pushq %rdx\n"
    "  movq %rax, %rcx\n"
    "  shlq $4, %rcx\n"
    "  movq dyld3_tlv_entries@GOTTPOFF(%rip), %rdx\n"
    "  addq %fs:0, %rdx\n"
    "  addq %rcx, %rdx\n"
    "  leaq dyld3_tlv_generations(%rip), %rcx\n"
    "  movq (%rcx,%rax,8), %rcx\n"
    "  cmpq %rcx, 8(%rdx)\n"
    "  jne 1f\n"
    "  movq (%rdx), %rax\n"
    "  addq 16(%rdi), %rax\n"
    "  popq %rdx\n"
    "  popq %rcx\n"
    "  ret\n"
    "1:\n"
    "  popq %rdx\n"
    "  popq %rcx\n"
    "2:\n"
    // Slow path: keep the general registers C may change, and the whole vector state.
    "  pushq %rbp\n"
    "  movq %rsp, %rbp\n"
    "  subq $8, %rsp\n"            // -8(%rbp): the result
    "  pushq %rdi\n"
    "  pushq %rsi\n"
    "  pushq %rdx\n"
    "  pushq %rcx\n"
    "  pushq %r8\n"
    "  pushq %r9\n"
    "  pushq %r10\n"
    "  pushq %r11\n"
    "  movq dyld3_tlv_xsave_size(%rip), %rax\n"
    "  subq %rax, %rsp\n"
    "  andq $-64, %rsp\n"
    "  movq %rsp, %rdi\n"          // zero the XSAVE header (64 bytes at 512)
    "  xorl %eax, %eax\n"
    "  movq %rax, 512(%rdi)\n"
    "  movq %rax, 520(%rdi)\n"
    "  movq %rax, 528(%rdi)\n"
    "  movq %rax, 536(%rdi)\n"
    "  movq %rax, 544(%rdi)\n"
    "  movq %rax, 552(%rdi)\n"
    "  movq %rax, 560(%rdi)\n"
    "  movq %rax, 568(%rdi)\n"
    "  movl $-1, %eax\n"
    "  movl $-1, %edx\n"
    "  xsave (%rsp)\n"
    "  movq -16(%rbp), %rdi\n"
    "  call dyld3_tlv_allocate\n"
    "  movq %rax, -8(%rbp)\n"
    "  movl $-1, %eax\n"
    "  movl $-1, %edx\n"
    "  xrstor (%rsp)\n"
    "  movq -72(%rbp), %r11\n"
    "  movq -64(%rbp), %r10\n"
    "  movq -56(%rbp), %r9\n"
    "  movq -48(%rbp), %r8\n"
    "  movq -40(%rbp), %rcx\n"
    "  movq -32(%rbp), %rdx\n"
    "  movq -24(%rbp), %rsi\n"
    "  movq -16(%rbp), %rdi\n"
    "  movq -8(%rbp), %rax\n"
    "  movq %rbp, %rsp\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size dyld3_tlv_get_addr, .-dyld3_tlv_get_addr\n");

void dyld3_tlv_get_addr(void);

/// The XSAVE area's size for every state component the OS enabled (CPUID leaf 0xD).
__attribute__((visibility("hidden"))) uint64_t dyld3_tlv_xsave_size = 4096;

__attribute__((constructor)) static void measure_xsave(void) {
    unsigned eax = 0xd, ebx = 0, ecx = 0, edx = 0;
    __asm__ volatile("cpuid" : "+a"(eax), "=b"(ebx), "+c"(ecx), "=d"(edx));
    if (ebx >= 576) dyld3_tlv_xsave_size = ebx + 64;
}

uint64_t dyld3_tlv_thunk(void) { return (uint64_t)(uintptr_t)&dyld3_tlv_get_addr; }
