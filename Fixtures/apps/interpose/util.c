/* Util: another image that binds to compute: interposed. */
#include "fixture.h"

int compute(int x);
int util_value(int x) { return compute(x) + 100; }
