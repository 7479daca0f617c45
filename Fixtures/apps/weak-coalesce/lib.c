/* First and Second: the same weak definitions with different values, and accessors that use them. */
#include "fixture.h"

#ifdef LIB_FIRST
#define TAG 100
#define PREFIX(x) first_##x
#else
#define TAG 200
#define PREFIX(x) second_##x
#endif

FIXTURE_WEAK_DEF int coalesced_value = TAG + 1;
FIXTURE_WEAK_DEF int coalesced_table[4] = {TAG + 2, TAG + 3, TAG + 4, TAG + 5};
FIXTURE_WEAK_DEF int coalesced_fn(int x) { return x * TAG + 7; }
FIXTURE_WEAK_DEF int main_owned_value = TAG + 9;

/* References from data (weak binds in tables) and from code (weak binds in the GOT). */
int *PREFIX(value_ptr) = &coalesced_value;
int *PREFIX(table_ptr) = &coalesced_table[2];
int (*PREFIX(fn_ptr))(int) = coalesced_fn;

unsigned PREFIX(check)(void) {
    unsigned h = TAG;
    h = fixture_mix(h, (unsigned)coalesced_value);
    h = fixture_mix(h, (unsigned)coalesced_table[1]);
    h = fixture_mix(h, (unsigned)coalesced_fn(3));
    h = fixture_mix(h, (unsigned)main_owned_value);
    h = fixture_mix(h, (unsigned)*PREFIX(value_ptr));
    h = fixture_mix(h, (unsigned)*PREFIX(table_ptr));
    h = fixture_mix(h, (unsigned)PREFIX(fn_ptr)(4));
    h = fixture_mix(h, (unsigned)(PREFIX(value_ptr) == &coalesced_value));
    return h;
}
