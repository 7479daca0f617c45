/* basic: every kind of pointer main is handed is read or called and mixed into the result. */
#include "fixture.h"

extern int util_table[16];
extern int util_big[1024];
extern const char util_name[];
extern int (*util_ops[3])(int);
extern int util_scale(int x);
extern unsigned util_self_check(void);

/* Binds: zero addend, small positive, small negative, large positive, large negative. */
int *bind_zero = &util_table[0];
int *bind_pos = &util_table[5];
const char *bind_neg = (const char *)&util_table[0] - 8;
int *bind_big_pos = &util_big[1000];
const char *bind_big_neg = (const char *)&util_big[0] - 4000;
const char *bind_name = util_name;
int (*bind_fn)(int) = util_scale;
int (**bind_ops)(int) = util_ops;

/* Rebases: main's own data and code. */
static int local_values[4] = {21, 22, 23, 24};
static int local_double(int x) { return 2 * x + 1; }
int *rebase_data[2] = {&local_values[0], &local_values[3]};
int (*rebase_code)(int) = local_double;
const char *rebase_string = "fixture";
struct entry {
    const char *name;
    int *value;
    int (*fn)(int);
} rebase_entries[2] = {
    {"first", &local_values[1], local_double},
    {"second", &local_values[2], 0},
};

int main(void) {
    unsigned h = 1;
    h = fixture_mix(h, (unsigned)*bind_zero);
    h = fixture_mix(h, (unsigned)*bind_pos);
    h = fixture_mix(h, (unsigned)*(const int *)(bind_neg + 8));
    h = fixture_mix(h, (unsigned)*(const int *)(bind_neg + 12));
    h = fixture_mix(h, (unsigned)*bind_big_pos);
    h = fixture_mix(h, (unsigned)*(const int *)(bind_big_neg + 4000 + 4 * 999));
    h = fixture_mix(h, (unsigned)bind_name[0]);
    h = fixture_mix(h, (unsigned)bind_name[5]);
    h = fixture_mix(h, (unsigned)bind_fn(9));
    for (int i = 0; i < 3; i++) h = fixture_mix(h, (unsigned)bind_ops[i](100 + i));
    h = fixture_mix(h, (unsigned)*rebase_data[0]);
    h = fixture_mix(h, (unsigned)*rebase_data[1]);
    h = fixture_mix(h, (unsigned)rebase_code(40));
    h = fixture_mix(h, (unsigned)rebase_string[3]);
    for (int i = 0; i < 2; i++) {
        h = fixture_mix(h, (unsigned)rebase_entries[i].name[1]);
        h = fixture_mix(h, (unsigned)*rebase_entries[i].value);
        h = fixture_mix(h, rebase_entries[i].fn ? (unsigned)rebase_entries[i].fn(i) : 77u);
    }
    /* Lazy binds: direct calls through stubs. */
    h = fixture_mix(h, (unsigned)util_scale(12));
    h = fixture_mix(h, util_self_check());
    return (int)h;
}
