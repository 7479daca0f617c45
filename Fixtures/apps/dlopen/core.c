/* Core: a counter the executable and the plugin both advance (one Core in the process). */
#include "fixture.h"

FIXTURE_INITIALIZER()
static int counter;
int core_counter(void) { return ++counter; }
