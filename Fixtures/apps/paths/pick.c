/* libPick: shipped twice; dyld must load Lib/A's copy (variant 1), the first existing @rpath match. */
int pick_variant = PICK_VARIANT;
int pick_fn(int x) { return x * (PICK_VARIANT == 1 ? 101 : 202) + PICK_VARIANT; }
