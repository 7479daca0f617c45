/* Helper: an absolute-path dylib in the system root that only the bundle loads. */
#include "fixture.h"

FIXTURE_INITIALIZER()
int modes_helper(int x) { return x * 5 + 2; }
