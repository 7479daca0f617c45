/*
 * The fixtures' libobjc.A.dylib (install name /usr/lib/libobjc.A.dylib): message
 * dispatch over the tables the loader made. It fixes nothing up and registers nothing:
 * selectors are already unique (compared by pointer), classes and their attached
 * categories are in fixture_objc_tables. See docs/objc.md.
 */
#include "objc-runtime.h"

#define CLASS_CAPACITY 8192
#define CATEGORY_CAPACITY 8192
/* A superclass chain longer than this is corrupt metadata, not a class hierarchy. */
#define MAX_SUPERCLASS_DEPTH 4096

static struct fixture_objc_class_entry class_storage[CLASS_CAPACITY];
static const struct fixture_objc_category *category_storage[CATEGORY_CAPACITY];

__attribute__((section("__DATA,__objc_fxtables"), used))
struct fixture_objc_tables fixture_objc_tables = {
    FIXTURE_OBJC_TABLES_MAGIC, CLASS_CAPACITY, CATEGORY_CAPACITY, class_storage, category_storage, 0, 0,
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

static const struct fixture_objc_class_entry *entry_for(Class cls) {
    for (unsigned long i = 0; i < fixture_objc_tables.class_count && i < CLASS_CAPACITY; i++) {
        if (class_storage[i].cls == cls || class_storage[i].metaclass == cls) return &class_storage[i];
    }
    return 0;
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

static int names_equal(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

/* The first registered class with this name (the runtime's rule for duplicates: docs/objc.md). */
Class objc_getClass(const char *name) {
    for (unsigned long i = 0; i < fixture_objc_tables.class_count && i < CLASS_CAPACITY; i++) {
        if (names_equal(class_storage[i].name, name)) return class_storage[i].cls;
    }
    return 0;
}

#if defined(__aarch64__)
/*
 * arm64 images are loaded and fixed up, never run: these only give the linker the
 * symbols clang's output references.
 */
void objc_msgSend(void) { __builtin_trap(); }
void objc_msgSendSuper2(void) { __builtin_trap(); }
#endif
