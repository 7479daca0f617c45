/* libDyn (-undefined dynamic_lookup): host_hook and host_value come from the main executable. */
#include "fixture.h"

extern int host_value;
extern int host_hook(int);

int *dyn_host_ptr = &host_value;

unsigned dyn_check(void) {
    unsigned h = 19;
    h = fixture_mix(h, (unsigned)*dyn_host_ptr);
    h = fixture_mix(h, (unsigned)host_hook(6));
    return h;
}
