/* Base.framework: links Top upward (Top sits above it) and calls into it only after launch. */
#include "fixture.h"

extern int top_value;
extern int top_fn(int);

int base_value = 71;
int *base_top_ptr = &top_value;
static int base_init_snapshot = -1;

FIXTURE_INITIALIZER()
__attribute__((constructor)) static void base_snapshot(void) { base_init_snapshot = fixture_init_count; }

unsigned base_check(void) {
    unsigned h = 71;
    h = fixture_mix(h, (unsigned)*base_top_ptr);
    h = fixture_mix(h, (unsigned)top_fn(2));
    h = fixture_mix(h, (unsigned)base_init_snapshot);
    return h;
}
