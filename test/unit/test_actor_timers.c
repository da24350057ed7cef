/*  test/unit/test_actor_timers.c - the timers actor on real threads
    A stand-in "pg_writer" keeps a table of timers in memory and answers
    the actor's three statements like schema/functions/31_timers.sql does:
    queen.timer_due (pending timers due within the horizon, with the
    database clock), queen.timer_fire ('fired' if pending and due, 'early'
    with the real due time if pending and not due yet, else 'gone') and
    the sweep. The tests check when and how the actor fires: on time, once,
    in batches of at most 200 ids, from a load or from a TIMER_ARM alone,
    again after an 'early' answer, and that it publishes "committed".
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "actors/pg/statements.h"
#include "actors/actors.h"
#include "kernel/kernel.h"
#include "wire/msg_timer_arm.h"


#define MAX_TIMERS 1000

typedef struct {
    int64_t id;
    int64_t due_us;             //  The real due time
    bool hidden;                //  Not returned by loads (only TIMER_ARM can bring it)
    int fires;                  //  Times it was fired
    int64_t fired_us;
} s_timer_t;

//  The fake database, shared by the stand-in pg_writer thread and the test.
static struct {
    pthread_mutex_t lock;
    s_timer_t timers [MAX_TIMERS];
    int count;
    int fire_calls;
    int max_batch;
    int loads;
} s_db = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void
s_db_add (int64_t id, int64_t due_us, bool hidden)
{
    pthread_mutex_lock (&s_db.lock);
    assert_true (s_db.count < MAX_TIMERS);
    s_db.timers [s_db.count++] = (s_timer_t) { .id = id, .due_us = due_us, .hidden = hidden };
    pthread_mutex_unlock (&s_db.lock);
}

static s_timer_t *
s_db_find (int64_t id)
{
    for (int i = 0; i < s_db.count; i++)
        if (s_db.timers [i].id == id)
            return &s_db.timers [i];
    return NULL;
}

//  Copy of timer `id` (under the lock).
static s_timer_t
s_db_get (int64_t id)
{
    pthread_mutex_lock (&s_db.lock);
    s_timer_t t = *s_db_find (id);
    pthread_mutex_unlock (&s_db.lock);
    return t;
}

static void
s_pack_str (msgpack_packer *pk, const char *s)
{
    msgpack_pack_str (pk, strlen (s));
    msgpack_pack_str_body (pk, s, strlen (s));
}

//  rows of queen.timer_due: [id, due_at, db_now] for pending, visible
//  timers due within p0 ms.
static void
s_due (msgpack_packer *pk, const msgpack_object *params)
{
    int64_t horizon_us = params->via.array.ptr [0].via.i64 * 1000, now = qn_wall_us ();
    int n = 0;
    for (int i = 0; i < s_db.count; i++)
        n += !s_db.timers [i].fires && !s_db.timers [i].hidden && s_db.timers [i].due_us <= now + horizon_us;
    msgpack_pack_array (pk, (size_t) n);
    for (int i = 0; i < s_db.count; i++) {
        s_timer_t *t = &s_db.timers [i];
        if (t->fires || t->hidden || t->due_us > now + horizon_us)
            continue;
        msgpack_pack_array (pk, 3);
        msgpack_pack_int64 (pk, t->id);
        msgpack_pack_int64 (pk, t->due_us);
        msgpack_pack_int64 (pk, now);
    }
    s_db.loads++;
}

//  rows of queen.timer_fire: [id, status, due_at, tenant, queue, error].
static void
s_fire (msgpack_packer *pk, const msgpack_object *params)
{
    const msgpack_object *ids = &params->via.array.ptr [0];
    int64_t now = qn_wall_us ();
    s_db.fire_calls++;
    if ((int) ids->via.array.size > s_db.max_batch)
        s_db.max_batch = (int) ids->via.array.size;
    msgpack_pack_array (pk, ids->via.array.size);
    for (uint32_t i = 0; i < ids->via.array.size; i++) {
        int64_t id = ids->via.array.ptr [i].via.i64;
        s_timer_t *t = s_db_find (id);
        const char *status = "gone";
        if (t && !t->fires && t->due_us <= now) {
            status = "fired";
            t->fires++;
            t->fired_us = now;
        }
        else
        if (t && !t->fires)
            status = "early";
        msgpack_pack_array (pk, 6);
        msgpack_pack_int64 (pk, id);
        s_pack_str (pk, status);
        t ? msgpack_pack_int64 (pk, t->due_us) : msgpack_pack_nil (pk);
        s_pack_str (pk, "");
        s_pack_str (pk, "q");
        msgpack_pack_nil (pk);
    }
}

static int
s_on_exec (void *self_, const qn_env_t *env)
{
    qn_kernel_t *k = self_;
    msgpack_unpacked msg;
    msgpack_unpacked_init (&msg);
    assert_int_equal (msgpack_unpack_next (&msg, env->body.ptr, env->body.len, NULL), MSGPACK_UNPACK_SUCCESS);
    const msgpack_object *f = msg.data.via.array.ptr;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 5);
    msgpack_pack_true (&pk);
    s_pack_str (&pk, "00000");
    s_pack_str (&pk, "");
    s_pack_str (&pk, "");
    pthread_mutex_lock (&s_db.lock);
    switch (f [0].via.u64) {
        case QN_SQL_TIMER_DUE:
            s_due (&pk, &f [2]);
            break;
        case QN_SQL_TIMER_FIRE:
            s_fire (&pk, &f [2]);
            break;
        case QN_SQL_STATE_SWEEP:
            msgpack_pack_array (&pk, 1);
            msgpack_pack_array (&pk, 2);
            msgpack_pack_int64 (&pk, 0);
            msgpack_pack_int64 (&pk, 0);
            break;
        default:
            fail_msg ("unexpected statement %d", (int) f [0].via.u64);
    }
    pthread_mutex_unlock (&s_db.lock);
    qn_reply (k, env, QN_MSG_PG_RESULT, b.data, b.size, NULL, 0);
    msgpack_sbuffer_destroy (&b);
    msgpack_unpacked_destroy (&msg);
    return 0;
}

static const qn_route_t s_pg_routes [] = {
    { QN_MSG_PG_EXEC, s_on_exec },
    { 0, NULL }
};

static atomic_int s_committed;

static int
s_on_committed (void *self_, const qn_env_t *env)
{
    (void) self_;
    //  [tenant "", queue "q"]
    if (env->body.len == 4 && !memcmp (env->body.ptr, "\x92\xa0\xa1q", 4))
        atomic_fetch_add (&s_committed, 1);
    return 0;
}

static const qn_route_t s_main_routes [] = {
    { QN_MSG_COMMITTED, s_on_committed },
    { 0, NULL }
};

static void
s_arm (qn_kernel_t *k, int64_t id, int64_t due_us)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_msg_timer_arm_encode (&(qn_msg_timer_arm_t) { .id = id, .due_us = due_us }, &b);
    assert_int_equal (qn_send_body (k, "timers", QN_MSG_TIMER_ARM, 0, b.data, b.len), 0);
    qn_buf_free (&b);
}

//  Polls the main loop until timers [first, first + n) have all fired, or
//  `ms` passed. True if they did.
static bool
s_wait_fired (qn_kernel_t *k, int64_t first, int n, int64_t ms)
{
    int64_t until = qn_now_ms () + ms;
    for (;;) {
        bool all = true;
        for (int64_t id = first; id < first + n && all; id++)
            all = s_db_get (id).fires > 0;
        if (all)
            return true;
        if (qn_now_ms () > until)
            return false;
        qn_kernel_poll (k, 5);
    }
}

static void
test_timers (void **state)
{
    (void) state;
    qn_config_t cfg = { .db_statement_timeout_ms = 30000 };
    qn_kernel_t *k = qn_kernel_new (&cfg);
    qn_kernel_main_routes (k, s_main_routes, NULL);
    assert_int_equal (qn_subscribe (k, "committed"), 0);
    qn_actor_def_t def = { .name = "pg_writer", .routes = s_pg_routes, .self = k };
    assert_non_null (qn_actor_spawn (k, &def));
    assert_non_null (qn_timers_new (k, &cfg));

    //  Loaded before it is due, fired at its instant (not before), once.
    int64_t due = qn_wall_us () + 900000;
    s_db_add (1, due, false);
    assert_true (s_wait_fired (k, 1, 1, 5000));
    s_timer_t t = s_db_get (1);
    assert_true (t.fired_us >= due);
    assert_true (t.fired_us - due < 250000);      //  generous: a shared machine

    //  Created on this broker (TIMER_ARM) and invisible to loads: fired anyway.
    due = qn_wall_us () + 50000;
    s_db_add (2, due, true);
    s_arm (k, 2, due);
    assert_true (s_wait_fired (k, 2, 1, 3000));
    assert_true (s_db_get (2).fired_us >= due);

    //  ARM'ed with a wrong (early) instant: 'early' puts it back on the heap
    //  for its real one.
    due = qn_wall_us () + 300000;
    s_db_add (3, due, true);
    s_arm (k, 3, qn_wall_us ());
    assert_true (s_wait_fired (k, 3, 1, 3000));
    assert_true (s_db_get (3).fired_us >= due);

    //  Far beyond the horizon: an ARM does not hold it in memory.
    s_db_add (4, qn_wall_us () + 3600 * 1000000LL, true);
    s_arm (k, 4, qn_wall_us () + 3600 * 1000000LL);

    //  450 timers due at one instant: several calls of at most 200 ids.
    due = qn_wall_us () + 400000;
    for (int i = 0; i < 450; i++)
        s_db_add (100 + i, due, false);
    assert_true (s_wait_fired (k, 100, 450, 5000));
    pthread_mutex_lock (&s_db.lock);
    assert_true (s_db.max_batch <= 200);
    assert_true (s_db.max_batch > 1);
    for (int i = 0; i < s_db.count; i++)
        assert_true (s_db.timers [i].fires <= 1);
    assert_int_equal (s_db_find (4)->fires, 0);
    assert_true (s_db.loads > 1);
    pthread_mutex_unlock (&s_db.lock);

    //  Fired timers wake their queue's long-polls (the replies reach the
    //  actor a little after the fake database marked the timers).
    int64_t until = qn_now_ms () + 2000;
    while ((!atomic_load (&s_committed) || qn_counter (k, "timers_fired") < 453) && qn_now_ms () < until)
        qn_kernel_poll (k, 5);
    assert_true (atomic_load (&s_committed) > 0);
    assert_int_equal (qn_counter (k, "timers_fired"), 453);

    assert_int_equal (qn_kernel_stop_all (k, 2000), 0);
    qn_kernel_destroy (&k);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_timers),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
