/* paths: each library is reached through a different kind of install name. */
#include "fixture.h"

extern int pick_variant, exec_value, abs_value;
extern int pick_fn(int), exec_fn(int), abs_fn(int);
extern unsigned host_check(void);

int *values[3] = {&pick_variant, &exec_value, &abs_value};
int (*fns[3])(int) = {pick_fn, exec_fn, abs_fn};

int main(void) {
    unsigned h = 9;
    for (int i = 0; i < 3; i++) {
        h = fixture_mix(h, (unsigned)*values[i]);
        h = fixture_mix(h, (unsigned)fns[i](i + 1));
    }
    h = fixture_mix(h, host_check());
    h = fixture_mix(h, (unsigned)pick_fn(10));
    return (int)h;
}
