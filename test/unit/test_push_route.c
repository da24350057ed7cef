/*  test/unit/test_push_route.c - the write path's routing decision
    (actors/pg/push_route.c): database down, push maintenance, spool
    pending, the replay flag, and the race between appends forwarded to
    the spool and its DRAINED reports.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "actors/pg/push_route.h"

//  A route past start-up: flags read, spool reported empty.
static qn_push_route_t
s_ready (void)
{
    qn_push_route_t r;
    qn_push_route_init (&r);
    r.maint_known = true;
    qn_push_route_drained (&r, 0);
    return r;
}

static void
test_start_waits_for_the_spool (void **state)
{
    (void) state;
    qn_push_route_t r;
    qn_push_route_init (&r);
    //  The spool may hold pushes from before a restart: they go first.
    assert_int_equal (qn_push_route_push (&r, false), QN_PUSH_TO_SPOOL);
    //  Flags not read yet: a replay waits.
    assert_int_equal (qn_push_route_push (&r, true), QN_PUSH_TO_WAIT);
    qn_push_route_drained (&r, 0);
    r.maint_known = true;
    assert_int_equal (qn_push_route_push (&r, false), QN_PUSH_TO_PG);
    assert_int_equal (qn_push_route_push (&r, true), QN_PUSH_TO_PG);
}

static void
test_db_down (void **state)
{
    (void) state;
    qn_push_route_t r = s_ready ();
    r.db_up = false;
    assert_int_equal (qn_push_route_push (&r, false), QN_PUSH_TO_SPOOL);
    //  A replay is never re-routed: it tries PostgreSQL (and fails there).
    assert_int_equal (qn_push_route_push (&r, true), QN_PUSH_TO_PG);
    r.db_up = true;
    assert_int_equal (qn_push_route_push (&r, false), QN_PUSH_TO_PG);
}

static void
test_push_maintenance (void **state)
{
    (void) state;
    qn_push_route_t r = s_ready ();
    r.push_maint = true;
    assert_int_equal (qn_push_route_push (&r, false), QN_PUSH_TO_SPOOL);
    assert_int_equal (qn_push_route_push (&r, true), QN_PUSH_TO_WAIT);
    r.push_maint = false;
    assert_int_equal (qn_push_route_push (&r, true), QN_PUSH_TO_PG);
}

static void
test_spool_pending_keeps_order (void **state)
{
    (void) state;
    qn_push_route_t r = s_ready ();
    //  One push went to the spool (database blip): the database is back,
    //  but pushes keep going to the spool until it has replayed it.
    r.db_up = false;
    assert_int_equal (qn_push_route_push (&r, false), QN_PUSH_TO_SPOOL);
    qn_push_route_forwarded (&r);
    r.db_up = true;
    assert_int_equal (qn_push_route_push (&r, false), QN_PUSH_TO_SPOOL);
    assert_int_equal (qn_push_route_push (&r, true), QN_PUSH_TO_PG);
    qn_push_route_drained (&r, 1);
    assert_int_equal (qn_push_route_push (&r, false), QN_PUSH_TO_PG);
}

static void
test_forwarded_vs_replayed_race (void **state)
{
    (void) state;
    qn_push_route_t r = s_ready ();
    for (int i = 0; i < 5; i++)
        qn_push_route_forwarded (&r);
    assert_int_equal (r.forwarded, 5);
    //  The spool reports drained having seen only 3 appends: 2 are still
    //  on their way to it. Leaving spool mode now would let a push
    //  overtake them.
    qn_push_route_drained (&r, 3);
    assert_true (r.spool_mode);
    assert_int_equal (qn_push_route_push (&r, false), QN_PUSH_TO_SPOOL);
    //  A stale report (older count) changes nothing either.
    qn_push_route_drained (&r, 0);
    assert_true (r.spool_mode);
    qn_push_route_drained (&r, 5);
    assert_false (r.spool_mode);
    assert_int_equal (qn_push_route_push (&r, false), QN_PUSH_TO_PG);
    //  A new forward after the report re-enters spool mode; the old
    //  count (5) does not cover it.
    qn_push_route_forwarded (&r);
    qn_push_route_drained (&r, 5);
    assert_true (r.spool_mode);
    qn_push_route_drained (&r, 6);
    assert_false (r.spool_mode);
}

static void
test_unavailable_classes (void **state)
{
    (void) state;
    assert_true (qn_push_route_unavailable ("08006"));
    assert_true (qn_push_route_unavailable ("08001"));
    assert_true (qn_push_route_unavailable ("57P01"));
    assert_true (qn_push_route_unavailable ("57P03"));
    assert_true (qn_push_route_unavailable ("53300"));
    //  A statement timeout ran and was refused; data errors are the
    //  request's: neither goes to the spool.
    assert_false (qn_push_route_unavailable ("57014"));
    assert_false (qn_push_route_unavailable ("22P02"));
    assert_false (qn_push_route_unavailable ("23505"));
    assert_false (qn_push_route_unavailable ("53100"));
    assert_false (qn_push_route_unavailable ("XX000"));
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_start_waits_for_the_spool),
        cmocka_unit_test (test_db_down),
        cmocka_unit_test (test_push_maintenance),
        cmocka_unit_test (test_spool_pending_keeps_order),
        cmocka_unit_test (test_forwarded_vs_replayed_race),
        cmocka_unit_test (test_unavailable_classes),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
