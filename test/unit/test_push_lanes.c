/*  test/unit/test_push_lanes.c - pg_writer's push lanes (actors/pg/
    batch.c): a second push lane starts only on partitions the push in
    flight does not hold, a batch stops before the first request that
    shares a partition with it (requests keep their order), and a batch
    records its partition keys sorted and distinct; a batch holding SQS
    items calls queen.push_sqs.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "actors/pg/writer_int.h"

#include <stdlib.h>
#include <string.h>

//  A queued push request of n items [queue, partition names[i]], the
//  first one an SQS item when sqs: its body as a codec packs it, decoded
//  as pg_writer decodes it.
static qn_pgw_push_t *
s_request_of (const char *queue, const char *const *parts, uint32_t n, bool sqs)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    qn_msg_push_begin (&pk, "", 0, false, n);
    for (uint32_t i = 0; i < n; i++)
        qn_msg_push_item (&pk, &(qn_msg_push_item_t) {
            .queue = queue, .queue_len = strlen (queue),
            .partition = parts [i], .partition_len = strlen (parts [i]),
            .payload = "{}", .payload_len = 2,
            .sqs = sqs && i == 0 ? "{}" : NULL, .sqs_len = 2
        });
    qn_pgw_push_t *r = calloc (1, sizeof *r);
    r->body = sb.data;                 //  Owned by r (qn_pgw_push_free)
    r->body_len = sb.size;
    msgpack_unpacked_init (&r->msg);
    assert_int_equal (qn_pgw_push_decode (r), 0);
    assert_int_equal (r->count, n);
    assert_int_equal (r->sqs, sqs);
    return r;
}

static qn_pgw_push_t *
s_request (const char *queue, const char *const *parts, uint32_t n)
{
    return s_request_of (queue, parts, n, false);
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

//  A batch is one queen.push call (push_at, ten parameters); one that
//  holds an SQS item, merged with ordinary pushes, is one queen.push_sqs
//  call with the SQS metadata as an eleventh parameter.
static void
test_sqs_items_choose_push_sqs (void **state)
{
    (void) state;
    qn_config_t config = { .push_max_batch = 10000 };
    qn_pgw_t self = { .config = &config };
    static const char *const a [] = { "p1", "p2" };
    s_queue (&self, s_request ("q", a, 2));
    qn_pgw_job_t *j = qn_pgw_build_push_batch (&self, NULL);
    assert_int_equal (j->stmt_id, QN_SQL_PUSH_AT);
    assert_int_equal (j->nparams, 10);
    assert_true (j->nulls [9]);         //  No item is delayed
    qn_pgw_job_free (j);
    s_queue (&self, s_request ("q", a, 2));
    s_queue (&self, s_request_of ("s", a, 2, true));
    j = qn_pgw_build_push_batch (&self, NULL);
    assert_int_equal (s_reqs (j), 2);
    assert_int_equal (j->item_count, 4);
    assert_int_equal (j->stmt_id, QN_SQL_PUSH_SQS);
    assert_int_equal (j->nparams, 11);
    assert_int_equal (qn_sql_stmt (j->stmt_id)->nparams, 11);
    //  The metadata array: four elements, the third one set.
    assert_false (j->nulls [10]);
    assert_int_equal (qn_pgw_array_len (j->params.data + j->offsets [10], (size_t) j->lengths [10]), 4);
    qn_pgw_job_free (j);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_batch_records_sorted_distinct_keys),
        cmocka_unit_test (test_conflict_with_the_batch_in_flight),
        cmocka_unit_test (test_a_conflicting_head_still_makes_a_batch),
        cmocka_unit_test (test_sqs_items_choose_push_sqs),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
