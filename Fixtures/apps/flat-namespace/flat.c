/* libFlat (-flat_namespace): its imports are looked up in every image, in load order. */
#include "fixture.h"

extern int flat_sym;
extern int flat_fn(int);
extern int prov_only;

int *flat_sym_ptr = &flat_sym;
int (*flat_fn_ptr)(int) = flat_fn;
int *flat_prov_only_ptr = &prov_only;

unsigned flat_check(void) {
    unsigned h = 17;
    h = fixture_mix(h, (unsigned)*flat_sym_ptr);
    h = fixture_mix(h, (unsigned)flat_fn_ptr(4));
    h = fixture_mix(h, (unsigned)flat_fn(5));
    h = fixture_mix(h, (unsigned)*flat_prov_only_ptr);
    return h;
}
