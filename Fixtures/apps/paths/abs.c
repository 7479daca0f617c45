int abs_value = 606;
int abs_fn(int x) { return x * 6 + 606; }
