/*  wire/token_bucket.c - a token bucket (see the header)
*/
#include "wire/token_bucket.h"

#include <math.h>

void
qn_bucket_set (qn_bucket_t *b, double rate_per_s, double burst)
{
    b->rate_per_s = rate_per_s > 0 ? rate_per_s : 0;
    b->burst = burst >= 1 ? burst : 1;
    if (b->tokens > b->burst)
        b->tokens = b->burst;
}

bool
qn_bucket_take (qn_bucket_t *b, int64_t now_us, double n, int64_t *retry_ms)
{
    *retry_ms = 0;
    if (b->rate_per_s <= 0)
        return true;
    if (!b->last_us) {
        b->tokens = b->burst;
        b->last_us = now_us;
    }
    if (now_us > b->last_us) {
        b->tokens += (double) (now_us - b->last_us) / 1e6 * b->rate_per_s;
        if (b->tokens > b->burst)
            b->tokens = b->burst;
        b->last_us = now_us;
    }
    if (b->tokens >= n) {
        b->tokens -= n;
        return true;
    }
    double need = (n > b->burst ? b->burst : n) - b->tokens;
    *retry_ms = (int64_t) ceil (need / b->rate_per_s * 1000.0 - 1e-6);     //  float noise
    if (*retry_ms < 1)
        *retry_ms = 1;
    return false;
}
