/* A plain dylib: functions and data, weak definitions, thread-local variables and names
   that are prefixes of one another (absolute.s adds an absolute symbol). */

extern void system_exit(int code);

int base_value = 1;
int base_array[64] = {1, 2, 3};
const char base_name[] = "base";

int base_function(int x) { return x * base_value; }
int base_other_function(int x) { return x - base_array[2]; }
void base_quit(int code) { system_exit(code); }

/* Weak definitions: app defines some of these too, so both get weak-bind entries. */
__attribute__((weak)) int shared_weak_value = 10;
__attribute__((weak)) int shared_weak_function(void) { return 10; }
__attribute__((weak)) int base_only_weak(void) { return 11; }

/* app imports this one with weak_import. */
int base_optional = 5;

/* Thread-local variables: exported with the thread-local kind, bound to __tlv_bootstrap. */
__thread int base_tls_counter = 3;
__thread int base_tls_zeroed;
int base_bump(void) { return ++base_tls_counter + base_tls_zeroed; }

/* Each name is a prefix of the next, so trie nodes are both terminals and parents. */
int base_f(void) { return 1; }
int base_fo(void) { return 2; }
int base_foo(void) { return 3; }
