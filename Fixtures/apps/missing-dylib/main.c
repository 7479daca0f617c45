extern int present_value, gone_value;
int *ptrs[2] = {&present_value, &gone_value};
int main(void) { return *ptrs[0] + *ptrs[1]; }
