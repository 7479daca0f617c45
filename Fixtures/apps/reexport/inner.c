int inner_value = 59;
int inner_array[8] = {10, 20, 30, 40, 50, 60, 70, 80};
int inner_fn(int x) { return x * 59 + 3; }
