#include "fixture.h"

extern int b_value;
extern int b_fn(int);
int a_value = 97;
int *a_b_ptr = &b_value;
int a_fn(int x) { return x * 97 + b_fn(x) + *a_b_ptr; }

FIXTURE_INITIALIZER()
