/* Other: binds to core_value from another image: interposed when libInsert is inserted. */
#include "fixture.h"

FIXTURE_INITIALIZER()
int core_value(int x);
int other_value(int x) { return core_value(x) + 500; }
