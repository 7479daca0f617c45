/*
 * The fixtures' Objective-C runtime (libobjc.A.dylib): the structures clang emits
 * (objc4's class_t, class_ro_t, method_list_t, category_t, 64-bit layouts) and the
 * tables the loader fills in (docs/objc.md). Freestanding: no libc, no syscalls.
 */
#ifndef FIXTURE_OBJC_RUNTIME_H
#define FIXTURE_OBJC_RUNTIME_H

typedef struct fixture_objc_class *Class;
typedef struct fixture_objc_object { Class isa; } *id;
typedef const char *SEL;
typedef long (*IMP)(id, SEL, ...);

/* class_t: what __objc_classlist points at (the metaclass has the same layout). */
struct fixture_objc_class {
    Class isa;
    Class superclass;
    void *cache;
    void *vtable;
    unsigned long data; /* class_ro_t *, low bits are flags (FAST_DATA_MASK) */
};

#define FIXTURE_OBJC_FAST_DATA_MASK 0x00007ffffffffff8UL
#define FIXTURE_OBJC_RO_META 0x1u

/* class_ro_t (64-bit). */
struct fixture_objc_class_ro {
    unsigned flags, instance_start, instance_size, reserved;
    const unsigned char *ivar_layout;
    const char *name;
    const struct fixture_objc_method_list *base_methods;
    const void *base_protocols, *ivars, *weak_ivar_layout, *base_properties;
};

/* method_list_t: entsize (low 16 bits minus the flag bits) and count, then the entries. */
struct fixture_objc_method_list {
    unsigned entsize_and_flags;
    unsigned count;
};
#define FIXTURE_OBJC_METHOD_LIST_RELATIVE 0x80000000u
#define FIXTURE_OBJC_METHOD_LIST_ENTSIZE_MASK 0x0000fffcu

/* A pointer method (entsize 24) and a relative one (entsize 12: offsets from each field). */
struct fixture_objc_method { SEL name; const char *types; IMP imp; };
struct fixture_objc_relative_method { int name_offset, types_offset, imp_offset; };

/* category_t. */
struct fixture_objc_category {
    const char *name;
    Class cls;
    const struct fixture_objc_method_list *instance_methods;
    const struct fixture_objc_method_list *class_methods;
    const void *protocols, *instance_properties;
};

/*
 * The tables the loader fills in (the section __DATA,__objc_fxtables holds the header;
 * the entries are in this image's zero-filled data). Entries are in the runtime's
 * registration order; a class's categories are categories[first_category ...
 * first_category + category_count - 1], the latest attached first.
 */
struct fixture_objc_class_entry {
    Class cls;
    Class metaclass;
    const char *name;
    unsigned long first_category;
    unsigned long category_count;
};

#define FIXTURE_OBJC_TABLES_MAGIC 0x32424154434a424fUL /* "OBJCTAB2" little-endian */

/*
 * A hash table the loader fills in: `reserved` slots (a power of two) of zero-filled
 * storage in this image; the loader uses the first mask + 1 of them (a power of two, at
 * most half full) and writes mask and count. A name's slot is fixture_objc_hash(name) &
 * mask, then the next ones (linear probing) up to an empty slot. Selector slots point to
 * the canonical selector string, class slots to a class entry (keyed by the class's name,
 * and by its metaclass's name when that differs), protocol slots to the canonical
 * protocol_t (keyed by its name).
 */
struct fixture_objc_hash_table {
    unsigned long reserved;
    const void **slots;
    unsigned long mask;  /* written by the loader */
    unsigned long count; /* written by the loader */
};

struct fixture_objc_tables {
    unsigned long magic;
    unsigned long class_capacity;
    unsigned long category_capacity;
    struct fixture_objc_class_entry *classes;
    const struct fixture_objc_category **categories;
    unsigned long class_count;    /* written by the loader */
    unsigned long category_count; /* written by the loader */
    struct fixture_objc_hash_table selectors;
    struct fixture_objc_hash_table class_names;
    struct fixture_objc_hash_table protocols;
};

/* FNV-1a, 64-bit, over the name's bytes without the NUL (the loader computes the same). */
static inline unsigned long fixture_objc_hash(const char *name) {
    unsigned long h = 0xcbf29ce484222325UL;
    for (; *name; name++) h = (h ^ (unsigned char)*name) * 0x100000001b3UL;
    return h;
}

/* protocol_t: what __objc_protolist points at (the fields the runtime reads). */
struct fixture_objc_protocol {
    Class isa;
    const char *name;
};

#endif
