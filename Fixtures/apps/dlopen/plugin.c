/* Plugin: loaded by dlopen only; binds to the launch's Core and to its own helper. */
#include "fixture.h"

FIXTURE_INITIALIZER()
int core_counter(void);
int helper_value(int x);

int plugin_entry(int x) { return helper_value(x) + core_counter() * 100; }
