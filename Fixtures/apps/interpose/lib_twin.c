/* The twin's Lib: compute under the name every image but libInterpose no longer reaches. */
#define compute compute_original
#include "lib.c"
