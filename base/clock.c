/*  base/clock.c - clocks (see clock.h) */
#include "base/clock.h"

#include <time.h>

int64_t
qn_now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
qn_now_ms (void)
{
    return qn_now_us () / 1000;
}

int64_t
qn_wall_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
