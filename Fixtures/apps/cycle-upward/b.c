#include "fixture.h"

extern int a_value;
int b_value = 89;
int *b_a_ptr = &a_value;
int b_fn(int x) { return x * 89 + *b_a_ptr; }

FIXTURE_INITIALIZER()
