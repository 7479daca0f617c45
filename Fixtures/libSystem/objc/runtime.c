/*
 * The fixtures' libobjc.A.dylib (install name /usr/lib/libobjc.A.dylib): message
 * dispatch over the tables the loader made. It fixes nothing up and registers nothing
 * at launch: selectors are already unique (compared by pointer), classes and their
 * attached categories are in fixture_objc_tables, and the loader's hash tables find a
 * selector, a class (by name, or a class object's entry) and a protocol by name. The
 * only thing it adds later is a selector name no image uses (sel_registerName). See
 * docs/objc.md.
 */
#include "objc-runtime.h"

#define CLASS_CAPACITY 8192
#define CATEGORY_CAPACITY 8192
/* Hash table slots (powers of two; the loader fills at most half of them). */
#define SELECTOR_SLOTS 65536
#define CLASS_NAME_SLOTS 16384
#define PROTOCOL_SLOTS 8192
/* Names sel_registerName adds at run time are copied here. */
#define SELECTOR_POOL_SIZE 8192
/* A superclass chain longer than this is corrupt metadata, not a class hierarchy. */
#define MAX_SUPERCLASS_DEPTH 4096

static struct fixture_objc_class_entry class_storage[CLASS_CAPACITY];
static const struct fixture_objc_category *category_storage[CATEGORY_CAPACITY];
static const void *selector_slots[SELECTOR_SLOTS];
static const void *class_name_slots[CLASS_NAME_SLOTS];
static const void *protocol_slots[PROTOCOL_SLOTS];
static char selector_pool[SELECTOR_POOL_SIZE];
static unsigned long selector_pool_used;

__attribute__((section("__DATA,__objc_fxtables"), used))
struct fixture_objc_tables fixture_objc_tables = {
    FIXTURE_OBJC_TABLES_MAGIC, CLASS_CAPACITY, CATEGORY_CAPACITY, class_storage, category_storage, 0, 0,
    {SELECTOR_SLOTS, selector_slots, 0, 0},
    {CLASS_NAME_SLOTS, class_name_slots, 0, 0},
    {PROTOCOL_SLOTS, protocol_slots, 0, 0},
};

/* What clang's class_t.cache points at. */
unsigned long fixture_objc_empty_cache[2] __asm__("__objc_empty_cache");

/* The IMP of a message nothing answers: a value no fixture method returns. */
static long fixture_objc_unrecognized(id self, SEL cmd) {
    (void)self;
    (void)cmd;
    return 0x0BADC0DE;
}

static const struct fixture_objc_class_ro *class_ro(Class cls) {
    return (const struct fixture_objc_class_ro *)(cls->data & FIXTURE_OBJC_FAST_DATA_MASK);
}

static IMP search_list(const struct fixture_objc_method_list *list, SEL sel) {
    if (!list) return 0;
    unsigned entsize = list->entsize_and_flags & FIXTURE_OBJC_METHOD_LIST_ENTSIZE_MASK;
    const char *entry = (const char *)(list + 1);
    for (unsigned i = 0; i < list->count; i++, entry += entsize) {
        if (list->entsize_and_flags & FIXTURE_OBJC_METHOD_LIST_RELATIVE) {
            const struct fixture_objc_relative_method *m = (const struct fixture_objc_relative_method *)entry;
            /* The name is an offset to a selector reference (already made unique by the loader). */
            if (*(const SEL *)((const char *)&m->name_offset + m->name_offset) == sel)
                return (IMP)((const char *)&m->imp_offset + m->imp_offset);
        } else {
            const struct fixture_objc_method *m = (const struct fixture_objc_method *)entry;
            if (m->name == sel) return m->imp;
        }
    }
    return 0;
}

static int names_equal(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

/*
 * The slot holding the entry `matches` accepts for `key`, probing from the name's hash,
 * or the empty slot that ends the probe sequence; 0 when the table is full or its mask
 * is not one the reserved storage holds.
 */
static const void **probe(const struct fixture_objc_hash_table *table, const char *name,
                          int (*matches)(const void *entry, const void *key), const void *key) {
    unsigned long mask = table->mask;
    if (mask >= table->reserved || (mask & (mask + 1)) != 0) return 0;
    unsigned long start = fixture_objc_hash(name);
    for (unsigned long i = 0; i <= mask; i++) {
        const void **slot = &table->slots[(start + i) & mask];
        if (!*slot || matches(*slot, key)) return slot;
    }
    return 0;
}

static int selector_named(const void *entry, const void *name) { return names_equal(entry, name); }
static int class_named(const void *entry, const void *name) {
    return names_equal(((const struct fixture_objc_class_entry *)entry)->name, name);
}
static int entry_of(const void *entry, const void *cls) {
    const struct fixture_objc_class_entry *e = entry;
    return e->cls == cls || e->metaclass == cls;
}
static int protocol_named(const void *entry, const void *name) {
    return names_equal(((const struct fixture_objc_protocol *)entry)->name, name);
}

/* A class object's (or metaclass's) table entry: the class-name table, keyed by its name. */
static const struct fixture_objc_class_entry *entry_for(Class cls) {
    const struct fixture_objc_class_ro *ro = class_ro(cls);
    if (!ro || !ro->name) return 0;
    const void **slot = probe(&fixture_objc_tables.class_names, ro->name, entry_of, cls);
    return slot ? *slot : 0;
}

/* Attached categories (latest attached first), then the class's own methods, then its superclass's. */
static IMP lookup_from(Class cls, SEL sel) {
    for (int depth = 0; cls && depth < MAX_SUPERCLASS_DEPTH; depth++, cls = cls->superclass) {
        const struct fixture_objc_class_ro *ro = class_ro(cls);
        int meta = (ro->flags & FIXTURE_OBJC_RO_META) != 0;
        const struct fixture_objc_class_entry *entry = entry_for(cls);
        if (entry) {
            for (unsigned long c = 0; c < entry->category_count; c++) {
                unsigned long index = entry->first_category + c;
                if (index >= CATEGORY_CAPACITY) break;
                const struct fixture_objc_category *cat = category_storage[index];
                IMP imp = search_list(meta ? cat->class_methods : cat->instance_methods, sel);
                if (imp) return imp;
            }
        }
        IMP imp = search_list(ro->base_methods, sel);
        if (imp) return imp;
    }
    return (IMP)fixture_objc_unrecognized;
}

/* Called by objc_msgSend with its receiver (never nil) and selector. */
IMP fixture_objc_lookup(id receiver, SEL sel) {
    return lookup_from(receiver->isa, sel);
}

struct objc_super {
    id receiver;
    Class current_class;
};

/* Called by objc_msgSendSuper2: the search starts at the current class's superclass. */
IMP fixture_objc_lookup_super(struct objc_super *super, SEL sel) {
    return lookup_from(super->current_class->superclass, sel);
}

/*
 * The first registered class with this name (the runtime's rule for duplicates:
 * docs/objc.md): classes of one name were added in registration order, so the probe
 * meets the first registered first.
 */
Class objc_getClass(const char *name) {
    if (!name) return 0;
    const void **slot = probe(&fixture_objc_tables.class_names, name, class_named, name);
    return slot && *slot ? ((const struct fixture_objc_class_entry *)*slot)->cls : 0;
}

/* The canonical protocol of this name (docs/objc.md, "Protocols"), 0 if no image has one. */
const struct fixture_objc_protocol *objc_getProtocol(const char *name) {
    if (!name) return 0;
    const void **slot = probe(&fixture_objc_tables.protocols, name, protocol_named, name);
    return slot ? *slot : 0;
}

/*
 * The selector of this name: the canonical string every selector reference to it points
 * to. A name no image uses is registered as objc4 does, once: copied into the runtime's
 * pool and added to the table (which the runtime keeps at most three quarters full), so
 * that a second call returns the same pointer. When the pool or the table is full the
 * result is 0 (objc4 would abort).
 */
SEL sel_registerName(const char *name) {
    if (!name) return 0;
    struct fixture_objc_hash_table *table = &fixture_objc_tables.selectors;
    /* No Objective-C step ran (no image has metadata): start the smallest table. */
    if (table->mask == 0 && table->count == 0 && table->reserved >= 16) table->mask = 15;
    const void **slot = probe(table, name, selector_named, name);
    if (!slot) return 0;
    if (*slot) return *slot;
    if ((table->count + 1) * 4 > (table->mask + 1) * 3) return 0;
    unsigned long length = 0;
    while (name[length]) length++;
    if (length >= SELECTOR_POOL_SIZE - selector_pool_used) return 0;
    char *copy = selector_pool + selector_pool_used;
    for (unsigned long i = 0; i <= length; i++) copy[i] = name[i];
    selector_pool_used += length + 1;
    *slot = copy;
    table->count++;
    return copy;
}

/* objc4's sel_getUid registers too. */
SEL sel_getUid(const char *name) { return sel_registerName(name); }

const char *sel_getName(SEL sel) { return sel ? sel : "<null selector>"; }

#if defined(__aarch64__)
/*
 * arm64 images are loaded and fixed up, never run: these only give the linker the
 * symbols clang's output references.
 */
void objc_msgSend(void) { __builtin_trap(); }
void objc_msgSendSuper2(void) { __builtin_trap(); }
#endif
