/*  test/unit/test_actor_codec_kafka_producer.c - the kafka codec's
    InitProducerId and idempotent Produce translation (actors/kafka/codec.c)
    on the fake kernel: InitProducerId without a transactional id asks
    pg_writer for kafka_init_producer and answers its id with epoch 0 (a
    database failure: 15, retriable); with a transactional id it answers 53
    without the database; an idempotent Produce passes the producer id,
    epoch, base and last sequence of its batch and the transactionIds
    kafka:<pid>:<epoch>:<kpart>:<seq> to kafka_push, and answers the row's
    error (45 here) per partition. A Fetch that finds nothing while a
    "committed" for its topic arrives reads again at once (no lost
    wake-up); otherwise it waits for a commit or max_wait_ms. The test plays kafka_acceptor and
    pg_writer; request frames are built by hand, batches with
    qn_kafka_batch_encode.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "actors/actors.h"
#include "actors/pg/statements.h"
#include "test/support/fake_kernel.h"
#include "wire/kafka_prim.h"
#include "wire/kafka_proto.h"
#include "wire/kafka_records.h"
#include "wire/msg_committed.h"
#include "wire/msg_kafka.h"
#include "wire/msg_pg.h"

typedef qn_fake_world_t s_world_t;

static const char *
s_env (const char *name)
{
    (void) name;
    return NULL;
}

static int
s_setup (void **state)
{
    s_world_t *w = qn_fake_world_start (s_env, qn_kafka_codec_new);
    if (!w)
        return -1;
    qn_fake_clear (w->fake);
    *state = w;
    return 0;
}

static int
s_teardown (void **state)
{
    qn_fake_world_destroy ((s_world_t **) state);
    return 0;
}

//  Request header v1 (client id "t") + body, delivered as conn 7, seq 1.
static void
s_request (qn_fake_t *fake, int16_t key, int16_t version, int32_t corr, const qn_buf_t *body)
{
    qn_buf_t f = QN_BUF_INIT;
    qn_kw_i16 (&f, key);
    qn_kw_i16 (&f, version);
    qn_kw_i32 (&f, corr);
    qn_kw_i16 (&f, 1);
    qn_buf_append (&f, "t", 1);
    if (body)
        qn_buf_append (&f, body->data, body->len);
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_kafka_request_encode (&b, 7, 1);
    assert_int_equal (qn_fake_deliver (fake, "kafka", QN_MSG_KAFKA_REQUEST, b.data, b.size, f.data, f.len), 0);
    msgpack_sbuffer_destroy (&b);
    qn_buf_free (&f);
}

//  The next PG_EXEC to `to`: its index, the statement asserted.
static int
s_next_exec_to (qn_fake_t *fake, const char *to, uint32_t stmt, msgpack_unpacked *body)
{
    int i = qn_fake_next (fake, QN_MSG_PG_EXEC);
    assert_true (i >= 0);
    const qn_fake_msg_t *m = qn_fake_msg (fake, (size_t) i);
    assert_string_equal (m->to, to);
    msgpack_unpacked_init (body);
    assert_int_equal (msgpack_unpack_next (body, m->body.data, m->body.len, NULL), MSGPACK_UNPACK_SUCCESS);
    assert_int_equal (body->data.via.array.ptr [0].via.u64, stmt);
    return i;
}

static int
s_next_exec (qn_fake_t *fake, uint32_t stmt, msgpack_unpacked *body)
{
    return s_next_exec_to (fake, "pg_writer", stmt, body);
}

//  Answers request i with one row of int cells (rows 0: a failure).
static void
s_answer (qn_fake_t *fake, int i, const int64_t *cells, uint32_t ncols, bool ok)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_pg_result_begin (&pk, ok, ok ? "" : "08006", ok ? NULL : "database unavailable", NULL, ok ? 1 : 0);
    if (ok) {
        qn_msg_pg_result_row (&pk, ncols);
        for (uint32_t c = 0; c < ncols; c++)
            if (cells [c] == INT64_MIN)
                qn_msg_pg_result_null (&pk);
            else
                qn_msg_pg_result_int (&pk, cells [c]);
    }
    assert_int_equal (qn_fake_answer (fake, (size_t) i, QN_MSG_PG_RESULT, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
}

//  The response frame to kafka_acceptor, copied into out.
static void
s_response (qn_fake_t *fake, qn_buf_t *out)
{
    int i = qn_fake_next (fake, QN_MSG_KAFKA_RESPONSE);
    assert_true (i >= 0);
    const qn_fake_msg_t *m = qn_fake_msg (fake, (size_t) i);
    assert_string_equal (m->to, "kafka_acceptor");
    assert_int_equal (m->frame_count, 1);
    qn_buf_reset (out);
    qn_buf_append (out, m->frames [0].data, m->frames [0].len);
}

static int32_t
s_i32 (const char *p)
{
    const uint8_t *u = (const uint8_t *) p;
    return (int32_t) ((uint32_t) u [0] << 24 | (uint32_t) u [1] << 16 | (uint32_t) u [2] << 8 | u [3]);
}

static int16_t
s_i16 (const char *p)
{
    const uint8_t *u = (const uint8_t *) p;
    return (int16_t) ((uint16_t) u [0] << 8 | u [1]);
}

static int64_t
s_i64 (const char *p)
{
    return (int64_t) ((uint64_t) (uint32_t) s_i32 (p) << 32 | (uint32_t) s_i32 (p + 4));
}

//  InitProducerId v1 body: transactional id (NULL: null), timeout.
static void
s_init_body (qn_buf_t *b, const char *txn)
{
    if (txn) {
        qn_kw_i16 (b, (int16_t) strlen (txn));
        qn_buf_append (b, txn, strlen (txn));
    }
    else
        qn_kw_i16 (b, -1);
    qn_kw_i32 (b, 60000);
}

static void
test_init_producer_id (void **state)
{
    s_world_t *w = *state;
    qn_buf_t body = QN_BUF_INIT, out = QN_BUF_INIT;
    s_init_body (&body, NULL);
    s_request (w->fake, QN_KAFKA_INIT_PRODUCER_ID, 1, 42, &body);
    msgpack_unpacked exec;
    int i = s_next_exec (w->fake, QN_SQL_KAFKA_INIT_PRODUCER, &exec);
    msgpack_unpacked_destroy (&exec);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_KAFKA_RESPONSE), -1);   //  Not before the database
    s_answer (w->fake, i, (int64_t []) { 1234 }, 1, true);
    s_response (w->fake, &out);
    //  correlation id, throttle, error 0, producer id 1234, epoch 0
    assert_int_equal (out.len, 4 + 4 + 2 + 8 + 2);
    assert_int_equal (s_i32 (out.data), 42);
    assert_int_equal (s_i16 (out.data + 8), 0);
    assert_int_equal (s_i64 (out.data + 10), 1234);
    assert_int_equal (s_i16 (out.data + 18), 0);
    qn_buf_free (&body);
    qn_buf_free (&out);
}

static void
test_init_producer_id_db_down (void **state)
{
    s_world_t *w = *state;
    qn_buf_t body = QN_BUF_INIT, out = QN_BUF_INIT;
    s_init_body (&body, NULL);
    s_request (w->fake, QN_KAFKA_INIT_PRODUCER_ID, 0, 43, &body);
    msgpack_unpacked exec;
    int i = s_next_exec (w->fake, QN_SQL_KAFKA_INIT_PRODUCER, &exec);
    msgpack_unpacked_destroy (&exec);
    s_answer (w->fake, i, NULL, 0, false);
    s_response (w->fake, &out);
    assert_int_equal (s_i16 (out.data + 8), QN_KAFKA_COORDINATOR_NOT_AVAILABLE);
    assert_int_equal (s_i64 (out.data + 10), -1);
    assert_int_equal (s_i16 (out.data + 18), -1);
    qn_buf_free (&body);
    qn_buf_free (&out);
}

static void
test_init_producer_id_transactional (void **state)
{
    s_world_t *w = *state;
    qn_buf_t body = QN_BUF_INIT, out = QN_BUF_INIT;
    s_init_body (&body, "tx");
    s_request (w->fake, QN_KAFKA_INIT_PRODUCER_ID, 1, 44, &body);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    s_response (w->fake, &out);
    assert_int_equal (s_i16 (out.data + 8), QN_KAFKA_TRANSACTIONAL_ID_AUTH_FAILED);
    assert_int_equal (s_i64 (out.data + 10), -1);
    qn_buf_free (&body);
    qn_buf_free (&out);
}

//  Parameter p (0-based) of a PG_EXEC body: element e of an array param.
static const msgpack_object *
s_param (const msgpack_unpacked *exec, uint32_t p, uint32_t e)
{
    const msgpack_object *params = &exec->data.via.array.ptr [2];
    assert_true (p < params->via.array.size);
    const msgpack_object *o = &params->via.array.ptr [p];
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return o;
    assert_true (e < o->via.array.size);
    return &o->via.array.ptr [e];
}

static void
test_idempotent_produce (void **state)
{
    s_world_t *w = *state;
    //  One batch of 2 records, producer 77 epoch 3, base sequence 10, to
    //  partition 2 of topic "t".
    qn_kafka_record_t recs [2] = {
        { .offset_delta = 0, .key = QN_KSTR ("a"), .value = QN_KSTR ("x") },
        { .offset_delta = 1, .key = QN_KSTR ("b"), .value = QN_KSTR ("y") },
    };
    qn_kafka_batch_spec_t spec = { 0, 1764500000000, 0, 77, 3, 10 };
    qn_buf_t batch = QN_BUF_INIT, body = QN_BUF_INIT, out = QN_BUF_INIT;
    qn_kafka_batch_encode (&batch, &spec, recs, 2);
    qn_kw_i16 (&body, -1);                  //  transactional id
    qn_kw_i16 (&body, -1);                  //  acks
    qn_kw_i32 (&body, 5000);
    qn_kw_i32 (&body, 1);                   //  topics
    qn_kw_i16 (&body, 1);
    qn_buf_append (&body, "t", 1);
    qn_kw_i32 (&body, 1);                   //  partitions
    qn_kw_i32 (&body, 2);
    qn_kw_i32 (&body, (int32_t) batch.len);
    qn_buf_append (&body, batch.data, batch.len);
    s_request (w->fake, QN_KAFKA_PRODUCE, 3, 50, &body);
    msgpack_unpacked exec;
    int i = s_next_exec (w->fake, QN_SQL_KAFKA_PUSH, &exec);
    //  $3 transactionIds, $12 producer, $13 epoch, $14 base, $15 last sequence
    const msgpack_object *t0 = s_param (&exec, 3, 0), *t1 = s_param (&exec, 3, 1);
    assert_int_equal (t0->type, MSGPACK_OBJECT_STR);
    assert_int_equal (t0->via.str.size, strlen ("kafka:77:3:2:10"));
    assert_memory_equal (t0->via.str.ptr, "kafka:77:3:2:10", t0->via.str.size);
    assert_memory_equal (t1->via.str.ptr, "kafka:77:3:2:11", t1->via.str.size);
    for (uint32_t e = 0; e < 2; e++) {
        assert_int_equal (s_param (&exec, 11, e)->via.i64, 77);
        assert_int_equal (s_param (&exec, 12, e)->via.i64, 3);
        assert_int_equal (s_param (&exec, 13, e)->via.i64, 10);
        assert_int_equal (s_param (&exec, 14, e)->via.i64, 11);
    }
    msgpack_unpacked_destroy (&exec);
    //  kafka_push's first row: ord 1, err 45 (a gap), queue, dup, kpart, offset null
    s_answer (w->fake, i, (int64_t []) { 1, 45, INT64_MIN, 0, INT64_MIN, INT64_MIN }, 6, true);
    s_response (w->fake, &out);
    //  corr, topics(1), "t", partitions(1), index 2, error 45, base offset -1
    assert_int_equal (s_i32 (out.data), 50);
    const char *p = out.data + 4 + 4 + 2 + 1 + 4;
    assert_int_equal (s_i32 (p), 2);
    assert_int_equal (s_i16 (p + 4), QN_KAFKA_OUT_OF_ORDER_SEQUENCE_NUMBER);
    assert_int_equal (s_i64 (p + 6), -1);
    qn_buf_free (&batch);
    qn_buf_free (&body);
    qn_buf_free (&out);
}

//  A Fetch v4 of partition 0 of topic "t" at offset 0 (max_wait 500 ms,
//  min_bytes 1) finds nothing; a "committed" for "t" that comes while its
//  statement runs makes it read again right after instead of waiting its
//  max_wait_ms (the lost wake-up of docs/kafka.md, Fetch).
static void
s_fetch_request (qn_fake_t *fake, const char *topic)
{
    qn_buf_t body = QN_BUF_INIT;
    qn_kw_i32 (&body, -1);          //  replica id
    qn_kw_i32 (&body, 500);         //  max_wait_ms
    qn_kw_i32 (&body, 1);           //  min_bytes
    qn_kw_i32 (&body, 1048576);     //  max_bytes
    qn_buf_append (&body, "\0", 1);  //  isolation level
    qn_kw_i32 (&body, 1);
    qn_kw_i16 (&body, (int16_t) strlen (topic));
    qn_buf_append (&body, topic, strlen (topic));
    qn_kw_i32 (&body, 1);
    qn_kw_i32 (&body, 0);           //  partition
    qn_buf_t off = QN_BUF_INIT;
    qn_kw_i32 (&off, 0);
    qn_kw_i32 (&off, 0);
    qn_buf_append (&body, off.data, off.len);   //  fetch_offset 0 (INT64)
    qn_kw_i32 (&body, 1048576);     //  partition_max_bytes
    s_request (fake, QN_KAFKA_FETCH, 4, 60, &body);
    qn_buf_free (&off);
    qn_buf_free (&body);
}

static void
s_committed (qn_fake_t *fake, const char *queue)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_committed_encode (&b, &(qn_msg_committed_t) { "", 0, queue, strlen (queue), NULL, 0 });
    assert_true (qn_fake_publish (fake, "committed", QN_MSG_COMMITTED, b.data, b.size) > 0);
    msgpack_sbuffer_destroy (&b);
}

static const int64_t s_empty_fetch [9] = { 0, 0, 0, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN };

static void
test_fetch_commit_while_reading (void **state)
{
    s_world_t *w = *state;
    s_fetch_request (w->fake, "t");
    msgpack_unpacked exec;
    int i = s_next_exec_to (w->fake, "pg_reader", QN_SQL_KAFKA_FETCH, &exec);
    msgpack_unpacked_destroy (&exec);
    s_committed (w->fake, "other");             //  another topic: no effect
    s_committed (w->fake, "t");                 //  while the statement runs
    s_answer (w->fake, i, s_empty_fetch, 9, true);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_KAFKA_RESPONSE), -1);
    qn_fake_advance (w->fake, 1);
    i = s_next_exec_to (w->fake, "pg_reader", QN_SQL_KAFKA_FETCH, &exec);    //  read again now
    msgpack_unpacked_destroy (&exec);
    //  Still nothing: now it waits, until its max_wait_ms
    s_answer (w->fake, i, s_empty_fetch, 9, true);
    qn_fake_advance (w->fake, 100);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_KAFKA_RESPONSE), -1);
    qn_fake_advance (w->fake, 450);
    i = s_next_exec_to (w->fake, "pg_reader", QN_SQL_KAFKA_FETCH, &exec);    //  the last read at the deadline
    msgpack_unpacked_destroy (&exec);
    s_answer (w->fake, i, s_empty_fetch, 9, true);
    qn_buf_t out = QN_BUF_INIT;
    s_response (w->fake, &out);
    assert_int_equal (s_i32 (out.data), 60);
    qn_buf_free (&out);
}

static void
test_fetch_commit_elsewhere_waits (void **state)
{
    s_world_t *w = *state;
    s_fetch_request (w->fake, "t");
    msgpack_unpacked exec;
    int i = s_next_exec_to (w->fake, "pg_reader", QN_SQL_KAFKA_FETCH, &exec);
    msgpack_unpacked_destroy (&exec);
    s_committed (w->fake, "other");
    s_answer (w->fake, i, s_empty_fetch, 9, true);
    qn_fake_advance (w->fake, 100);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);   //  parked, not re-read
    s_committed (w->fake, "t");                 //  parked: woken at once
    i = s_next_exec_to (w->fake, "pg_reader", QN_SQL_KAFKA_FETCH, &exec);
    msgpack_unpacked_destroy (&exec);
    s_answer (w->fake, i, s_empty_fetch, 9, true);
    qn_fake_advance (w->fake, 500);
    i = s_next_exec_to (w->fake, "pg_reader", QN_SQL_KAFKA_FETCH, &exec);
    msgpack_unpacked_destroy (&exec);
    s_answer (w->fake, i, s_empty_fetch, 9, true);
    qn_buf_t out = QN_BUF_INIT;
    s_response (w->fake, &out);
    qn_buf_free (&out);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_init_producer_id, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_init_producer_id_db_down, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_init_producer_id_transactional, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_idempotent_produce, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_fetch_commit_while_reading, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_fetch_commit_elsewhere_waits, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
