/*
 * init-upward: main's initializer writes the board too; main returns the board (every
 * initializer's value, each a function of those before it), the init log and calls
 * across the upward links (App1 -> Plug -> Late) and the regular ones.
 */
#include "fixture.h"

extern int upward_board[16];
extern void board_init(int id);
extern unsigned board_hash(void);
extern int core_reads_both(void);
extern int app1_calls(int), app2_calls(int);

__attribute__((constructor)) static void main_init(void) { board_init(FIXTURE_IMAGE_ID); }

int main(void) {
    unsigned h = 29;
    h = fixture_mix(h, board_hash());
    h = fixture_mix_init_log(h);
    h = fixture_mix(h, (unsigned)core_reads_both());
    h = fixture_mix(h, (unsigned)app1_calls(3));
    h = fixture_mix(h, (unsigned)app2_calls(4));
    return (int)h;
}
