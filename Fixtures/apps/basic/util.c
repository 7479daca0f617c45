/* Util.framework: exported data and functions, plus its own tables of rebased pointers. */
#include "fixture.h"

int util_table[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
int util_big[1024];
const char util_name[] = "Util.framework";

static int op_add(int x) { return x + 17; }
static int op_mul(int x) { return x * 5 + 2; }
static int op_xor(int x) { return x ^ 0x5a5a; }

/* Rebases inside Util: code pointers and data pointers to its own storage. */
int (*util_ops[3])(int) = {op_add, op_mul, op_xor};
int *util_self_ptrs[2] = {&util_table[1], &util_table[7]};
const char *util_strings[2] = {"alpha", "omega"};

int util_scale(int x) { return x * 7 + 3; }

/* Reads through Util's own rebased pointers. */
unsigned util_self_check(void) {
    unsigned h = 11;
    for (int i = 0; i < 3; i++) h = fixture_mix(h, (unsigned)util_ops[i](i + 4));
    h = fixture_mix(h, (unsigned)*util_self_ptrs[0]);
    h = fixture_mix(h, (unsigned)*util_self_ptrs[1]);
    h = fixture_mix(h, (unsigned)util_strings[0][0]);
    h = fixture_mix(h, (unsigned)util_strings[1][4]);
    return h;
}

__attribute__((constructor)) static void util_fill_big(void) {
    for (int i = 0; i < 1024; i++) util_big[i] = i * 3 + 1;
}
