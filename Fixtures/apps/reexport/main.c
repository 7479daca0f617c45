/* reexport: every import below is bound to Outer's ordinal; the symbols live one and two re-export levels down. */
#include "fixture.h"

extern int outer_value, mid_value, inner_value;
extern int mid_array[8], inner_array[8];
extern int outer_fn(int), mid_fn(int), inner_fn(int);

int *ptrs[5] = {&outer_value, &mid_value, &inner_value, &mid_array[6], &inner_array[3]};
const char *before_inner = (const char *)&inner_array[0] - 16;
int (*fns[3])(int) = {outer_fn, mid_fn, inner_fn};

int main(void) {
    unsigned h = 5;
    for (int i = 0; i < 5; i++) h = fixture_mix(h, (unsigned)*ptrs[i]);
    h = fixture_mix(h, (unsigned)*(const int *)(before_inner + 16 + 4));
    for (int i = 0; i < 3; i++) h = fixture_mix(h, (unsigned)fns[i](i + 2));
    h = fixture_mix(h, (unsigned)inner_fn(9));
    h = fixture_mix(h, (unsigned)mid_fn(8));
    h = fixture_mix(h, (unsigned)inner_value);
    return (int)h;
}
