/* Core: core_value, which libInsert interposes when it is inserted. */
#include "fixture.h"

FIXTURE_INITIALIZER()
int core_value(int x) { return x * 3 + 2; }
