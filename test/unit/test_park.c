/*  test/unit/test_park.c - the park table of parked long-polls
    The table (actors/park/park_table.c) is pure, so the first tests drive
    it directly: ordering, one scout per list, chaining, pending kicks,
    missed commits, partitions and namespaces, due instants, cancellation
    and clean-up. The others run the library (actors/park/park.c) inside
    a small owner actor on the fake kernel (test/support/fake_kernel.h):
    the "committed" event, timers on a manual clock, the callbacks.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "actors/park/park.h"
#include "test/support/fake_kernel.h"

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
test_due_ms (void **state)
{
    (void) state;
    //  1.5 s from wall "now" (1,000,000 us) is 1.5 s from monotonic 100 ms,
    //  plus the slack; an instant already past still waits the slack; none
    //  stays none.
    assert_int_equal (qn_park_due_ms (1000000 + 1500000, 100, 1000000),
                      100 + 1500 + QN_PARK_DUE_SLACK_MS);
    assert_int_equal (qn_park_due_ms (1000000 + 1500001, 100, 1000000),
                      100 + 1501 + QN_PARK_DUE_SLACK_MS);
    assert_int_equal (qn_park_due_ms (5, 100, 1000000), 100 + QN_PARK_DUE_SLACK_MS);
    assert_int_equal (qn_park_due_ms (0, 100, 1000000), 0);
}

// ------------------------------------------------------------------ the library, on the fake kernel
//  A minimal owner: an actor that holds a park, routes "committed" to it
//  and records the callbacks. In `chain` mode a woken request reports
//  "found" at once (as a pop that got a message would).
typedef struct {
    qn_park_t *park;
    uint64_t woken [32];
    size_t woken_n;
    uint64_t expired [32];
    size_t expired_n;
    bool chain;
} s_owner_t;

static void
s_wake (void *arg, uint64_t id)
{
    s_owner_t *o = arg;
    assert_true (o->woken_n < 32);
    o->woken [o->woken_n++] = id;
    if (o->chain)
        qn_park_settled (o->park, id, true);
}

static void
s_expire (void *arg, uint64_t id)
{
    s_owner_t *o = arg;
    assert_true (o->expired_n < 32);
    o->expired [o->expired_n++] = id;
}

static int
s_owner_start (void *self_, const qn_env_t *env)
{
    (void) env;
    s_owner_t *o = self_;
    return qn_park_start (o->park);
}

static int
s_owner_committed (void *self_, const qn_env_t *env)
{
    s_owner_t *o = self_;
    return qn_park_on_committed (o->park, env);
}

static const qn_route_t s_owner_routes [] = {
    { QN_MSG_START, s_owner_start },
    { QN_MSG_COMMITTED, s_owner_committed },
    { 0, NULL }
};

static void
s_owner_destroy (void **self_p)
{
    s_owner_t *o = *self_p;
    qn_park_destroy (&o->park);
    *self_p = NULL;
}

//  Spawns the owner on a new fake.
static qn_fake_t *
s_fake_owner (s_owner_t *o)
{
    memset (o, 0, sizeof *o);
    qn_fake_t *fake = qn_fake_new (NULL);
    qn_park_def_t def = {
        .counter_prefix = "pop", .gauge = "parked_pops", .wake = s_wake, .expire = s_expire,
        .arg = o, .attempt_ms = SCOUT_TTL
    };
    o->park = qn_park_new (qn_fake_kernel (fake), &def);
    qn_actor_def_t actor = {
        .name = "owner", .routes = s_owner_routes, .self = o, .destroy = s_owner_destroy
    };
    assert_non_null (qn_actor_spawn (qn_fake_kernel (fake), &actor));
    return fake;
}

//  qn_park_wait for a queue pop of tenant "" that started now.
static qn_park_rc_t
s_wait (s_owner_t *o, uint64_t id, const char *queue, const char *partition,
        int64_t timeout_ms, int64_t due_in_ms)
{
    qn_park_wait_t w = {
        .id = id, .tenant = "", .queue = queue, .partition = partition, .group = "g",
        .deadline_ms = qn_now_ms () + timeout_ms,
        .next_due_us = due_in_ms ? qn_wall_us () + due_in_ms * 1000 : 0,
        .started_us = qn_now_us ()
    };
    return qn_park_wait (o->park, &w);
}

static int
s_committed (qn_fake_t *fake, const char *queue)
{
    char body [64];
    size_t n = strlen (queue);
    assert_true (n < 32);
    body [0] = (char) 0x92;         //  [tenant "", queue]
    body [1] = (char) 0xa0;
    body [2] = (char) (0xa0 | n);
    memcpy (body + 3, queue, n);
    return qn_fake_publish (fake, "committed", QN_MSG_COMMITTED, body, 3 + n);
}

static void
test_park_wakes_on_committed (void **state)
{
    (void) state;
    s_owner_t o;
    qn_fake_t *fake = s_fake_owner (&o);
    qn_kernel_t *k = qn_fake_kernel (fake);
    //  The owner's START subscribed it to "committed".
    assert_true (qn_fake_subscribed (fake, "owner", "committed"));
    qn_fake_advance (fake, 1);      //  Attempts start strictly after any commit
    assert_int_equal (s_wait (&o, 1, "q", NULL, 30000, 0), QN_PARK_PARKED);
    assert_int_equal (s_wait (&o, 2, "q", NULL, 30000, 0), QN_PARK_PARKED);
    assert_int_equal (s_wait (&o, 3, "q", NULL, 30000, 0), QN_PARK_PARKED);
    assert_int_equal (s_wait (&o, 1, "q", NULL, 30000, 0), QN_PARK_ALREADY);
    assert_int_equal (qn_counter (k, "parked_pops"), 3);
    assert_int_equal (o.woken_n, 0);
    //  Another queue's commit wakes nobody; this queue's wakes the oldest.
    assert_int_equal (s_committed (fake, "other"), 1);
    assert_int_equal (o.woken_n, 0);
    assert_int_equal (s_committed (fake, "q"), 1);
    assert_int_equal (o.woken_n, 1);
    assert_int_equal (o.woken [0], 1);
    assert_int_equal (qn_counter (k, "parked_pops"), 2);
    assert_int_equal (qn_counter (k, "pop_wakeups"), 1);
    //  While the scout is out, more commits wake nobody else.
    assert_int_equal (s_committed (fake, "q"), 1);
    assert_int_equal (o.woken_n, 1);
    //  It found a message: the next goes out at once.
    qn_park_settled (o.park, 1, true);
    assert_int_equal (o.woken_n, 2);
    assert_int_equal (o.woken [1], 2);
    //  That one comes back empty, having started after the last commit:
    //  it parks again and nobody else is woken.
    qn_fake_advance (fake, 1);
    assert_int_equal (s_wait (&o, 2, "q", NULL, 30000, 0), QN_PARK_PARKED);
    assert_int_equal (o.woken_n, 2);
    assert_int_equal (qn_counter (k, "parked_pops"), 2);
    //  A malformed event is refused.
    assert_int_equal (qn_fake_deliver (fake, "owner", QN_MSG_COMMITTED, "\x91\xa1q", 3, NULL, 0),
                      QN_EPROTO);
    assert_int_equal (o.expired_n, 0);
    qn_fake_destroy (&fake);
}

static void
test_park_wake_chain_and_partitions (void **state)
{
    (void) state;
    s_owner_t o;
    qn_fake_t *fake = s_fake_owner (&o);
    o.chain = true;
    qn_fake_advance (fake, 1);
    for (uint64_t id = 1; id <= 3; id++)
        assert_int_equal (s_wait (&o, id, "q", "p1", 30000, 0), QN_PARK_PARKED);
    assert_int_equal (s_wait (&o, 4, "q", "p2", 30000, 0), QN_PARK_PARKED);
    //  A commit naming p1, [tenant, queue, partition]: every p1 pop finds
    //  something in turn (the owner settles each as found, from inside
    //  its callback); the p2 pop sleeps on.
    assert_int_equal (qn_fake_publish (fake, "committed", QN_MSG_COMMITTED,
                                       "\x93\xa0\xa1q\xa2p1", 7), 1);
    assert_int_equal (o.woken_n, 3);
    assert_int_equal (o.woken [0], 1);
    assert_int_equal (o.woken [1], 2);
    assert_int_equal (o.woken [2], 3);
    assert_int_equal (qn_park_count (o.park), 1);
    assert_int_equal (qn_counter (qn_fake_kernel (fake), "parked_pops"), 1);
    qn_fake_destroy (&fake);
}

static void
test_park_deadline (void **state)
{
    (void) state;
    s_owner_t o;
    qn_fake_t *fake = s_fake_owner (&o);
    assert_int_equal (qn_fake_timers (fake), 1);    //  Commit-stamp pruning
    assert_int_equal (s_wait (&o, 1, "q", NULL, 500, 0), QN_PARK_PARKED);
    //  A deadline timer and the list's timer (safety net).
    assert_int_equal (qn_fake_timers (fake), 3);
    qn_fake_advance (fake, 499);
    assert_int_equal (o.expired_n, 0);
    qn_fake_advance (fake, 1);
    assert_int_equal (o.expired_n, 1);
    assert_int_equal (o.expired [0], 1);
    assert_int_equal (o.woken_n, 0);
    assert_int_equal (qn_park_count (o.park), 0);
    assert_int_equal (qn_counter (qn_fake_kernel (fake), "pop_expired"), 1);
    //  The emptied list's timer is gone with it.
    assert_int_equal (qn_fake_timers (fake), 1);
    //  A deadline already passed is not parked, and no callback comes.
    assert_int_equal (s_wait (&o, 2, "q", NULL, 0, 0), QN_PARK_EXPIRE_NOW);
    assert_int_equal (o.expired_n, 1);
    assert_int_equal (qn_fake_timers (fake), 1);
    qn_fake_destroy (&fake);
}

static void
test_park_next_due_and_safety_net (void **state)
{
    (void) state;
    s_owner_t o;
    qn_fake_t *fake = s_fake_owner (&o);
    qn_fake_advance (fake, 1);
    //  Two pops on a delayed queue: the list's timer is set for the
    //  earliest due instant, and wakes one of them, not both.
    assert_int_equal (s_wait (&o, 1, "q", NULL, 60000, 400), QN_PARK_PARKED);
    assert_int_equal (s_wait (&o, 2, "q", NULL, 60000, 200), QN_PARK_PARKED);
    qn_fake_advance (fake, 200 + QN_PARK_DUE_SLACK_MS - 1);
    assert_int_equal (o.woken_n, 0);
    qn_fake_advance (fake, 1);
    assert_int_equal (o.woken_n, 1);
    assert_int_equal (o.woken [0], 1);
    //  The scout comes back empty (nothing due yet after all).
    assert_int_equal (s_wait (&o, 1, "q", NULL, 60000, 0), QN_PARK_PARKED);
    //  Without events, the safety net rechecks the list, one pop at a time.
    qn_fake_advance (fake, QN_PARK_SAFETY_MS - 205);
    assert_int_equal (o.woken_n, 1);
    qn_fake_advance (fake, 5);
    assert_int_equal (o.woken_n, 2);
    assert_int_equal (o.woken [1], 1);
    qn_fake_destroy (&fake);
}

static void
test_park_missed_commit (void **state)
{
    (void) state;
    s_owner_t o;
    qn_fake_t *fake = s_fake_owner (&o);
    //  An attempt starts; a commit lands while it runs; it comes back
    //  empty and parks: it may have missed the commit, so it is woken
    //  before qn_park_wait returns.
    qn_fake_advance (fake, 1);
    qn_park_wait_t w = {
        .id = 9, .tenant = "", .queue = "q", .group = "g",
        .deadline_ms = qn_now_ms () + 30000, .started_us = qn_now_us ()
    };
    qn_fake_advance (fake, 1);
    assert_int_equal (s_committed (fake, "q"), 1);
    qn_fake_advance (fake, 1);
    assert_int_equal (qn_park_wait (o.park, &w), QN_PARK_PARKED);
    assert_int_equal (o.woken_n, 1);
    assert_int_equal (o.woken [0], 9);
    assert_int_equal (qn_park_count (o.park), 0);
    assert_int_equal (qn_counter (qn_fake_kernel (fake), "pop_park_races"), 1);
    qn_fake_destroy (&fake);
}

static void
test_park_cancel_and_drain (void **state)
{
    (void) state;
    s_owner_t o;
    qn_fake_t *fake = s_fake_owner (&o);
    qn_kernel_t *k = qn_fake_kernel (fake);
    qn_fake_advance (fake, 1);
    assert_int_equal (s_wait (&o, 1, "q", NULL, 30000, 0), QN_PARK_PARKED);
    assert_int_equal (s_wait (&o, 2, "q", NULL, 30000, 0), QN_PARK_PARKED);
    assert_int_equal (s_wait (&o, 3, "other", NULL, 30000, 0), QN_PARK_PARKED);
    //  The client of 2 hangs up: its slot is free at once, no callback.
    assert_true (qn_park_cancel (o.park, 2));
    assert_false (qn_park_cancel (o.park, 2));
    assert_int_equal (qn_counter (k, "parked_pops"), 2);
    assert_int_equal (qn_counter (k, "pop_cancelled"), 1);
    //  Drain: everyone parked is expired at once, timers and all.
    qn_park_drain (o.park);
    assert_int_equal (o.expired_n, 2);
    assert_true ((o.expired [0] == 1 && o.expired [1] == 3) || (o.expired [0] == 3 && o.expired [1] == 1));
    assert_int_equal (qn_counter (k, "parked_pops"), 0);
    assert_int_equal (qn_fake_timers (fake), 1);
    //  ...and every later park too, without a callback.
    assert_int_equal (s_wait (&o, 4, "q", NULL, 30000, 0), QN_PARK_EXPIRE_NOW);
    assert_int_equal (o.expired_n, 2);
    assert_int_equal (s_committed (fake, "q"), 1);
    assert_int_equal (o.woken_n, 0);
    qn_fake_destroy (&fake);
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
        cmocka_unit_test (test_due_ms),
        cmocka_unit_test (test_park_wakes_on_committed),
        cmocka_unit_test (test_park_wake_chain_and_partitions),
        cmocka_unit_test (test_park_deadline),
        cmocka_unit_test (test_park_next_due_and_safety_net),
        cmocka_unit_test (test_park_missed_commit),
        cmocka_unit_test (test_park_cancel_and_drain),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
