/* Early and Prov: both define flat_sym and flat_fn (never referenced inside themselves). */
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)

int flat_sym = FLAT_SYM_VALUE;
int flat_fn(int x) { return x * 3 + FLAT_SYM_VALUE; }
int CAT(PREFIX, _only) = FLAT_SYM_VALUE / 11;
