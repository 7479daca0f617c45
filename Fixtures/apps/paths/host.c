/* Host.framework: loads libHelper through @loader_path and libDeep through its own @loader_path rpath. */
#include "fixture.h"

extern int helper_value;
extern int helper_fn(int);
extern int deep_value;
extern int deep_fn(int);

int *host_helper_ptr = &helper_value;
int *host_deep_ptr = &deep_value;

unsigned host_check(void) {
    unsigned h = 41;
    h = fixture_mix(h, (unsigned)*host_helper_ptr);
    h = fixture_mix(h, (unsigned)*host_deep_ptr);
    h = fixture_mix(h, (unsigned)helper_fn(3));
    h = fixture_mix(h, (unsigned)deep_fn(4));
    return h;
}
