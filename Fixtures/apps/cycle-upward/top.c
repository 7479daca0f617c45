#include "fixture.h"

extern int base_value;
int top_value = 83;
int *top_base_ptr = &base_value;
int top_fn(int x) { return x * 83 + *top_base_ptr; }

FIXTURE_INITIALIZER()
