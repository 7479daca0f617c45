int outer_value = 31;
int outer_fn(int x) { return x * 31 + 1; }
