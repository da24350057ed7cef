/*  test/unit/test_fake_kernel.c - the fake kernel of actor unit tests
    (test/support/fake_kernel.h) keeps the kernel's contract: START runs
    at spawn, handlers run inline with the right `self` and name, sends,
    replies, requests and events are recorded in order, a request is
    answered or times out exactly at its deadline, timers fire in due
    order on the manual clock and can be cancelled, a full inbox refuses
    with QN_EAGAIN and its writable callbacks run when it drains.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "test/support/fake_kernel.h"

//  A message type of this test only (never sent between real actors).
#define S_MSG_PING 65000

typedef struct {
    qn_kernel_t *kernel;
    int started;
    char fired [16];            //  Timer tags, in firing order
    size_t fired_n;
    int replies, timeouts, writable;
    uint64_t cancel_me;
} s_actor_t;

static void
s_on_timer (void *self_, void *arg)
{
    s_actor_t *a = self_;
    a->fired [a->fired_n++] = (char) (uintptr_t) arg;
}

static void
s_on_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    s_actor_t *a = self_;
    if (env) {
        assert_int_equal (env->type, QN_MSG_PG_RESULT);
        assert_int_equal (env->body.len, 1);
        a->replies++;
    }
    else
        a->timeouts++;
}

static void
s_on_writable (void *self_, void *arg)
{
    (void) arg;
    s_actor_t *a = self_;
    a->writable++;
    assert_int_equal (qn_send_body (a->kernel, "sink", S_MSG_PING, 0, "\x90", 1), 0);
}

static int
s_start (void *self_, const qn_env_t *env)
{
    (void) env;
    s_actor_t *a = self_;
    a->started++;
    assert_string_equal (qn_actor_name (), "probe");
    return qn_subscribe (a->kernel, "comm");
}

//  Any message: answers it, asks pg_writer, arms timers b (20 ms), a
//  (10 ms), c (30 ms, then cancelled), publishes an event.
static int
s_on_tick (void *self_, const qn_env_t *env)
{
    s_actor_t *a = self_;
    assert_int_equal (qn_reply (a->kernel, env, S_MSG_PING, "\x91\x01", 2, NULL, 0), 0);
    qn_msg_t ask = { .to = "pg_writer", .type = QN_MSG_PG_EXEC, .body = "\x90", .body_len = 1 };
    assert_int_equal (qn_request (a->kernel, &ask, 100, s_on_reply, NULL), 0);
    qn_timer_add (a->kernel, 20, 0, s_on_timer, (void *) 'b');
    qn_timer_add (a->kernel, 10, 0, s_on_timer, (void *) 'a');
    a->cancel_me = qn_timer_add (a->kernel, 30, 0, s_on_timer, (void *) 'c');
    return qn_publish (a->kernel, "news", QN_MSG_MAINT_STATE, "\x92\xc2\xc2", 3);
}

static int
s_on_event (void *self_, const qn_env_t *env)
{
    s_actor_t *a = self_;
    assert_int_equal (env->body.len, 1);
    qn_timer_cancel (a->kernel, a->cancel_me);
    //  Blocked on "sink": wait until it drains.
    if (qn_send_body (a->kernel, "sink", S_MSG_PING, 0, "\x90", 1) == QN_EAGAIN)
        qn_on_writable (a->kernel, "sink", s_on_writable, NULL);
    return 0;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_start },
    { S_MSG_PING, s_on_tick },
    { QN_MSG_COMMITTED, s_on_event },
    { 0, NULL }
};

static const qn_route_t s_sink_routes [] = { { 0, NULL } };

static void
test_fake_kernel_contract (void **state)
{
    (void) state;
    qn_config_t config = { .port = 1 };
    qn_fake_t *fake = qn_fake_new (&config);
    qn_kernel_t *k = qn_fake_kernel (fake);
    assert_ptr_equal (qn_kernel_config (k), &config);
    s_actor_t a = { .kernel = k };
    qn_actor_def_t def = { .name = "probe", .routes = s_routes, .self = &a };
    assert_non_null (qn_actor_spawn (k, &def));
    assert_null (qn_actor_spawn (k, &def));             //  Name taken
    qn_actor_def_t sink = { .name = "sink", .routes = s_sink_routes };
    assert_non_null (qn_actor_spawn (k, &sink));
    assert_int_equal (a.started, 1);
    assert_ptr_equal (qn_fake_actor_self (fake, "probe"), &a);
    assert_true (qn_fake_subscribed (fake, "probe", "committed"));
    assert_false (qn_fake_subscribed (fake, "probe", "db"));
    assert_string_equal (qn_actor_name (), "main");
    //  A message in: reply, request, event recorded in order.
    assert_int_equal (qn_fake_deliver (fake, "probe", S_MSG_PING, "\x90", 1, NULL, 0), 0);
    assert_int_equal (qn_fake_deliver (fake, "probe", QN_MSG_DB_HEALTH, "\x90", 1, NULL, 0), QN_ENOENT);
    assert_int_equal (qn_fake_deliver (fake, "nobody", S_MSG_PING, "\x90", 1, NULL, 0), QN_ENOENT);
    assert_int_equal (qn_fake_count (fake), 3);
    const qn_fake_msg_t *m = qn_fake_msg (fake, 0);
    assert_int_equal (m->kind, QN_FAKE_REPLY);
    assert_string_equal (m->from, "probe");
    assert_string_equal (m->to, "test");
    assert_true (m->flags & QN_ENV_FLAG_REPLY);
    assert_int_equal (m->body.len, 2);
    m = qn_fake_msg (fake, 1);
    assert_int_equal (m->kind, QN_FAKE_REQUEST);
    assert_string_equal (m->to, "pg_writer");
    assert_true (m->corr > 0);
    m = qn_fake_msg (fake, 2);
    assert_int_equal (m->kind, QN_FAKE_PUBLISH);
    assert_string_equal (m->to, "news");
    assert_int_equal (qn_fake_next (fake, QN_MSG_PG_EXEC), 1);
    assert_int_equal (qn_fake_next (fake, QN_MSG_PG_EXEC), -1);
    assert_int_equal (qn_fake_pending (fake), 1);
    assert_int_equal (qn_fake_timers (fake), 3);
    //  An event reaches subscribers only; "sink" is full, so the probe
    //  waits for it and cancels its timer c.
    qn_fake_full (fake, "sink", true);
    assert_int_equal (qn_fake_publish (fake, "committed", QN_MSG_COMMITTED, "\x90", 1), 1);
    assert_int_equal (qn_fake_publish (fake, "other", QN_MSG_COMMITTED, "\x90", 1), 0);
    assert_int_equal (qn_fake_timers (fake), 2);
    assert_int_equal (qn_fake_count (fake), 3);
    qn_fake_full (fake, "sink", false);
    assert_int_equal (a.writable, 1);
    assert_int_equal (qn_fake_count (fake), 4);
    assert_string_equal (qn_fake_msg (fake, 3)->to, "sink");
    //  The clock: timers in due order, each at its instant.
    int64_t t0 = qn_now_ms ();
    qn_fake_advance (fake, 9);
    assert_int_equal (a.fired_n, 0);
    qn_fake_advance (fake, 1);
    assert_int_equal (a.fired_n, 1);
    assert_int_equal (qn_now_ms (), t0 + 10);
    int64_t wall0 = qn_wall_us ();
    qn_fake_advance (fake, 50);
    assert_int_equal (qn_wall_us () - wall0, 50000);
    assert_int_equal (a.fired_n, 2);
    assert_memory_equal (a.fired, "ab", 2);
    assert_int_equal (qn_now_ms (), t0 + 60);
    //  The request: answered once; a second answer is refused.
    assert_int_equal (qn_fake_answer (fake, 1, QN_MSG_PG_RESULT, "\x90", 1), 0);
    assert_int_equal (qn_fake_answer (fake, 1, QN_MSG_PG_RESULT, "\x90", 1), QN_ENOENT);
    assert_int_equal (qn_fake_answer (fake, 0, QN_MSG_PG_RESULT, "\x90", 1), QN_ENOENT);
    assert_int_equal (a.replies, 1);
    //  Another request times out at its deadline (100 ms), not before.
    qn_fake_clear (fake);
    assert_int_equal (qn_fake_count (fake), 0);
    assert_int_equal (qn_fake_deliver (fake, "probe", S_MSG_PING, "\x90", 1, NULL, 0), 0);
    qn_fake_advance (fake, 99);
    assert_int_equal (a.timeouts, 0);
    qn_fake_advance (fake, 1);
    assert_int_equal (a.timeouts, 1);
    assert_int_equal (qn_fake_pending (fake), 0);
    assert_int_equal (qn_counter (k, "kernel_request_timeouts"), 1);
    qn_count (k, "x", 2);
    qn_count (k, "x", 3);
    assert_int_equal (qn_counter (k, "x"), 5);
    qn_gauge_set (k, "x", 1);
    assert_int_equal (qn_counter (k, "x"), 1);
    qn_fake_destroy (&fake);
    assert_null (fake);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_fake_kernel_contract),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
