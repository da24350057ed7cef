/*  test/unit/test_push_lanes.c - pg_writer's push lanes (actors/pg/
    batch.c): a second push lane starts only on partitions the push in
    flight does not hold, a batch stops before the first request that
    shares a partition with it (requests keep their order), and a batch
    records its partition keys sorted and distinct.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "actors/pg/writer_int.h"

#include <stdlib.h>
#include <string.h>

//  A queued push request of n items [queue, partition names[i]].
static qn_pgw_push_t *
s_request (const char *queue, const char *const *parts, uint32_t n)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, n);
    for (uint32_t i = 0; i < n; i++) {
        msgpack_pack_array (&pk, 2);
        msgpack_pack_str_with_body (&pk, queue, strlen (queue));
        msgpack_pack_str_with_body (&pk, parts [i], strlen (parts [i]));
    }
    qn_pgw_push_t *r = calloc (1, sizeof *r);
    r->body = sb.data;                 //  Owned by r (qn_pgw_push_free)
    r->body_len = sb.size;
    msgpack_unpacked_init (&r->msg);
    assert_int_equal (msgpack_unpack_next (&r->msg, r->body, r->body_len, NULL), MSGPACK_UNPACK_SUCCESS);
    r->items = r->msg.data.via.array.ptr;
    r->count = n;
    r->tenant = "";
    return r;
}

static void
s_queue (qn_pgw_t *self, qn_pgw_push_t *r)
{
    if (self->push_tail)
        self->push_tail->next = r;
    else
        self->push_head = r;
    self->push_tail = r;
}

static uint32_t
s_reqs (const qn_pgw_job_t *j)
{
    uint32_t n = 0;
    for (const qn_pgw_push_t *r = j->reqs; r; r = r->next)
        n++;
    return n;
}

static void
test_batch_records_sorted_distinct_keys (void **state)
{
    (void) state;
    qn_config_t config = { .push_max_batch = 10000 };
    qn_pgw_t self = { .config = &config };
    static const char *const a [] = { "p3", "p1", "p3", "p2" };
    static const char *const b [] = { "p2", "p4" };
    s_queue (&self, s_request ("q", a, 4));
    s_queue (&self, s_request ("q", b, 2));
    qn_pgw_job_t *j = qn_pgw_build_push_batch (&self, NULL);
    assert_int_equal (s_reqs (j), 2);
    assert_int_equal (j->item_count, 6);
    assert_int_equal (j->part_count, 4);
    for (uint32_t i = 1; i < j->part_count; i++)
        assert_true (j->part_keys [i - 1] < j->part_keys [i]);
    assert_null (self.push_head);
    qn_pgw_job_free (j);
}

static void
test_conflict_with_the_batch_in_flight (void **state)
{
    (void) state;
    qn_config_t config = { .push_max_batch = 10000 };
    qn_pgw_t self = { .config = &config };
    static const char *const a [] = { "p1", "p2" };
    static const char *const other [] = { "p3", "p4" };
    static const char *const shares [] = { "p5", "p2" };
    s_queue (&self, s_request ("q", a, 2));
    qn_pgw_job_t *busy = qn_pgw_build_push_batch (&self, NULL);

    qn_pgw_push_t *r1 = s_request ("q", other, 2);
    qn_pgw_push_t *r2 = s_request ("q", shares, 2);
    qn_pgw_push_t *r3 = s_request ("other", a, 2);     //  Same names, another queue
    assert_false (qn_pgw_push_conflicts (r1, busy));
    assert_true (qn_pgw_push_conflicts (r2, busy));
    assert_false (qn_pgw_push_conflicts (r3, busy));
    assert_false (qn_pgw_push_conflicts (r2, NULL));

    //  r1 may run beside busy; the batch stops before r2 and r3 stays
    //  behind r2 (no request overtakes one queued before it).
    s_queue (&self, r1);
    s_queue (&self, r2);
    s_queue (&self, r3);
    qn_pgw_job_t *j = qn_pgw_build_push_batch (&self, busy);
    assert_int_equal (s_reqs (j), 1);
    assert_ptr_equal (j->reqs, r1);
    assert_ptr_equal (self.push_head, r2);
    assert_ptr_equal (self.push_head->next, r3);
    qn_pgw_job_free (j);

    //  Once busy is done, r2 and r3 merge into one batch.
    qn_pgw_job_free (busy);
    j = qn_pgw_build_push_batch (&self, NULL);
    assert_int_equal (s_reqs (j), 2);
    assert_ptr_equal (j->reqs, r2);
    assert_null (self.push_head);
    qn_pgw_job_free (j);
}

static void
test_a_conflicting_head_still_makes_a_batch (void **state)
{
    (void) state;
    //  The pump does not start a lane for a conflicting head; if asked
    //  anyway, the batch holds at least that request (never empty).
    qn_config_t config = { .push_max_batch = 10000 };
    qn_pgw_t self = { .config = &config };
    static const char *const a [] = { "p1" };
    s_queue (&self, s_request ("q", a, 1));
    qn_pgw_job_t *busy = qn_pgw_build_push_batch (&self, NULL);
    s_queue (&self, s_request ("q", a, 1));
    qn_pgw_job_t *j = qn_pgw_build_push_batch (&self, busy);
    assert_int_equal (s_reqs (j), 1);
    assert_null (self.push_head);
    qn_pgw_job_free (j);
    qn_pgw_job_free (busy);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_batch_records_sorted_distinct_keys),
        cmocka_unit_test (test_conflict_with_the_batch_in_flight),
        cmocka_unit_test (test_a_conflicting_head_still_makes_a_batch),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
