extern int lib_present, lib_needed;
int *ptrs[2] = {&lib_present, &lib_needed};
int main(void) { return *ptrs[0] + *ptrs[1]; }
