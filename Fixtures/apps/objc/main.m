/* main: a category on Square replacing +sides, and a result folding every dispatch and
 * the init log (+load methods and initializers) together. */
#include "objc-app.h"

@implementation Square (MainCat)
+ (void)load { fixture_record_init(11); }
+ (int)sides { return 40; }
@end

FIXTURE_INITIALIZER()

extern struct fixture_objc_class_symbol square_class __asm__("_OBJC_CLASS_$_Square");

static int same(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

/* The runtime's lookups by name against what the images reference directly: one bit per
 * identity (a wrong hash table entry clears one), then messages sent to looked-up classes. */
static unsigned lookups(void) {
    unsigned bits = 0;
    bits |= (unsigned)(objc_getClass("Square") == (Class)&square_class) << 0;
    bits |= (unsigned)(objc_getClass("Shape") == base_shape_class()) << 1;
    bits |= (unsigned)(objc_getClass("Dup") == extras_dup_class()) << 2;
    bits |= (unsigned)(objc_getClass("Dup") != shapes_dup_class()) << 3;
    bits |= (unsigned)(objc_getClass("Squar") == 0 && objc_getClass("Squares") == 0) << 4;
    bits |= (unsigned)(sel_registerName("sides") == @selector(sides)) << 5;
    bits |= (unsigned)(sel_registerName("kind") == shapes_kind_selector()) << 6;
    bits |= (unsigned)(sel_getUid("tag") == extras_tag_selector()) << 7;
    bits |= (unsigned)(sel_registerName("area") == base_area_selector()) << 8;
    SEL fresh = sel_registerName("notInAnyImage:");
    bits |= (unsigned)(fresh && sel_getUid("notInAnyImage:") == fresh && same(sel_getName(fresh), "notInAnyImage:")
                       && fresh != sel_registerName("tag")) << 9;
    bits |= (unsigned)(objc_getProtocol("Named") == (const void *)@protocol(Named)) << 10;
    bits |= (unsigned)(objc_getProtocol("Named") == extras_named_protocol()) << 11;
    bits |= (unsigned)(objc_getProtocol("Unnamed") == 0) << 12;
    unsigned h = bits;
    h = fixture_mix(h, (unsigned)[(id)objc_getClass("Hexagon") sides]);
    h = fixture_mix(h, (unsigned)[(id)objc_getClass("Square") sides]);
    h = fixture_mix(h, (unsigned)[(id)objc_getClass("Obj") value]);
    return h;
}

int main(void) {
    unsigned h = 0;
    h = fixture_mix(h, (unsigned)[Shape kind]);
    h = fixture_mix(h, (unsigned)[Square kind]);
    h = fixture_mix(h, (unsigned)[Square sides]);
    h = fixture_mix(h, (unsigned)[Triangle sides]);
    h = fixture_mix(h, (unsigned)[Hexagon sides]);
    h = fixture_mix(h, (unsigned)[Poly sides]);
    h = fixture_mix(h, (unsigned)[Obj value]);
    h = fixture_mix(h, (unsigned)[Hexagon value]);
    h = fixture_mix(h, (unsigned)[(id)objc_getClass("Dup") tag]);
    h = fixture_mix(h, (unsigned)shapes_dup_tag());
    h = fixture_mix(h, (unsigned)extras_dup_tag());
    h = fixture_mix(h, (unsigned)shapes_area_sum());
    h = fixture_mix(h, (unsigned)extras_sides_sum());
    h = fixture_mix(h, lookups());
    h = fixture_mix_init_log(h);
    return (int)h;
}
