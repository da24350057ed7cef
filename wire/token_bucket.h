/*  wire/token_bucket.h - a token bucket for queen-proxy's plan limits
    `rate_per_s` tokens are added per second up to `burst`; a take of n
    succeeds when n tokens are there. A refused take says how long until it
    would succeed (the Retry-After of a 429), computed exactly from the
    refill rate. Time is the caller's (monotonic microseconds), so the
    bucket is a pure function of its inputs. A rate of 0 means unlimited.
*/
#ifndef QN_WIRE_TOKEN_BUCKET_H
#define QN_WIRE_TOKEN_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    double rate_per_s;          //  0: unlimited
    double burst;               //  Capacity (at least 1 token when limited)
    double tokens;
    int64_t last_us;            //  0: never used (starts full)
} qn_bucket_t;

//  (Re)configures; a changed rate keeps the tokens (capped at the new burst).
void qn_bucket_set (qn_bucket_t *b, double rate_per_s, double burst);
//  Takes n tokens at now_us. Returns true, or false with *retry_ms set to
//  the whole milliseconds until n tokens will be there (n > burst: the time
//  to fill the bucket, which never suffices: the caller says 413 instead).
bool qn_bucket_take (qn_bucket_t *b, int64_t now_us, double n, int64_t *retry_ms);

#endif
