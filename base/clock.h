/*  base/clock.h - clocks
    Monotonic time for deadlines and timers, wall time for timestamps that
    leave the process. Thread-safe, no state.
*/
#ifndef QN_BASE_CLOCK_H
#define QN_BASE_CLOCK_H

#include <stdint.h>

int64_t qn_now_ms (void);       //  Monotonic
int64_t qn_now_us (void);       //  Monotonic
int64_t qn_wall_us (void);      //  Unix epoch microseconds

#endif
