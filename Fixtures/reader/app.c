/* The main executable (LC_MAIN): lazy and non-lazy binds with zero, small, negative and
   large addends, a weak import, weak definitions and an override of one, rebases in runs,
   at strides and scattered, in __DATA and __DATA_CONST, and an initializer. */

extern int base_value;
extern int base_array[64];
extern const char base_name[];
extern int base_function(int);
extern int base_other_function(int);
extern void base_quit(int);
extern int base_bump(void);
extern int base_optional __attribute__((weak_import));
extern int facade_function(void);
extern int reexported_function(int);
extern int reexported_value;

/* Weak definitions libbase also has; the strong base_only_weak overrides libbase's. */
__attribute__((weak)) int shared_weak_value = 20;
__attribute__((weak)) int shared_weak_function(void) { return 20; }
int base_only_weak(void) { return 21; }

static int local_data[100];
static int local_function(int x) { return x + 1; }

/* Binds with zero, small, negative and large (more than 32 bits) addends. */
int *bind_zero = &base_value;
int *bind_small = &base_array[3];
int *bind_negative = base_array - 4;
char *bind_large = (char *)base_array + 0x100000000;
const char *bind_name = base_name;
int *bind_weak_import = &base_optional;
int *bind_reexported = &reexported_value;
int *bind_weak_value = &shared_weak_value;
int (*bind_weak_function)(void) = shared_weak_function;
int (*bind_strong_override)(void) = base_only_weak;

/* One symbol bound six times in a row, then four times at a 16-byte stride, then at
   irregular gaps. */
int *bind_repeated[6] = {&base_value, &base_value, &base_value, &base_value, &base_value, &base_value};
struct strided_bind { int *pointer; long padding; };
struct strided_bind bind_strided[4] = {{&base_value, 0}, {&base_value, 1}, {&base_value, 2}, {&base_value, 3}};
struct scattered_bind { int *a; char gap1[16]; int *b; char gap2[8]; int *c; char gap3[200]; int *d; int *e; char gap4[1000]; int *f; };
struct scattered_bind bind_scattered = {&base_value, {0}, &base_value, {0}, &base_value, {0}, &base_value, &base_value, {0}, &base_value};

/* Local rebases: a run of 100 pointers, pointers at a 16-byte stride, pointers at
   irregular gaps, and constant pointers that land in __DATA_CONST. */
int *rebase_run[100] = {
#define P10(n) &local_data[n], &local_data[n + 1], &local_data[n + 2], &local_data[n + 3], \
    &local_data[n + 4], &local_data[n + 5], &local_data[n + 6], &local_data[n + 7],     \
    &local_data[n + 8], &local_data[n + 9]
    P10(0), P10(10), P10(20), P10(30), P10(40), P10(50), P10(60), P10(70), P10(80), P10(90)
#undef P10
};
struct strided { int (*function)(int); long padding; };
struct strided rebase_strided[5] = {
    {local_function, 1}, {local_function, 2}, {local_function, 3}, {local_function, 4}, {local_function, 5},
};
struct scattered { int (*a)(int); char gap1[16]; int *b; char gap2[8]; int *c; char gap3[200]; int *d; int *e; char gap4[1000]; int *f; };
struct scattered rebase_scattered = {local_function, {0}, &local_data[1], {0}, &local_data[2], {0}, &local_data[3], &local_data[4], {0}, &local_data[5]};
int (*const rebase_const_function)(int) = local_function;
int *const rebase_const_data = &local_data[7];

/* Called back by plugin.bundle, which binds to it through the main executable. */
int app_service(int x) { return x * 2; }

static int initialized;
__attribute__((constructor)) static void initialize(void) { initialized = base_function(2); }

int main(void) {
    int total = base_function(1) + base_other_function(2) + base_bump() + facade_function()
        + reexported_function(3) + shared_weak_function() + (bind_weak_import ? *bind_weak_import : 0)
        + rebase_strided[1].function(initialized) + rebase_const_function(*rebase_const_data);
    base_quit(total);
    return 0;
}
