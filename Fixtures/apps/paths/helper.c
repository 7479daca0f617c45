int helper_value = 303;
int helper_fn(int x) { return x * 3 + 303; }
