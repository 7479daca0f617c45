int exec_value = 505;
int exec_fn(int x) { return x * 5 + 505; }
