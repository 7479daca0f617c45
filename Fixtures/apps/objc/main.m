/* main: a category on Square replacing +sides, and a result folding every dispatch and
 * the init log (+load methods and initializers) together. */
#include "objc-app.h"

@implementation Square (MainCat)
+ (void)load { fixture_record_init(11); }
+ (int)sides { return 40; }
@end

FIXTURE_INITIALIZER()

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
    h = fixture_mix_init_log(h);
    return (int)h;
}
