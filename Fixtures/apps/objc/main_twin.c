/* Twin of main.m, and the twin's dispatch (see twin.h for the rules it encodes). */
#include "twin.h"

static int main_cat_sides(const void *r) { (void)r; return 40; }
static const struct twin_method none[] = {{0, 0}};
static const struct twin_method main_cat_class_methods[] = {{"sides", main_cat_sides}, {0, 0}};
static const struct twin_category main_cat = {&twin_Square, main_cat_class_methods, none};
const struct twin_category *const twin_categories_main[] = {&main_cat, 0};

/* Images with Objective-C metadata in the runtime's order: the reverse of dyld's load
 * order (main, Shapes, Extras, Base). Base has no categories. */
static const struct twin_category *const *const attach_order[] = {
    twin_categories_extras, twin_categories_shapes, twin_categories_main};
static const struct twin_class *const *const registration_order[] = {
    twin_classes_base, twin_classes_extras, twin_classes_shapes};

static int same(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

static const struct twin_method *find(const struct twin_method *list, const char *name) {
    for (; list->name; list++)
        if (same(list->name, name)) return list;
    return 0;
}

/* Categories latest attached first: walk the attach order backwards. */
static const struct twin_method *lookup(const struct twin_class *cls, int class_side, const char *name) {
    for (; cls; cls = cls->superclass) {
        for (int image = (int)(sizeof attach_order / sizeof *attach_order) - 1; image >= 0; image--) {
            const struct twin_category *const *cats = attach_order[image];
            int count = 0;
            while (cats[count]) count++;
            for (int i = count - 1; i >= 0; i--) {
                if (cats[i]->cls != cls) continue;
                const struct twin_method *m = find(class_side ? cats[i]->class_methods : cats[i]->instance_methods, name);
                if (m) return m;
            }
        }
        const struct twin_method *m = find(class_side ? cls->class_methods : cls->instance_methods, name);
        if (m) return m;
    }
    return 0;
}

static int dispatch(const struct twin_method *m, const void *receiver) { return m ? m->imp(receiver) : 0x0BADC0DE; }

int twin_send_class(const struct twin_class *cls, const char *name) { return dispatch(lookup(cls, 1, name), cls); }
int twin_send(const struct twin_object *object, const char *name) { return dispatch(lookup(object->isa, 0, name), object); }
int twin_send_super(const struct twin_class *current, const struct twin_object *object, const char *name) {
    return dispatch(lookup(current->superclass, 0, name), object);
}

const struct twin_class *twin_get_class(const char *name) {
    for (unsigned i = 0; i < sizeof registration_order / sizeof *registration_order; i++)
        for (const struct twin_class *const *c = registration_order[i]; *c; c++)
            if (same((*c)->name, name)) return *c;
    return 0;
}

/* Selectors by content, the first pointer seen for a name canonical. */
const char *twin_sel(const char *name) {
    static const char *names[32];
    static unsigned count;
    for (unsigned i = 0; i < count; i++)
        if (same(names[i], name)) return names[i];
    if (count == sizeof names / sizeof *names) return 0;
    names[count++] = name;
    return name;
}

/* Protocols in registration order (Base, Extras, Shapes, main: only Extras and main have one). */
static const struct twin_protocol main_named = {"Named"};
static const struct twin_protocol *const twin_protocols_main[] = {&main_named, 0};
static const struct twin_protocol *const *const protocol_registration_order[] = {twin_protocols_extras, twin_protocols_main};

const void *twin_get_protocol(const char *name) {
    for (unsigned i = 0; i < sizeof protocol_registration_order / sizeof *protocol_registration_order; i++)
        for (const struct twin_protocol *const *p = protocol_registration_order[i]; *p; p++)
            if (same((*p)->name, name)) return *p;
    return 0;
}

const void *twin_protocol_ref(const struct twin_protocol *protocol) {
    const void *canonical = twin_get_protocol(protocol->name);
    return canonical ? canonical : protocol;
}

/* main.m's lookups(): the same identities through the twin's rules. */
static unsigned lookups(void) {
    unsigned bits = 0;
    bits |= (unsigned)(twin_get_class("Square") == &twin_Square) << 0;
    bits |= (unsigned)(twin_get_class("Shape") == base_shape_class()) << 1;
    bits |= (unsigned)(twin_get_class("Dup") == extras_dup_class()) << 2;
    bits |= (unsigned)(twin_get_class("Dup") != shapes_dup_class()) << 3;
    bits |= (unsigned)(twin_get_class("Squar") == 0 && twin_get_class("Squares") == 0) << 4;
    bits |= (unsigned)(twin_sel("sides") == twin_sel("sides")) << 5;
    bits |= (unsigned)(twin_sel("kind") == shapes_kind_selector()) << 6;
    bits |= (unsigned)(twin_sel("tag") == extras_tag_selector()) << 7;
    bits |= (unsigned)(twin_sel("area") == base_area_selector()) << 8;
    const char *fresh = twin_sel("notInAnyImage:");
    bits |= (unsigned)(fresh && twin_sel("notInAnyImage:") == fresh && same(fresh, "notInAnyImage:")
                       && fresh != twin_sel("tag")) << 9;
    bits |= (unsigned)(twin_get_protocol("Named") == twin_protocol_ref(&main_named)) << 10;
    bits |= (unsigned)(twin_get_protocol("Named") == extras_named_protocol()) << 11;
    bits |= (unsigned)(twin_get_protocol("Unnamed") == 0) << 12;
    unsigned h = bits;
    h = fixture_mix(h, (unsigned)twin_send_class(twin_get_class("Hexagon"), "sides"));
    h = fixture_mix(h, (unsigned)twin_send_class(twin_get_class("Square"), "sides"));
    h = fixture_mix(h, (unsigned)twin_send_class(twin_get_class("Obj"), "value"));
    return h;
}

__attribute__((constructor)) static void main_init(void) {
    fixture_record_init(11); /* +[Square(MainCat) load] */
    fixture_record_init(FIXTURE_IMAGE_ID);
}

int main(void) {
    unsigned h = 0;
    h = fixture_mix(h, (unsigned)twin_send_class(&twin_Shape, "kind"));
    h = fixture_mix(h, (unsigned)twin_send_class(&twin_Square, "kind"));
    h = fixture_mix(h, (unsigned)twin_send_class(&twin_Square, "sides"));
    h = fixture_mix(h, (unsigned)twin_send_class(&twin_Triangle, "sides"));
    h = fixture_mix(h, (unsigned)twin_send_class(&twin_Hexagon, "sides"));
    h = fixture_mix(h, (unsigned)twin_send_class(&twin_Poly, "sides"));
    h = fixture_mix(h, (unsigned)twin_send_class(&twin_Obj, "value"));
    h = fixture_mix(h, (unsigned)twin_send_class(&twin_Hexagon, "value"));
    h = fixture_mix(h, (unsigned)twin_send_class(twin_get_class("Dup"), "tag"));
    h = fixture_mix(h, (unsigned)shapes_dup_tag());
    h = fixture_mix(h, (unsigned)extras_dup_tag());
    h = fixture_mix(h, (unsigned)shapes_area_sum());
    h = fixture_mix(h, (unsigned)extras_sides_sum());
    h = fixture_mix(h, lookups());
    h = fixture_mix_init_log(h);
    return (int)h;
}
