/* Helper: a dependency of the plugin that nothing in the launch loads. */
#include "fixture.h"

FIXTURE_INITIALIZER()
int helper_value(int x) { return x * 7 + 1; }
