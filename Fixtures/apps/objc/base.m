/* Base: the root class Obj and Shape. Shape's @implementation comes first, yet Obj's
 * +load runs first (superclasses before subclasses). */
#include "objc-app.h"

@implementation Shape
+ (void)load { fixture_record_init(42); }
+ (int)kind { return 1; }
+ (int)sides { return 0; }
- (int)area { return 1; }
@end

@implementation Obj
+ (void)load { fixture_record_init(41); }
+ (int)value { return 5; }
+ (int)kind { return 100; }
+ (int)sides { return -1; }
+ (int)tag { return -2; }
- (int)area { return -3; }
@end

extern struct fixture_objc_class_symbol shape_class __asm__("_OBJC_CLASS_$_Shape");

Class base_shape_class(void) { return (Class)&shape_class; }
SEL base_area_selector(void) { return @selector(area); }

FIXTURE_INITIALIZER()
