/* Lib: the replacee. Its own call to compute is a direct call inside the image: no bind, never interposed. */
#include "fixture.h"

int compute(int x) { return x * 2 + 1; }
int lib_calls_compute(int x) { return compute(x) + 1000; }
