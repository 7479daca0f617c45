/*
 * Core: the board every initializer reads and writes. Each initializer hashes the whole
 * board (every value the initializers before it wrote), mixes in its image id and
 * stores the result in its own slot, so every value depends on exactly which
 * initializers ran before it, in which order. Core links Both upward.
 */
#include "fixture.h"

int upward_board[16];

unsigned board_hash(void) {
    unsigned h = 5;
    for (int i = 0; i < 16; i++) h = fixture_mix(h, (unsigned)upward_board[i]);
    return h;
}

void board_init(int id) {
    fixture_record_init(id);
    upward_board[id] = (int)fixture_mix((unsigned)id * 1000u, board_hash());
}

extern int both_tag;
int core_reads_both(void) { return both_tag; }

__attribute__((constructor)) static void core_init(void) { board_init(FIXTURE_IMAGE_ID); }
