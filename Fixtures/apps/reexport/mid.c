int mid_value = 47;
int mid_array[8] = {8, 7, 6, 5, 4, 3, 2, 1};
int mid_fn(int x) { return x * 47 + 2; }
