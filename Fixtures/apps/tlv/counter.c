/* Counter: thread-local variables of three kinds, and functions that use them. */
#include "tlv.h"

int shared_table[4] = {100, 200, 300, 400};

TLV_DEFINE(int, counter, 40);
TLV_DEFINE(long, total, 0);
TLV_DEFINE(int *, cursor, &shared_table[1]);

/* Runs on the main thread before main: only the main thread's copy changes. */
__attribute__((constructor)) static void counter_init(void) {
    fixture_record_init(FIXTURE_IMAGE_ID);
    TLV(counter) = 1000;
    TLV(cursor) = &shared_table[3];
}

int counter_bump(int by) {
    TLV(counter) += by;
    TLV(total) += TLV(counter);
    return (int)TLV(total);
}

int counter_read(void) { return TLV(counter) * 7 + *TLV(cursor); }
