/* weak-coalesce: main's own weak definition wins over both libraries'; First's wins over Second's. */
#include "fixture.h"

FIXTURE_WEAK_DEF int main_owned_value = 7000;

extern int coalesced_value;
extern int coalesced_table[4];
extern int coalesced_fn(int);
extern int *first_value_ptr, *second_value_ptr, *first_table_ptr, *second_table_ptr;
extern int (*first_fn_ptr)(int), (*second_fn_ptr)(int);
extern unsigned first_check(void), second_check(void);

int *main_owned_ptr = &main_owned_value;

int main(void) {
    unsigned h = 3;
    h = fixture_mix(h, (unsigned)coalesced_value);
    h = fixture_mix(h, (unsigned)coalesced_table[3]);
    h = fixture_mix(h, (unsigned)coalesced_fn(5));
    h = fixture_mix(h, (unsigned)*main_owned_ptr);
    h = fixture_mix(h, (unsigned)(first_value_ptr == second_value_ptr));
    h = fixture_mix(h, (unsigned)(first_table_ptr == second_table_ptr));
    h = fixture_mix(h, (unsigned)(first_fn_ptr == second_fn_ptr));
    h = fixture_mix(h, (unsigned)(first_value_ptr == &coalesced_value));
    h = fixture_mix(h, (unsigned)*second_table_ptr);
    h = fixture_mix(h, (unsigned)second_fn_ptr(6));
    h = fixture_mix(h, first_check());
    h = fixture_mix(h, second_check());
    return (int)h;
}
