/*
 * Strong: non-weak definitions of names that other images define weakly, and no weak
 * definition at all, so the image has no MH_WEAK_DEFINES and takes no part in coalescing
 * although it loads before WeakA and Mixed. Its own code reads its own copies.
 */
#include "fixture.h"

int wc_value = 1001;
int wc_override = 1002;
int wc_fn(int x) { return x * 1000 + 1; }
int wc_override_fn(int x) { return x * 1000 + 2; }

int *strong_value_ptr = &wc_value;

unsigned strong_check(void) {
    unsigned h = 1000;
    h = fixture_mix(h, (unsigned)wc_value);
    h = fixture_mix(h, (unsigned)wc_override);
    h = fixture_mix(h, (unsigned)wc_fn(3));
    h = fixture_mix(h, (unsigned)wc_override_fn(3));
    h = fixture_mix(h, (unsigned)*strong_value_ptr);
    return h;
}
