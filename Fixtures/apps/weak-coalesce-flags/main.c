/*
 * weak-coalesce-flags: which definition each coalesced name binds to, seen from WeakA,
 * Mixed and main (main reads wc_first_weak directly: a weak-lookup bind), folded into
 * one checksum. Strong's own reads of its own copies are folded in too.
 */
#include "fixture.h"

extern int wc_first_weak;
extern int *weaka_value_ptr, *mixed_value_ptr, *weaka_override_ptr, *mixed_override_ptr;
extern int *weaka_first_weak_ptr, *mixed_first_weak_ptr;
extern int (*weaka_fn_ptr)(int), (*mixed_fn_ptr)(int), (*weaka_override_fn_ptr)(int), (*mixed_override_fn_ptr)(int);
extern int *strong_value_ptr;
extern unsigned strong_check(void), weaka_check(void), mixed_check(void);

int *main_first_weak_ptr = &wc_first_weak;

int main(void) {
    unsigned h = 17;
    h = fixture_mix(h, (unsigned)wc_first_weak);
    h = fixture_mix(h, (unsigned)*main_first_weak_ptr);
    h = fixture_mix(h, (unsigned)(main_first_weak_ptr == weaka_first_weak_ptr));
    h = fixture_mix(h, (unsigned)(weaka_value_ptr == mixed_value_ptr));
    h = fixture_mix(h, (unsigned)(weaka_override_ptr == mixed_override_ptr));
    h = fixture_mix(h, (unsigned)(weaka_first_weak_ptr == mixed_first_weak_ptr));
    h = fixture_mix(h, (unsigned)(weaka_fn_ptr == mixed_fn_ptr));
    h = fixture_mix(h, (unsigned)(weaka_override_fn_ptr == mixed_override_fn_ptr));
    h = fixture_mix(h, (unsigned)(weaka_value_ptr == strong_value_ptr));
    h = fixture_mix(h, (unsigned)*weaka_value_ptr);
    h = fixture_mix(h, (unsigned)*mixed_override_ptr);
    h = fixture_mix(h, strong_check());
    h = fixture_mix(h, weaka_check());
    h = fixture_mix(h, mixed_check());
    return (int)h;
}
