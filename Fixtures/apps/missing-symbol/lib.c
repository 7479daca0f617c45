int lib_present = 1;
#ifdef LIB_HAS_NEEDED
int lib_needed = 2;
#endif
