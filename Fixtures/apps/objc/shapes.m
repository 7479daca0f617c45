/* Shapes: subclasses of Base's Shape, a category on Shape replacing +kind, and a Dup. */
#include "objc-app.h"

@interface Dup : Obj
@end

/* Hexagon comes before its superclass Poly: Poly's +load still runs first. */
@implementation Hexagon
+ (void)load { fixture_record_init(24); }
+ (int)sides { return 6; }
@end

@implementation Square
+ (void)load { fixture_record_init(21); }
+ (int)sides { return 4; }
- (int)area { return [super area] + side * side; }
@end

@implementation Poly
+ (void)load { fixture_record_init(23); }
+ (int)sides { return 5; }
@end

@implementation Triangle
+ (void)load { fixture_record_init(22); }
+ (int)sides { return 3; }
- (int)area { return 6; }
@end

@implementation Dup
+ (int)tag { return 7; }
@end

@implementation Shape (ShapesCat)
+ (void)load { fixture_record_init(25); }
+ (int)kind { return 2; }
@end

extern struct fixture_objc_class_symbol square_class __asm__("_OBJC_CLASS_$_Square");
extern struct fixture_objc_class_symbol triangle_class __asm__("_OBJC_CLASS_$_Triangle");

static struct { const void *isa; int side; } square_instance = {&square_class, 3};
static struct { const void *isa; } triangle_instance = {&triangle_class};

extern struct fixture_objc_class_symbol dup_class __asm__("_OBJC_CLASS_$_Dup");

int shapes_dup_tag(void) { return [Dup tag]; }
Class shapes_dup_class(void) { return (Class)&dup_class; }
SEL shapes_kind_selector(void) { return @selector(kind); }

int shapes_area_sum(void) {
    id square = (id)&square_instance;
    id triangle = (id)&triangle_instance;
    return [square area] * 100 + [triangle area];
}

FIXTURE_INITIALIZER()
