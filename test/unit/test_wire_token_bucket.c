/*  test/unit/test_wire_token_bucket.c - the token bucket of queen-proxy's
    plan limits (wire/token_bucket.c): starts full, refuses past the burst
    with the exact wait, refills at the rate (and not beyond the burst),
    multi-token takes, unlimited when the rate is 0, a clock that goes
    backwards adds nothing, re-configuration caps the tokens.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "wire/token_bucket.h"

#define S 1000000LL

static void
test_burst_and_refill (void **state)
{
    (void) state;
    qn_bucket_t b = { 0 };
    qn_bucket_set (&b, 10, 5);          //  10/s, burst 5
    int64_t t = 100 * S, retry;
    for (int i = 0; i < 5; i++)
        assert_true (qn_bucket_take (&b, t, 1, &retry));
    assert_false (qn_bucket_take (&b, t, 1, &retry));
    assert_int_equal (retry, 100);      //  one token at 10/s
    assert_false (qn_bucket_take (&b, t + 99 * 1000, 1, &retry));
    assert_int_equal (retry, 1);
    assert_true (qn_bucket_take (&b, t + 100 * 1000, 1, &retry));
    assert_int_equal (retry, 0);
    //  A long pause refills to the burst only.
    t += 3600 * S;
    for (int i = 0; i < 5; i++)
        assert_true (qn_bucket_take (&b, t, 1, &retry));
    assert_false (qn_bucket_take (&b, t, 1, &retry));
    //  Multi-token takes and their wait.
    assert_false (qn_bucket_take (&b, t, 3, &retry));
    assert_int_equal (retry, 300);
    assert_true (qn_bucket_take (&b, t + 300 * 1000, 3, &retry));
    //  More than the burst: the wait to fill the bucket (never enough).
    assert_false (qn_bucket_take (&b, t + 300 * 1000, 6, &retry));
    assert_int_equal (retry, 500);
    //  The clock going backwards adds nothing.
    assert_false (qn_bucket_take (&b, t, 1, &retry));
}

static void
test_unlimited_and_reconfigure (void **state)
{
    (void) state;
    qn_bucket_t b = { 0 };
    qn_bucket_set (&b, 0, 0);
    int64_t retry = -1;
    for (int i = 0; i < 100000; i++)
        assert_true (qn_bucket_take (&b, 1, 1000, &retry));
    assert_int_equal (retry, 0);
    qn_bucket_set (&b, 1, 100);
    assert_true (qn_bucket_take (&b, 5 * S, 100, &retry));
    assert_false (qn_bucket_take (&b, 5 * S, 1, &retry));
    assert_int_equal (retry, 1000);
    qn_bucket_set (&b, 2, 3);           //  tokens capped at the new burst
    assert_true (qn_bucket_take (&b, 7 * S, 3, &retry));
    assert_false (qn_bucket_take (&b, 7 * S, 1, &retry));
    assert_int_equal (retry, 500);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_burst_and_refill),
        cmocka_unit_test (test_unlimited_and_reconfigure),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
