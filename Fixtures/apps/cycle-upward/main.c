/* cycle-upward: binds across the cycle and the upward link; the init log is checked separately. */
#include "fixture.h"

extern int base_value, top_value, a_value;
extern unsigned base_check(void);
extern int top_fn(int), a_fn(int);

int *values[3] = {&base_value, &top_value, &a_value};
int (*fns[2])(int) = {top_fn, a_fn};

FIXTURE_INITIALIZER()

int main(void) {
    unsigned h = 13;
    for (int i = 0; i < 3; i++) h = fixture_mix(h, (unsigned)*values[i]);
    for (int i = 0; i < 2; i++) h = fixture_mix(h, (unsigned)fns[i](i + 5));
    h = fixture_mix(h, base_check());
    return (int)h;
}
