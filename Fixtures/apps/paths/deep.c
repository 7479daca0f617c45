int deep_value = 404;
int deep_fn(int x) { return x * 4 + 404; }
