/*  test/unit/test_kernel.c - the actor runtime with real threads
    Envelope codec, request/reply and deadlines, back-pressure without
    loss, ordered graceful shutdown, the event bus, timers, the hashmap.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hashmap.h"
#include "kernel/kernel.h"

// ------------------------------------------------------------------ envelope
static void
test_envelope_round_trip (void **state)
{
    (void) state;
    qn_env_t in = {
        .version = 1, .type = QN_MSG_PG_EXEC, .corr = 0x1122334455667788ULL,
        .from = { "codec_http", 10 }, .reply_to = { "codec_http", 10 },
        .ttl_ms = 1500, .flags = QN_ENV_FLAG_REPLY
    };
    qn_buf_t b = QN_BUF_INIT;
    assert_int_equal (qn_env_encode_header (&in, &b), 0);
    //  Exact-size copy so ASan catches over-reads.
    char *exact = malloc (b.len);
    memcpy (exact, b.data, b.len);
    qn_env_t out;
    assert_int_equal (qn_env_decode_header (exact, b.len, &out), 0);
    assert_int_equal (out.version, 1);
    assert_int_equal (out.type, QN_MSG_PG_EXEC);
    assert_true (out.corr == in.corr);
    assert_int_equal (out.from.len, 10);
    assert_memory_equal (out.from.ptr, "codec_http", 10);
    assert_int_equal (out.ttl_ms, 1500);
    assert_int_equal (out.flags, QN_ENV_FLAG_REPLY);
    //  Every strict prefix is malformed.
    for (size_t cut = 0; cut < b.len; cut++)
        assert_int_equal (qn_env_decode_header (exact, cut, &out), QN_EPROTO);
    free (exact);
    qn_buf_free (&b);
}

static int
s_sbuf (void *data, const char *buf, size_t len)
{
    qn_buf_append (data, buf, len);
    return 0;
}

static void
test_envelope_malformed (void **state)
{
    (void) state;
    qn_env_t out;
    //  Not an array, too short, wrong types, name too long, version 0,
    //  trailing garbage.
    const char *cases [] = { "\xc0", "\x92\x01\x02", "\x93\x01\xa1x\x01", "\x93\x00\x01\x01" };
    size_t lens [] = { 1, 3, 5, 4 };
    for (size_t i = 0; i < 4; i++)
        assert_int_equal (qn_env_decode_header (cases [i], lens [i], &out), QN_EPROTO);
    qn_buf_t b = QN_BUF_INIT;
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, s_sbuf);
    msgpack_pack_array (&pk, 4);
    msgpack_pack_uint8 (&pk, 1);
    msgpack_pack_uint16 (&pk, 5);
    msgpack_pack_uint64 (&pk, 9);
    char name [100];
    memset (name, 'x', sizeof name);
    msgpack_pack_str (&pk, sizeof name);
    msgpack_pack_str_body (&pk, name, sizeof name);
    assert_int_equal (qn_env_decode_header (b.data, b.len, &out), QN_EPROTO);
    qn_buf_reset (&b);
    qn_env_t ok = { .version = 1, .type = 3 };
    qn_env_encode_header (&ok, &b);
    qn_buf_putc (&b, 0);
    assert_int_equal (qn_env_decode_header (b.data, b.len, &out), QN_EPROTO);
    qn_buf_free (&b);
}

// ------------------------------------------------------------------ actors
typedef struct {
    qn_kernel_t *kernel;
    atomic_int received;
    int delay_us;
    atomic_int stops;
    int pending_on_stop;        //  Work left when STOP arrives
} s_echo_t;

static int
s_echo_on_msg (void *self_, const qn_env_t *env)
{
    s_echo_t *self = self_;
    if (self->delay_us)
        usleep ((useconds_t) self->delay_us);
    atomic_fetch_add (&self->received, 1);
    if (env->corr)
        qn_reply (self->kernel, env, QN_MSG_PG_RESULT, env->body.ptr, env->body.len, NULL, 0);
    return 0;
}

static void
s_finish_work (void *self_, void *arg)
{
    (void) arg;
    s_echo_t *self = self_;
    if (--self->pending_on_stop <= 0)
        qn_actor_done (self->kernel);
}

static int
s_echo_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    s_echo_t *self = self_;
    atomic_fetch_add (&self->stops, 1);
    if (self->pending_on_stop <= 0)
        return QN_DONE;
    //  Drain the remaining work over a few timer ticks, then say done.
    qn_timer_add (self->kernel, 5, 5, s_finish_work, NULL);
    return 0;
}

static const qn_route_t s_echo_routes [] = {
    { QN_MSG_PG_EXEC, s_echo_on_msg },
    { QN_MSG_STOP, s_echo_on_stop },
    { 0, NULL }
};

static qn_actor_t *
s_spawn_echo (qn_kernel_t *k, const char *name, s_echo_t *state, int hwm)
{
    state->kernel = k;
    qn_actor_def_t def = { .name = name, .routes = s_echo_routes, .self = state,
                           .inbound_hwm = hwm };
    return qn_actor_spawn (k, &def);
}

typedef struct {
    int replies;
    int timeouts;
    char last [16];
} s_main_t;

static void
s_on_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    s_main_t *m = self_;
    if (!env) {
        m->timeouts++;
        return;
    }
    m->replies++;
    snprintf (m->last, sizeof m->last, "%.*s", (int) env->body.len, env->body.ptr);
}

static void
test_request_reply_and_deadline (void **state)
{
    (void) state;
    qn_config_t cfg = { 0 };
    qn_kernel_t *k = qn_kernel_new (&cfg);
    s_main_t m = { 0 };
    qn_kernel_main_routes (k, NULL, &m);
    s_echo_t echo = { 0 };
    assert_non_null (s_spawn_echo (k, "echo", &echo, 0));
    qn_msg_t msg = { .to = "echo", .type = QN_MSG_PG_EXEC, .body = "hello", .body_len = 5 };
    assert_int_equal (qn_request (k, &msg, 1000, s_on_reply, NULL), 0);
    for (int i = 0; i < 200 && !m.replies; i++)
        qn_kernel_poll (k, 10);
    assert_int_equal (m.replies, 1);
    assert_string_equal (m.last, "hello");
    //  A request nobody answers (an actor with no route for it) expires.
    qn_msg_t lost = { .to = "echo", .type = QN_MSG_HTTP_CLOSED, .body = "x", .body_len = 1 };
    int64_t t0 = qn_now_ms ();
    assert_int_equal (qn_request (k, &lost, 50, s_on_reply, NULL), 0);
    while (!m.timeouts && qn_now_ms () - t0 < 2000)
        qn_kernel_poll (k, 10);
    assert_int_equal (m.timeouts, 1);
    assert_true (qn_now_ms () - t0 >= 50);
    //  A late reply to an expired request is dropped, not delivered.
    assert_int_equal (m.replies, 1);
    //  Unknown destinations are refused at once... after the connect:
    //  inproc connects lazily, so the message waits in the pipe; the
    //  request still expires on its deadline.
    qn_kernel_destroy (&k);
}

typedef struct {
    qn_kernel_t *kernel;
    int sent;
    int total;
    int eagain;
    bool waiting;
} s_sender_t;

static void s_send_more (void *self_, void *arg);

static void
s_send_more (void *self_, void *arg)
{
    (void) arg;
    s_sender_t *s = self_;
    s->waiting = false;
    while (s->sent < s->total) {
        char body [8];
        int n = snprintf (body, sizeof body, "%d", s->sent);
        int rc = qn_send_body (s->kernel, "slow", QN_MSG_PG_EXEC, 0, body, (size_t) n);
        if (rc == QN_EAGAIN) {
            s->eagain++;
            s->waiting = true;
            qn_on_writable (s->kernel, "slow", s_send_more, NULL);
            return;
        }
        assert_int_equal (rc, 0);
        s->sent++;
    }
}

static void
test_back_pressure_no_loss (void **state)
{
    (void) state;
    qn_config_t cfg = { 0 };
    qn_kernel_t *k = qn_kernel_new (&cfg);
    s_sender_t s = { .kernel = k, .total = 30000 };
    qn_kernel_main_routes (k, NULL, &s);
    s_echo_t slow = { .delay_us = 2 };
    assert_non_null (s_spawn_echo (k, "slow", &slow, 100));
    s_send_more (&s, NULL);
    int64_t t0 = qn_now_ms ();
    while ((s.sent < s.total || atomic_load (&slow.received) < s.total)
           && qn_now_ms () - t0 < 30000)
        qn_kernel_poll (k, 5);
    assert_int_equal (s.sent, s.total);
    assert_int_equal (atomic_load (&slow.received), s.total);
    //  The sender did hit the high-water mark and paused, never dropped.
    assert_true (s.eagain > 0);
    qn_kernel_destroy (&k);
}

static void
test_shutdown_drains_in_reverse_order (void **state)
{
    (void) state;
    qn_config_t cfg = { 0 };
    qn_kernel_t *k = qn_kernel_new (&cfg);
    s_echo_t a = { .pending_on_stop = 0 }, b = { .pending_on_stop = 5 };
    assert_non_null (s_spawn_echo (k, "first", &a, 0));
    assert_non_null (s_spawn_echo (k, "second", &b, 0));
    assert_int_equal (qn_kernel_stop_all (k, 2000), 0);
    assert_int_equal (atomic_load (&a.stops), 1);
    assert_int_equal (atomic_load (&b.stops), 1);
    assert_true (b.pending_on_stop <= 0);      //  Its work finished first
    //  An actor that never finishes is stopped at the deadline.
    s_echo_t stuck = { .pending_on_stop = 1000000 };
    assert_non_null (s_spawn_echo (k, "stuck", &stuck, 0));
    int64_t t0 = qn_now_ms ();
    assert_int_equal (qn_kernel_stop_all (k, 100), -1);
    assert_true (qn_now_ms () - t0 < 3000);
    qn_kernel_destroy (&k);
}

static void
test_spawn_duplicate_name_fails (void **state)
{
    (void) state;
    qn_config_t cfg = { 0 };
    qn_kernel_t *k = qn_kernel_new (&cfg);
    s_echo_t a = { 0 }, b = { 0 };
    assert_non_null (s_spawn_echo (k, "dup", &a, 0));
    assert_null (s_spawn_echo (k, "dup", &b, 0));
    qn_kernel_destroy (&k);
}

// ------------------------------------------------------------------ bus and timers
typedef struct {
    qn_kernel_t *kernel;
    atomic_int events;
} s_sub_t;

static int
s_sub_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    s_sub_t *s = self_;
    return qn_subscribe (s->kernel, "committed");
}

static int
s_sub_on_event (void *self_, const qn_env_t *env)
{
    s_sub_t *s = self_;
    if (env->body.len == 3 && !memcmp (env->body.ptr, "q-1", 3))
        atomic_fetch_add (&s->events, 1);
    return 0;
}

static const qn_route_t s_sub_routes [] = {
    { QN_MSG_START, s_sub_on_start },
    { QN_MSG_COMMITTED, s_sub_on_event },
    { 0, NULL }
};

static void
s_tick (void *self_, void *arg)
{
    (void) self_;
    (*(int *) arg)++;
}

static void
test_bus_and_timers (void **state)
{
    (void) state;
    qn_config_t cfg = { 0 };
    qn_kernel_t *k = qn_kernel_new (&cfg);
    s_sub_t sub = { .kernel = k };
    qn_actor_def_t def = { .name = "sub", .routes = s_sub_routes, .self = &sub };
    assert_non_null (qn_actor_spawn (k, &def));
    //  Subscriptions propagate asynchronously: publish until one lands.
    int64_t t0 = qn_now_ms ();
    while (!atomic_load (&sub.events) && qn_now_ms () - t0 < 3000) {
        qn_publish (k, "committed", QN_MSG_COMMITTED, "q-1", 3);
        qn_publish (k, "other", QN_MSG_COMMITTED, "q-1", 3);
        qn_kernel_poll (k, 10);
    }
    assert_true (atomic_load (&sub.events) > 0);
    //  Timers: a one-shot fires once, a repeating one fires repeatedly, a
    //  cancelled one never.
    int once = 0, again = 0, never = 0;
    qn_timer_add (k, 10, 0, s_tick, &once);
    qn_timer_add (k, 5, 5, s_tick, &again);
    uint64_t id = qn_timer_add (k, 20, 0, s_tick, &never);
    qn_timer_cancel (k, id);
    t0 = qn_now_ms ();
    while (qn_now_ms () - t0 < 100)
        qn_kernel_poll (k, 5);
    assert_int_equal (once, 1);
    assert_true (again >= 5);
    assert_int_equal (never, 0);
    qn_kernel_destroy (&k);
}

// ------------------------------------------------------------------ timer heap
#define S_NTIMERS 300

typedef struct {
    qn_kernel_t *kernel;
    int64_t due_ms [S_NTIMERS];
    int fired [S_NTIMERS];
    int order [S_NTIMERS];      //  Indexes in firing order
    int nfired;
    int early;                  //  Fired before their due time
    uint64_t self_id;           //  The repeating timer that cancels itself
    int self_ticks;
} s_timers_t;

static s_timers_t s_tm;

static void
s_tm_fire (void *self_, void *arg)
{
    (void) self_;
    int i = (int) (intptr_t) arg;
    if (qn_now_ms () < s_tm.due_ms [i])
        s_tm.early++;
    s_tm.fired [i]++;
    s_tm.order [s_tm.nfired++ % S_NTIMERS] = i;
}

static void
s_tm_self_cancel (void *self_, void *arg)
{
    (void) self_;
    (void) arg;
    if (++s_tm.self_ticks == 3)
        qn_timer_cancel (s_tm.kernel, s_tm.self_id);
}

//  Many timers on one actor: none early, each once, cancelled ones never,
//  equal delays in the order they were added, and a repeating timer can
//  cancel itself from its own callback.
static void
test_timer_heap_order_and_cancel (void **state)
{
    (void) state;
    qn_config_t cfg = { 0 };
    qn_kernel_t *k = qn_kernel_new (&cfg);
    memset (&s_tm, 0, sizeof s_tm);
    s_tm.kernel = k;
    uint64_t ids [S_NTIMERS];
    for (int i = 0; i < S_NTIMERS; i++) {
        uint32_t delay = (uint32_t) ((i * 7) % 40);     //  40 groups of equal delays
        s_tm.due_ms [i] = qn_now_ms () + delay;
        ids [i] = qn_timer_add (k, delay, 0, s_tm_fire, (void *) (intptr_t) i);
    }
    int cancelled = 0;
    for (int i = 0; i < S_NTIMERS; i += 3) {
        qn_timer_cancel (k, ids [i]);
        cancelled++;
    }
    s_tm.self_id = qn_timer_add (k, 2, 2, s_tm_self_cancel, NULL);
    int64_t t0 = qn_now_ms ();
    while (qn_now_ms () - t0 < 200)
        qn_kernel_poll (k, 5);
    assert_int_equal (s_tm.nfired, S_NTIMERS - cancelled);
    assert_int_equal (s_tm.early, 0);
    assert_int_equal (s_tm.self_ticks, 3);
    for (int i = 0; i < S_NTIMERS; i++)
        assert_int_equal (s_tm.fired [i], i % 3 == 0 ? 0 : 1);
    //  Same delay: fired in the order added (i grows within a group).
    int last [40];
    for (int g = 0; g < 40; g++)
        last [g] = -1;
    for (int n = 0; n < s_tm.nfired; n++) {
        int i = s_tm.order [n], g = (i * 7) % 40;
        assert_true (i > last [g]);
        last [g] = i;
    }
    qn_kernel_destroy (&k);
}

// ------------------------------------------------------------------ hashmap
static void
test_hashmap (void **state)
{
    (void) state;
    qn_hashmap_t *m = qn_hashmap_new ();
    for (uint64_t i = 1; i <= 10000; i++)
        qn_hashmap_put (m, i * 64, (void *) (uintptr_t) i);
    assert_int_equal (qn_hashmap_size (m), 10000);
    for (uint64_t i = 1; i <= 10000; i += 2)
        assert_true (qn_hashmap_remove (m, i * 64) == (void *) (uintptr_t) i);
    for (uint64_t i = 1; i <= 10000; i++)
        assert_true (qn_hashmap_get (m, i * 64) == (i % 2 ? NULL : (void *) (uintptr_t) i));
    assert_null (qn_hashmap_remove (m, 7));
    assert_int_equal (qn_hashmap_size (m), 5000);
    qn_hashmap_destroy (&m);
    assert_null (m);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_envelope_round_trip),
        cmocka_unit_test (test_envelope_malformed),
        cmocka_unit_test (test_request_reply_and_deadline),
        cmocka_unit_test (test_back_pressure_no_loss),
        cmocka_unit_test (test_shutdown_drains_in_reverse_order),
        cmocka_unit_test (test_spawn_duplicate_name_fails),
        cmocka_unit_test (test_bus_and_timers),
        cmocka_unit_test (test_timer_heap_order_and_cancel),
        cmocka_unit_test (test_hashmap),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
