/* flat-namespace: main exports host_value and host_hook for libDyn's dynamic lookups. */
#include "fixture.h"

int host_value = 4242;
int host_hook(int x) { return x * 42 + 1; }

extern int early_only;
extern unsigned flat_check(void), dyn_check(void);

int *early_ptr = &early_only;

int main(void) {
    unsigned h = 23;
    h = fixture_mix(h, (unsigned)*early_ptr);
    h = fixture_mix(h, flat_check());
    h = fixture_mix(h, dyn_check());
    return (int)h;
}
