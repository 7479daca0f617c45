/*
 * WeakA and Mixed (both have weak definitions, so both carry MH_WEAK_DEFINES).
 * WeakA defines everything weakly. Mixed defines wc_override and wc_override_fn
 * non-weakly (a non-weak definition in a weak-defining image, loaded after WeakA's
 * weak ones) and the rest weakly. Each image reads its own names through data
 * pointers and code; those references are rebound to the coalesced winner.
 */
#include "fixture.h"

#ifdef LIB_WEAKA
#define TAG 2000
#define PREFIX(x) weaka_##x
#define OVERRIDE_DEF FIXTURE_WEAK_DEF
#else
#define TAG 3000
#define PREFIX(x) mixed_##x
#define OVERRIDE_DEF
#endif

FIXTURE_WEAK_DEF int wc_value = TAG + 1;
OVERRIDE_DEF int wc_override = TAG + 2;
FIXTURE_WEAK_DEF int wc_first_weak = TAG + 3;
FIXTURE_WEAK_DEF int wc_fn(int x) { return x * TAG + 1; }
OVERRIDE_DEF int wc_override_fn(int x) { return x * TAG + 2; }

int *PREFIX(value_ptr) = &wc_value;
int *PREFIX(override_ptr) = &wc_override;
int *PREFIX(first_weak_ptr) = &wc_first_weak;
int (*PREFIX(fn_ptr))(int) = wc_fn;
int (*PREFIX(override_fn_ptr))(int) = wc_override_fn;

unsigned PREFIX(check)(void) {
    unsigned h = TAG;
    h = fixture_mix(h, (unsigned)wc_value);
    h = fixture_mix(h, (unsigned)wc_override);
    h = fixture_mix(h, (unsigned)wc_first_weak);
    h = fixture_mix(h, (unsigned)wc_fn(5));
    h = fixture_mix(h, (unsigned)wc_override_fn(5));
    h = fixture_mix(h, (unsigned)*PREFIX(value_ptr));
    h = fixture_mix(h, (unsigned)*PREFIX(override_ptr));
    h = fixture_mix(h, (unsigned)*PREFIX(first_weak_ptr));
    h = fixture_mix(h, (unsigned)PREFIX(fn_ptr)(7));
    h = fixture_mix(h, (unsigned)PREFIX(override_fn_ptr)(7));
    return h;
}
