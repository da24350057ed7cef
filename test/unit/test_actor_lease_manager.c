/*  test/unit/test_actor_lease_manager.c - lease_manager and its table
    The parking table (actors/park/lease_manager_table.c) is pure, so most
    tests drive it directly: ordering, one scout per list, chaining,
    pending kicks, missed commits, partitions and namespaces, due
    instants, cancellation and clean-up. The last test runs the real
    actor on real threads against a stand-in codec_http.
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

#include "actors/park/lease_manager_table.h"
#include "actors/actors.h"
#include "kernel/kernel.h"


#define HORIZON_US (60 * 1000000LL)
#define SCOUT_TTL  5000

//  A park request: queue pop of (tenant "", queue, partition, group).
static qn_park_req_t
s_req (uint64_t id, const char *queue, const char *partition, const char *group,
       int64_t deadline_ms, int64_t started_us)
{
    qn_park_req_t p;
    memset (&p, 0, sizeof p);
    p.ctx_id = id;
    p.f [QN_PARK_F_TENANT] = "";
    p.f [QN_PARK_F_QUEUE] = queue;
    p.f [QN_PARK_F_PARTITION] = partition;
    p.f [QN_PARK_F_GROUP] = group;
    for (int i = 0; i < 6; i++)
        p.len [i] = p.f [i] ? strlen (p.f [i]) : 0;
    p.deadline_ms = deadline_ms;
    p.started_us = started_us;
    return p;
}

static qn_park_req_t
s_ns_req (uint64_t id, const char *ns, const char *group, int64_t deadline_ms)
{
    qn_park_req_t p = s_req (id, NULL, NULL, group, deadline_ms, 1);
    p.f [QN_PARK_F_NS] = ns;
    p.len [QN_PARK_F_NS] = strlen (ns);
    return p;
}

static void
s_park_ok (qn_park_table_t *t, qn_park_req_t p, int64_t now_ms, qn_buf_t *woken)
{
    qn_park_list_t *l;
    assert_int_equal (qn_park_table_park (t, &p, now_ms, now_ms * 1000, &l, woken), QN_PARK_PARKED);
    assert_non_null (l);
}

static size_t
s_n (const qn_buf_t *ids)
{
    return ids->len / sizeof (uint64_t);
}

static uint64_t
s_id (const qn_buf_t *ids, size_t i)
{
    uint64_t id;
    memcpy (&id, ids->data + i * sizeof id, sizeof id);
    return id;
}

static void
s_commit (qn_park_table_t *t, const char *queue, const char *partition, int64_t now_ms,
          qn_buf_t *woken)
{
    qn_park_table_committed (t, "", 0, queue, strlen (queue), partition,
                       partition ? strlen (partition) : 0, now_ms, now_ms * 1000, woken);
}

static void
test_one_scout_per_list (void **state)
{
    (void) state;
    qn_park_table_t t;
    qn_park_table_init (&t, HORIZON_US, SCOUT_TTL);
    qn_buf_t w = QN_BUF_INIT;
    //  Parked out of order: the list is kept oldest request first.
    s_park_ok (&t, s_req (3, "q", NULL, "g", 10000, 1), 100, &w);
    s_park_ok (&t, s_req (1, "q", NULL, "g", 10000, 1), 100, &w);
    s_park_ok (&t, s_req (2, "q", NULL, "g", 10000, 1), 100, &w);
    assert_int_equal (s_n (&w), 0);
    assert_int_equal (t.count, 3);
    assert_int_equal (t.list_count, 1);
    //  A commit sends out the oldest only.
    s_commit (&t, "q", NULL, 200, &w);
    assert_int_equal (s_n (&w), 1);
    assert_int_equal (s_id (&w, 0), 1);
    assert_int_equal (t.count, 2);
    //  More commits while it is out wake nobody.
    qn_buf_reset (&w);
    s_commit (&t, "q", NULL, 201, &w);
    s_commit (&t, "q", NULL, 202, &w);
    assert_int_equal (s_n (&w), 0);
    //  It comes back empty after those commits: the oldest goes out
    //  again (itself: it keeps its place at the head).
    qn_park_req_t back = s_req (1, "q", NULL, "g", 10000, 200500);
    s_park_ok (&t, back, 203, &w);
    assert_int_equal (s_n (&w), 1);
    assert_int_equal (s_id (&w, 0), 1);
    //  It finds messages: the next one goes out (chain)...
    qn_buf_reset (&w);
    qn_park_table_settled (&t, 1, true, 204, &w);
    assert_int_equal (s_n (&w), 1);
    assert_int_equal (s_id (&w, 0), 2);
    //  ...which comes back empty with no commit since it started: stop.
    qn_buf_reset (&w);
    s_park_ok (&t, s_req (2, "q", NULL, "g", 10000, 205 * 1000), 206, &w);
    assert_int_equal (s_n (&w), 0);
    assert_int_equal (t.count, 2);
    //  A settle for an unknown pop changes nothing.
    qn_park_table_settled (&t, 99, true, 207, &w);
    assert_int_equal (s_n (&w), 0);
    qn_park_table_destroy (&t);
    qn_buf_free (&w);
}

static void
test_groups_and_queues_are_separate (void **state)
{
    (void) state;
    qn_park_table_t t;
    qn_park_table_init (&t, HORIZON_US, SCOUT_TTL);
    qn_buf_t w = QN_BUF_INIT;
    s_park_ok (&t, s_req (1, "q", NULL, "g1", 10000, 1), 100, &w);
    s_park_ok (&t, s_req (2, "q", NULL, "g2", 10000, 1), 100, &w);
    s_park_ok (&t, s_req (3, "other", NULL, "g1", 10000, 1), 100, &w);
    s_park_ok (&t, s_req (4, "q", NULL, "g1", 10000, 1), 100, &w);
    assert_int_equal (t.list_count, 3);
    //  One scout per group of the queue; the other queue sleeps on.
    s_commit (&t, "q", NULL, 200, &w);
    assert_int_equal (s_n (&w), 2);
    assert_true ((s_id (&w, 0) == 1 && s_id (&w, 1) == 2) || (s_id (&w, 0) == 2 && s_id (&w, 1) == 1));
    //  Another tenant's queue of the same name is another topic.
    qn_buf_reset (&w);
    qn_park_table_committed (&t, "t2", 2, "other", 5, NULL, 0, 201, 201000, &w);
    assert_int_equal (s_n (&w), 0);
    s_commit (&t, "other", NULL, 202, &w);
    assert_int_equal (s_n (&w), 1);
    assert_int_equal (s_id (&w, 0), 3);
    qn_park_table_destroy (&t);
    qn_buf_free (&w);
}

static void
test_partitions (void **state)
{
    (void) state;
    qn_park_table_t t;
    qn_park_table_init (&t, HORIZON_US, SCOUT_TTL);
    qn_buf_t w = QN_BUF_INIT;
    s_park_ok (&t, s_req (1, "q", "p1", "g", 10000, 1), 100, &w);
    s_park_ok (&t, s_req (2, "q", "p2", "g", 10000, 1), 100, &w);
    s_park_ok (&t, s_req (3, "q", NULL, "g", 10000, 1), 100, &w);
    //  A commit naming p2 wakes the p2 pop and the wildcard one.
    s_commit (&t, "q", "p2", 200, &w);
    assert_int_equal (s_n (&w), 2);
    assert_true (s_id (&w, 0) != 1 && s_id (&w, 1) != 1);
    //  A commit naming no partition wakes p1 as well.
    qn_buf_reset (&w);
    s_commit (&t, "q", NULL, 201, &w);
    assert_int_equal (s_n (&w), 1);
    assert_int_equal (s_id (&w, 0), 1);
    qn_park_table_destroy (&t);
    qn_buf_free (&w);
}

static void
test_namespace_pops (void **state)
{
    (void) state;
    qn_park_table_t t;
    qn_park_table_init (&t, HORIZON_US, SCOUT_TTL);
    qn_buf_t w = QN_BUF_INIT;
    s_park_ok (&t, s_ns_req (1, "billing", "g", 10000), 100, &w);
    s_park_ok (&t, s_ns_req (2, "orders", "g", 10000), 100, &w);
    //  A queue's namespace is not known here: any commit of the tenant
    //  kicks every namespace list of the tenant.
    s_commit (&t, "billing.invoice", NULL, 200, &w);
    assert_int_equal (s_n (&w), 2);
    qn_park_table_destroy (&t);
    qn_buf_free (&w);
}

static void
test_missed_commit (void **state)
{
    (void) state;
    qn_park_table_t t;
    qn_park_table_init (&t, HORIZON_US, SCOUT_TTL);
    qn_buf_t w = QN_BUF_INIT;
    //  A commit lands at 150 ms while a pop started at 120 ms is in
    //  flight; nobody is parked yet.
    s_commit (&t, "q", NULL, 150, &w);
    assert_int_equal (s_n (&w), 0);
    //  The pop parks at 160 ms: it may have missed the commit, so it goes
    //  straight back out.
    s_park_ok (&t, s_req (7, "q", NULL, "g", 10000, 120 * 1000), 160, &w);
    assert_int_equal (s_n (&w), 1);
    assert_int_equal (s_id (&w, 0), 7);
    assert_int_equal (t.count, 0);
    //  Started after the commit: it stays parked.
    qn_buf_reset (&w);
    s_park_ok (&t, s_req (7, "q", NULL, "g", 10000, 170 * 1000), 180, &w);
    assert_int_equal (s_n (&w), 0);
    assert_int_equal (t.count, 1);
    //  A pop older than the stamps kept counts as having missed one.
    s_park_ok (&t, s_req (8, "q", NULL, "g", 1000000, 1), 100000, &w);
    assert_int_equal (s_n (&w), 1);
    assert_int_equal (s_id (&w, 0), 7);
    //  Pruning forgets old stamps only.
    qn_park_table_prune (&t, 150 * 1000 + HORIZON_US + 1);
    assert_int_equal (qn_hashmap_size (t.commits), 0);
    qn_park_table_destroy (&t);
    qn_buf_free (&w);
}

static void
test_due_and_safety_net (void **state)
{
    (void) state;
    qn_park_table_t t;
    qn_park_table_init (&t, HORIZON_US, SCOUT_TTL);
    qn_buf_t w = QN_BUF_INIT;
    qn_park_req_t a = s_req (1, "q", NULL, "g", 100000, 1);
    a.due_ms = 2100;
    qn_park_req_t b = s_req (2, "q", NULL, "g", 100000, 1);
    b.due_ms = 2000;
    s_park_ok (&t, a, 100, &w);
    qn_park_list_t *l;
    assert_int_equal (qn_park_table_park (&t, &b, 100, 100000, &l, &w), QN_PARK_PARKED);
    //  The list keeps the earliest due instant; the safety net is later.
    assert_int_equal (l->due_ms, 2000);
    assert_int_equal (qn_park_list_next_ms (l), 2000);
    //  At the due instant one pop goes out, not all of them.
    assert_true (qn_park_list_fire (&t, l, 2000, &w));
    assert_int_equal (s_n (&w), 1);
    assert_int_equal (s_id (&w, 0), 1);
    assert_int_equal (l->due_ms, 0);
    assert_int_equal (qn_park_list_next_ms (l), 100 + QN_PARK_SAFETY_MS);
    //  The scout never reports: after its TTL the next kick sends another.
    qn_buf_reset (&w);
    assert_true (qn_park_list_fire (&t, l, 100 + QN_PARK_SAFETY_MS, &w));
    assert_int_equal (s_n (&w), 0);
    assert_true (l->pending);
    assert_true (qn_park_list_fire (&t, l, 2000 + SCOUT_TTL + 1, &w));
    assert_int_equal (s_n (&w), 1);
    assert_int_equal (s_id (&w, 0), 2);
    //  Both gone: a fire frees the list.
    assert_false (qn_park_list_fire (&t, l, 2000 + SCOUT_TTL + 1 + 2 * SCOUT_TTL, &w));
    assert_int_equal (t.list_count, 0);
    assert_int_equal (qn_hashmap_size (t.topics), 0);
    assert_int_equal (qn_hashmap_size (t.scouts), 0);
    qn_park_table_destroy (&t);
    qn_buf_free (&w);
}

static void
test_cancel_deadline_and_cleanup (void **state)
{
    (void) state;
    qn_park_table_t t;
    qn_park_table_init (&t, HORIZON_US, SCOUT_TTL);
    qn_buf_t w = QN_BUF_INIT;
    //  A deadline already passed is not parked.
    qn_park_req_t late = s_req (1, "q", NULL, "g", 100, 1);
    qn_park_list_t *l;
    assert_int_equal (qn_park_table_park (&t, &late, 100, 100000, &l, &w), QN_PARK_EXPIRE_NOW);
    assert_null (l);
    assert_int_equal (t.count, 0);
    s_park_ok (&t, s_req (2, "q", NULL, "g", 10000, 1), 100, &w);
    s_park_ok (&t, s_req (3, "q", "p", "g", 10000, 1), 100, &w);
    assert_int_equal (t.count, 2);
    qn_park_req_t again = s_req (2, "q", NULL, "g", 10000, 1);
    assert_int_equal (qn_park_table_park (&t, &again, 100, 100000, &l, &w), QN_PARK_ALREADY);
    //  Timers of removed waiters and lists are handed to the glue.
    qn_park_waiter_t *two = qn_hashmap_get (t.waiters, 2);
    assert_non_null (two);
    two->timer_id = 42;
    two->list->timer_id = 43;
    assert_true (qn_park_table_take (&t, 2));
    assert_false (qn_park_table_take (&t, 2));
    assert_int_equal (s_n (&t.dead_timers), 2);
    assert_int_equal (s_id (&t.dead_timers, 0), 42);
    assert_int_equal (s_id (&t.dead_timers, 1), 43);
    assert_int_equal (t.count, 1);
    assert_int_equal (t.list_count, 1);
    //  Taking everything (shutdown) frees every list and topic.
    qn_buf_t all = QN_BUF_INIT;
    qn_park_table_take_all (&t, &all);
    assert_int_equal (s_n (&all), 1);
    assert_int_equal (t.count, 0);
    assert_int_equal (t.list_count, 0);
    assert_int_equal (qn_hashmap_size (t.lists), 0);
    assert_int_equal (qn_hashmap_size (t.topics), 0);
    qn_buf_free (&all);
    qn_park_table_destroy (&t);
    qn_buf_free (&w);
}

static void
test_scout_moves_to_another_list (void **state)
{
    (void) state;
    qn_park_table_t t;
    qn_park_table_init (&t, HORIZON_US, SCOUT_TTL);
    qn_buf_t w = QN_BUF_INIT;
    s_park_ok (&t, s_req (1, "q", NULL, "g", 10000, 1), 100, &w);
    s_park_ok (&t, s_req (2, "q", NULL, "g", 10000, 1), 100, &w);
    s_commit (&t, "q", NULL, 200, &w);
    assert_int_equal (s_id (&w, 0), 1);
    s_commit (&t, "q", NULL, 201, &w);
    //  The scout ends without parking (answered): the pending kick sends
    //  the next one.
    qn_buf_reset (&w);
    qn_park_table_settled (&t, 1, false, 202, &w);
    assert_int_equal (s_n (&w), 1);
    assert_int_equal (s_id (&w, 0), 2);
    //  Settled empty with nothing pending: the (now empty) list goes away.
    qn_buf_reset (&w);
    qn_park_table_settled (&t, 2, false, 203, &w);
    assert_int_equal (s_n (&w), 0);
    assert_int_equal (t.list_count, 0);
    qn_park_table_destroy (&t);
    qn_buf_free (&w);
}

static void
test_decode_park (void **state)
{
    (void) state;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 10);
    msgpack_pack_uint64 (&pk, 5);
    msgpack_pack_str (&pk, 0);
    msgpack_pack_str (&pk, 1);
    msgpack_pack_str_body (&pk, "q", 1);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    msgpack_pack_str (&pk, 1);
    msgpack_pack_str_body (&pk, "g", 1);
    msgpack_pack_int64 (&pk, 5000);
    msgpack_pack_int64 (&pk, 1000000 + 1500000);    //  Wall: 1.5 s from "now"
    msgpack_pack_int64 (&pk, 77);
    msgpack_unpacked msg;
    msgpack_unpacked_init (&msg);
    assert_int_equal (msgpack_unpack_next (&msg, b.data, b.size, NULL), MSGPACK_UNPACK_SUCCESS);
    qn_park_req_t p;
    assert_int_equal (qn_park_decode (&msg.data, &p, 100, 1000000), 0);
    assert_int_equal (p.ctx_id, 5);
    assert_int_equal (p.len [QN_PARK_F_TENANT], 0);
    assert_non_null (p.f [QN_PARK_F_TENANT]);
    assert_null (p.f [QN_PARK_F_PARTITION]);
    assert_int_equal (p.deadline_ms, 5000);
    assert_int_equal (p.started_us, 77);
    assert_int_equal (p.due_ms, 100 + 1500 + QN_PARK_DUE_SLACK_MS);
    //  Truncated or mistyped bodies are refused.
    msgpack_unpacked_destroy (&msg);
    msgpack_unpacked_init (&msg);
    assert_int_equal (msgpack_unpack_next (&msg, "\x93\x01\xa0\xa0", 4, NULL), MSGPACK_UNPACK_SUCCESS);
    assert_int_equal (qn_park_decode (&msg.data, &p, 100, 1000000), QN_EPROTO);
    msgpack_unpacked_destroy (&msg);
    msgpack_sbuffer_destroy (&b);
}

// ------------------------------------------------------------------ the real actor
typedef struct {
    atomic_int retries;
    atomic_int expired;
    atomic_llong last_id;
} s_codec_t;

static int
s_codec_on (void *self_, const qn_env_t *env)
{
    s_codec_t *c = self_;
    msgpack_unpacked msg;
    msgpack_unpacked_init (&msg);
    if (msgpack_unpack_next (&msg, env->body.ptr, env->body.len, NULL) == MSGPACK_UNPACK_SUCCESS
    &&  msg.data.type == MSGPACK_OBJECT_ARRAY && msg.data.via.array.size == 1)
        atomic_store (&c->last_id, (long long) msg.data.via.array.ptr [0].via.u64);
    msgpack_unpacked_destroy (&msg);
    atomic_fetch_add (env->type == QN_MSG_POP_RETRY ? &c->retries : &c->expired, 1);
    return 0;
}

static const qn_route_t s_codec_routes [] = {
    { QN_MSG_POP_RETRY, s_codec_on },
    { QN_MSG_POP_EXPIRED, s_codec_on },
    { 0, NULL }
};

static void
s_send_park (qn_kernel_t *k, uint64_t id, int64_t deadline_ms)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 10);
    msgpack_pack_uint64 (&pk, id);
    msgpack_pack_str (&pk, 0);
    msgpack_pack_str (&pk, 1);
    msgpack_pack_str_body (&pk, "q", 1);
    for (int i = 0; i < 3; i++)
        msgpack_pack_nil (&pk);
    msgpack_pack_str (&pk, 1);
    msgpack_pack_str_body (&pk, "g", 1);
    msgpack_pack_int64 (&pk, deadline_ms);
    msgpack_pack_nil (&pk);
    msgpack_pack_int64 (&pk, qn_now_us ());
    assert_int_equal (qn_send_body (k, "lease_manager", QN_MSG_POP_PARK, 0, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
}

static bool
s_poll_until (qn_kernel_t *k, atomic_int *v, int want, int64_t ms)
{
    int64_t until = qn_now_ms () + ms;
    while (atomic_load (v) < want && qn_now_ms () < until)
        qn_kernel_poll (k, 5);
    return atomic_load (v) >= want;
}

static void
test_actor_smoke (void **state)
{
    (void) state;
    qn_config_t cfg = { .db_statement_timeout_ms = 30000 };
    qn_kernel_t *k = qn_kernel_new (&cfg);
    qn_kernel_main_routes (k, NULL, NULL);
    s_codec_t codec = { 0 };
    qn_actor_def_t def = { .name = "codec_http", .routes = s_codec_routes, .self = &codec };
    assert_non_null (qn_actor_spawn (k, &def));
    assert_non_null (qn_lease_manager_new (k, &cfg));
    //  A deadline: expired, not before it.
    int64_t t0 = qn_now_ms ();
    s_send_park (k, 1, t0 + 60);
    assert_true (s_poll_until (k, &codec.expired, 1, 3000));
    assert_true (qn_now_ms () - t0 >= 60);
    assert_int_equal (atomic_load (&codec.last_id), 1);
    //  A commit wakes a parked pop (the subscription lands asynchronously:
    //  publish until it does).
    s_send_park (k, 2, qn_now_ms () + 60000);
    int64_t until = qn_now_ms () + 3000;
    while (!atomic_load (&codec.retries) && qn_now_ms () < until) {
        qn_publish (k, "committed", QN_MSG_COMMITTED, "\x92\xa0\xa1q", 4);
        qn_kernel_poll (k, 10);
    }
    assert_int_equal (atomic_load (&codec.retries), 1);
    assert_int_equal (atomic_load (&codec.last_id), 2);
    //  A cancelled pop is gone from the gauge.
    s_send_park (k, 3, qn_now_ms () + 60000);
    until = qn_now_ms () + 3000;
    while (qn_counter (k, "parked_pops") != 1 && qn_now_ms () < until)
        qn_kernel_poll (k, 5);
    assert_int_equal (qn_counter (k, "parked_pops"), 1);
    assert_int_equal (qn_send_body (k, "lease_manager", QN_MSG_POP_CANCEL, 0, "\x91\x03", 2), 0);
    until = qn_now_ms () + 3000;
    while (qn_counter (k, "parked_pops") != 0 && qn_now_ms () < until)
        qn_kernel_poll (k, 5);
    assert_int_equal (qn_counter (k, "parked_pops"), 0);
    //  Draining expires what is parked at once, and later parks too.
    s_send_park (k, 4, qn_now_ms () + 60000);
    until = qn_now_ms () + 3000;
    while (qn_counter (k, "parked_pops") != 1 && qn_now_ms () < until)
        qn_kernel_poll (k, 5);
    qn_publish (k, "http.drained", QN_MSG_HTTP_DRAINED, "\x90", 1);
    assert_true (s_poll_until (k, &codec.expired, 2, 3000));
    s_send_park (k, 5, qn_now_ms () + 60000);
    assert_true (s_poll_until (k, &codec.expired, 3, 3000));
    assert_int_equal (atomic_load (&codec.last_id), 5);
    assert_int_equal (qn_kernel_stop_all (k, 2000), 0);
    qn_kernel_destroy (&k);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_one_scout_per_list),
        cmocka_unit_test (test_groups_and_queues_are_separate),
        cmocka_unit_test (test_partitions),
        cmocka_unit_test (test_namespace_pops),
        cmocka_unit_test (test_missed_commit),
        cmocka_unit_test (test_due_and_safety_net),
        cmocka_unit_test (test_cancel_deadline_and_cleanup),
        cmocka_unit_test (test_scout_moves_to_another_list),
        cmocka_unit_test (test_decode_park),
        cmocka_unit_test (test_actor_smoke),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
