/* hosted-module: the host (think python), exporting the API its extension module looks up flat. */
#include "fixture.h"

int host_api_value = 3141;
int host_api_call(int x) { return x * 29 + 5; }

/* What the module's initializer registered, mixed with the number of registrations. */
unsigned host_module_state = 0;
int host_registrations = 0;

void host_register(unsigned state) {
    host_registrations += 1;
    host_module_state = fixture_mix(state, (unsigned)host_registrations);
}

int main(void) { return (int)host_module_state; }
