/*  test/unit/test_actor_codec_http.c - codec_http's translation of pop,
    ack and push
    The real codec actor (actors/http/codec.c + pop.c, ack.c, push.c) on
    the fake kernel: an HTTP_REQUEST in -> the request it sends out
    (PG_EXEC, or the protocol-neutral QN_MSG_PUSH); its answer in -> the
    HTTP_RESPONSE it sends to the acceptor.
    Long-polls: an empty wait=true
    pop parks in the codec's own park table and is run again by a
    "committed" event (in the same handler: no message in between), its
    next-due instant or answered 204 at its deadline, when its client
    hangs up (no answer, slot freed) or when the broker drains.
    Bodies between actors are packed here by hand (the test plays
    acceptor and pg_writer).
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/actors.h"
#include "actors/pg/statements.h"
#include "test/support/fake_kernel.h"
#include "wire/ids.h"
#include "wire/mp.h"
#include "wire/msg_ephemeral.h"
#include "wire/msg_push.h"

typedef qn_fake_world_t s_world_t;

static const char *
s_no_env (const char *name)
{
    (void) name;
    return NULL;
}

static size_t s_start_pending;     //  Requests START left open (none today)

static int
s_setup (void **state)
{
    s_world_t *w = qn_fake_world_start (s_no_env, qn_codec_http_new);
    if (!w)
        return -1;
    qn_fake_clear (w->fake);        //  What START sent
    s_start_pending = qn_fake_pending (w->fake);
    *state = w;
    return 0;
}

static int
s_teardown (void **state)
{
    qn_fake_world_destroy ((s_world_t **) state);
    return 0;
}

static void
s_pack_str (msgpack_packer *pk, const char *s)
{
    msgpack_pack_str (pk, strlen (s));
    msgpack_pack_str_body (pk, s, strlen (s));
}

//  The acceptor hands over a request: [conn_id, seq, method, target,
//  keep_alive, headers] + the body as a frame.
static void
s_http_body (qn_fake_t *fake, uint64_t conn, const char *method, const char *target,
             const char *body)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 6);
    msgpack_pack_uint64 (&pk, conn);
    msgpack_pack_uint32 (&pk, 1);
    s_pack_str (&pk, method);
    s_pack_str (&pk, target);
    msgpack_pack_true (&pk);
    msgpack_pack_array (&pk, 0);
    assert_int_equal (qn_fake_deliver (fake, "codec_http", QN_MSG_HTTP_REQUEST, b.data, b.size,
                                       body, strlen (body)), 0);
    msgpack_sbuffer_destroy (&b);
}

static void
s_http (qn_fake_t *fake, uint64_t conn, const char *method, const char *target)
{
    s_http_body (fake, conn, method, target, "");
}

static void
s_closed (qn_fake_t *fake, uint64_t conn)
{
    char body [16];
    body [0] = (char) 0x91;
    body [1] = (char) 0xcf;        //  uint64, big-endian
    for (int i = 0; i < 8; i++)
        body [2 + i] = (char) (conn >> (56 - 8 * i));
    assert_int_equal (qn_fake_deliver (fake, "codec_http", QN_MSG_HTTP_CLOSED, body, 10, NULL, 0), 0);
}

static int
s_committed (qn_fake_t *fake, const char *queue)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "");
    s_pack_str (&pk, queue);
    int n = qn_fake_publish (fake, "committed", QN_MSG_COMMITTED, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
    return n;
}

//  The next PG_EXEC the codec asked pg_writer for: its index; `params`
//  holds the decoded body [stmt_id, sql|nil, [params...]].
static int
s_next_exec (qn_fake_t *fake, msgpack_unpacked *body)
{
    int i = qn_fake_next (fake, QN_MSG_PG_EXEC);
    assert_true (i >= 0);
    const qn_fake_msg_t *m = qn_fake_msg (fake, (size_t) i);
    assert_int_equal (m->kind, QN_FAKE_REQUEST);
    assert_string_equal (m->to, "pg_writer");
    msgpack_unpacked_init (body);
    assert_int_equal (msgpack_unpack_next (body, m->body.data, m->body.len, NULL),
                      MSGPACK_UNPACK_SUCCESS);
    assert_int_equal (body->data.type, MSGPACK_OBJECT_ARRAY);
    assert_int_equal (body->data.via.array.size, 3);
    return i;
}

static void
s_assert_str (const msgpack_object *o, const char *want)
{
    if (!want) {
        assert_int_equal (o->type, MSGPACK_OBJECT_NIL);
        return;
    }
    assert_int_equal (o->type, MSGPACK_OBJECT_STR);
    assert_int_equal (o->via.str.size, strlen (want));
    assert_memory_equal (o->via.str.ptr, want, strlen (want));
}

//  pg_writer's answer [ok, sqlstate, message, detail, rows] with the pop
//  columns: one message (seq > 0), or an empty outcome (seq 0: none; with
//  next_due_us when non-zero), or no row at all (rows = 0).
static void
s_answer_pop (qn_fake_t *fake, int i, int rows, int64_t seq, const char *payload,
              int64_t next_due_us)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 5);
    msgpack_pack_true (&pk);
    s_pack_str (&pk, "00000");
    s_pack_str (&pk, "");
    s_pack_str (&pk, "");
    msgpack_pack_array (&pk, (size_t) rows);
    for (int r = 0; r < rows; r++) {
        msgpack_pack_array (&pk, 12);
        s_pack_str (&pk, "orders");                 //  queue
        msgpack_pack_int64 (&pk, 7);                //  partition id
        s_pack_str (&pk, "p1");                     //  partition
        seq ? msgpack_pack_int64 (&pk, seq) : msgpack_pack_nil (&pk);
        msgpack_pack_int64 (&pk, 1764500000000000); //  created
        msgpack_pack_nil (&pk);                     //  transaction id
        msgpack_pack_nil (&pk);                     //  trace id
        msgpack_pack_nil (&pk);                     //  producer
        if (payload) {
            msgpack_pack_bin (&pk, strlen (payload));
            msgpack_pack_bin_body (&pk, payload, strlen (payload));
        }
        else
            msgpack_pack_nil (&pk);
        msgpack_pack_false (&pk);                   //  encrypted
        msgpack_pack_nil (&pk);                     //  lease expires
        next_due_us ? msgpack_pack_int64 (&pk, next_due_us) : msgpack_pack_nil (&pk);
    }
    assert_int_equal (qn_fake_answer (fake, (size_t) i, QN_MSG_PG_RESULT, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
}

//  The next response to the acceptor: its status; the JSON body into
//  body (may be NULL); whether it closes the connection into *close.
static int
s_response (qn_fake_t *fake, uint64_t conn, qn_buf_t *body, bool *close)
{
    int i = qn_fake_next (fake, QN_MSG_HTTP_RESPONSE);
    assert_true (i >= 0);
    const qn_fake_msg_t *m = qn_fake_msg (fake, (size_t) i);
    assert_string_equal (m->to, "acceptor");
    uint64_t got_conn, seq;
    bool closing;
    assert_int_equal (qn_mp_scan (m->body.data, m->body.len, "uub", &got_conn, &seq, &closing), 0);
    assert_int_equal (got_conn, conn);
    assert_int_equal (seq, 1);
    if (close)
        *close = closing;
    assert_int_equal (m->frame_count, 1);
    const char *http = m->frames [0].data;
    assert_memory_equal (http, "HTTP/1.1 ", 9);
    const char *end = strstr (http, "\r\n\r\n");
    assert_non_null (end);
    if (body) {
        qn_buf_reset (body);
        qn_buf_append (body, end + 4, m->frames [0].len - (size_t) (end + 4 - http));
    }
    return atoi (http + 9);
}

static int
s_no_response (qn_fake_t *fake)
{
    for (size_t i = 0; i < qn_fake_count (fake); i++)
        if (qn_fake_msg (fake, i)->type == QN_MSG_HTTP_RESPONSE && !qn_fake_msg (fake, i)->seen)
            return 0;
    return 1;
}

static void
test_pop_request_and_answer (void **state)
{
    s_world_t *w = *state;
    s_http (w->fake, 11, "GET", "/api/v1/pop/queue/orders?batch=5&consumerGroup=g1&partitions=3");
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, &body);
    const msgpack_object *a = body.data.via.array.ptr;
    assert_int_equal (a [0].via.u64, QN_SQL_POP);
    assert_int_equal (a [1].type, MSGPACK_OBJECT_NIL);
    //  [tenant, queue, partition, group, sub_mode, sub_from, batch,
    //  partitions, lease, auto_ack]
    assert_int_equal (a [2].type, MSGPACK_OBJECT_ARRAY);
    assert_int_equal (a [2].via.array.size, 10);
    const msgpack_object *p = a [2].via.array.ptr;
    s_assert_str (&p [0], "");
    s_assert_str (&p [1], "orders");
    s_assert_str (&p [2], NULL);
    s_assert_str (&p [3], "g1");
    assert_int_equal (p [6].via.i64, 5);
    assert_int_equal (p [7].via.i64, 3);
    assert_int_equal (p [8].type, MSGPACK_OBJECT_STR);
    assert_int_equal (p [8].via.str.size, 36);     //  A fresh lease id
    char lease [37];
    memcpy (lease, p [8].via.str.ptr, 36);
    lease [36] = 0;
    assert_false (p [9].via.boolean);
    msgpack_unpacked_destroy (&body);
    assert_true (s_no_response (w->fake));
    //  The database's rows become the §3.7 body.
    s_answer_pop (w->fake, i, 1, 42, "{\"n\":1}", 0);
    qn_buf_t json = QN_BUF_INIT;
    bool close;
    assert_int_equal (s_response (w->fake, 11, &json, &close), 200);
    assert_false (close);
    assert_non_null (strstr (json.data, "\"queue\":\"orders\""));
    assert_non_null (strstr (json.data, "\"consumerGroup\":\"g1\""));
    assert_non_null (strstr (json.data, "\"data\":{\"n\":1}"));
    char want [64];
    snprintf (want, sizeof want, "\"leaseId\":\"%s\"", lease);
    assert_non_null (strstr (json.data, want));
    assert_int_equal (qn_counter (qn_fake_kernel (w->fake), "messages_popped"), 1);
    qn_buf_free (&json);
}

static void
test_pop_refused_and_empty (void **state)
{
    s_world_t *w = *state;
    //  A bad parameter is answered before any database call.
    s_http (w->fake, 12, "GET", "/api/v1/pop/queue/orders?batch=20000");
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    qn_buf_t json = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, 12, &json, NULL), 400);
    assert_non_null (strstr (json.data, "batch"));
    //  Without wait, an empty outcome is a 204 at once.
    s_http (w->fake, 13, "GET", "/api/v1/pop/queue/orders");
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, &body);
    msgpack_unpacked_destroy (&body);
    s_answer_pop (w->fake, i, 0, 0, NULL, 0);
    assert_int_equal (s_response (w->fake, 13, NULL, NULL), 204);
    assert_int_equal (qn_counter (qn_fake_kernel (w->fake), "parked_pops"), 0);
    qn_buf_free (&json);
}

//  Starts a wait=true pop on `queue` for conn and answers its first
//  attempt empty: it is parked afterwards.
static void
s_park (s_world_t *w, uint64_t conn, const char *queue, int64_t timeout_ms, int64_t next_due_us)
{
    char target [128];
    snprintf (target, sizeof target, "/api/v1/pop/queue/%s?wait=true&timeout=%lld", queue,
              (long long) timeout_ms);
    s_http (w->fake, conn, "GET", target);
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, &body);
    msgpack_unpacked_destroy (&body);
    //  The database's empty outcome: one row without a message.
    s_answer_pop (w->fake, i, 1, 0, NULL, next_due_us);
    assert_true (s_no_response (w->fake));
    //  No call in flight while it is parked.
    assert_int_equal (qn_fake_pending (w->fake), s_start_pending);
}

static void
test_pop_wait_parks_and_a_commit_wakes_it (void **state)
{
    s_world_t *w = *state;
    qn_kernel_t *k = qn_fake_kernel (w->fake);
    qn_fake_advance (w->fake, 1);
    s_park (w, 21, "orders", 30000, 0);
    s_park (w, 22, "orders", 30000, 0);
    assert_int_equal (qn_counter (k, "parked_pops"), 2);
    //  The codec subscribed to "committed" itself. Another queue's commit
    //  runs nothing.
    assert_true (qn_fake_subscribed (w->fake, "codec_http", "committed"));
    assert_int_equal (s_committed (w->fake, "payments"), 1);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    //  Its own queue's: the oldest pop runs again, within the event's
    //  handler, and only it (no herd).
    assert_int_equal (s_committed (w->fake, "orders"), 1);
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, &body);
    msgpack_unpacked_destroy (&body);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    assert_int_equal (qn_counter (k, "parked_pops"), 1);
    //  It gets the message (a little later); the next parked pop goes out
    //  at once (the commit may have brought more than one).
    qn_fake_advance (w->fake, 1);
    s_answer_pop (w->fake, i, 1, 43, "{\"n\":2}", 0);
    qn_buf_t json = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, 21, &json, NULL), 200);
    assert_non_null (strstr (json.data, "\"data\":{\"n\":2}"));
    i = s_next_exec (w->fake, &body);
    msgpack_unpacked_destroy (&body);
    assert_int_equal (qn_counter (k, "parked_pops"), 0);
    //  It finds nothing and parks again; nobody else is woken.
    qn_fake_advance (w->fake, 1);
    s_answer_pop (w->fake, i, 0, 0, NULL, 0);
    assert_true (s_no_response (w->fake));
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    assert_int_equal (qn_counter (k, "parked_pops"), 1);
    qn_buf_free (&json);
}

static void
test_pop_wait_deadline_and_next_due (void **state)
{
    s_world_t *w = *state;
    qn_kernel_t *k = qn_fake_kernel (w->fake);
    //  Nothing wakes it: 204 at its deadline, not before.
    s_park (w, 31, "orders", 1000, 0);
    qn_fake_advance (w->fake, 999);
    assert_true (s_no_response (w->fake));
    qn_fake_advance (w->fake, 1);
    assert_int_equal (s_response (w->fake, 31, NULL, NULL), 204);
    assert_int_equal (qn_counter (k, "parked_pops"), 0);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    //  The database says something becomes claimable in 300 ms: the pop
    //  runs again just after, without any event.
    s_park (w, 32, "orders", 30000, qn_wall_us () + 300000);
    qn_fake_advance (w->fake, 300);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    qn_fake_advance (w->fake, 3);
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, &body);
    msgpack_unpacked_destroy (&body);
    s_answer_pop (w->fake, i, 1, 44, "{\"n\":3}", 0);
    assert_int_equal (s_response (w->fake, 32, NULL, NULL), 200);
}

static void
test_pop_wait_client_gone_and_drain (void **state)
{
    s_world_t *w = *state;
    qn_kernel_t *k = qn_fake_kernel (w->fake);
    qn_fake_advance (w->fake, 1);
    s_park (w, 41, "orders", 30000, 0);
    s_park (w, 42, "orders", 30000, 0);
    assert_int_equal (qn_counter (k, "parked_pops"), 2);
    //  The client of 41 hangs up: its slot is free at once, nothing is
    //  answered, and a commit now goes to 42.
    s_closed (w->fake, 41);
    assert_int_equal (qn_counter (k, "parked_pops"), 1);
    assert_int_equal (qn_counter (k, "pop_cancelled"), 1);
    assert_true (s_no_response (w->fake));
    //  The broker drains: the parked pop is answered 204 at once, closing.
    assert_int_equal (qn_fake_deliver (w->fake, "codec_http", QN_MSG_HTTP_DRAINED, "\x90", 1,
                                       NULL, 0), 0);
    bool close = false;
    assert_int_equal (s_response (w->fake, 42, NULL, &close), 204);
    assert_true (close);
    assert_int_equal (qn_counter (k, "parked_pops"), 0);
    assert_int_equal (s_committed (w->fake, "orders"), 1);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    assert_true (s_no_response (w->fake));
}

// ------------------------------------------------------------------ ack
//  A text[] / bigint[] parameter: element i.
static const msgpack_object *
s_elem (const msgpack_object *params, int p, uint32_t i)
{
    assert_int_equal (params [p].type, MSGPACK_OBJECT_ARRAY);
    assert_true (i < params [p].via.array.size);
    return &params [p].via.array.ptr [i];
}

static void
test_ack_batch (void **state)
{
    s_world_t *w = *state;
    char id1 [QN_ID_STR_LEN + 1], id2 [QN_ID_STR_LEN + 1], pid [QN_ID_STR_LEN + 1];
    qn_id_format (QN_ID_MESSAGE, 42, id1);
    qn_id_format (QN_ID_MESSAGE, 43, id2);
    qn_id_format (QN_ID_PARTITION, 7, pid);
    const char *lease = "89c23f01-8475-42c4-b84a-e76ac6e59f36";
    char json [1024];
    snprintf (json, sizeof json,
              "{\"consumerGroup\":\"g1\",\"acknowledgments\":["
              "{\"transactionId\":\"%s\",\"partitionId\":\"%s\",\"leaseId\":\"%s\"},"
              "{\"transactionId\":\"%s\",\"partitionId\":\"%s\",\"leaseId\":\"%s\","
              "\"status\":\"failed\",\"error\":\"boom\"}]}", id1, pid, lease, id2, pid, lease);
    s_http_body (w->fake, 51, "POST", "/api/v1/ack/batch", json);
    //  One queen.ack call: [tenant, groups, partition ids, transaction
    //  ids, seqs, statuses, leases, errors], one element per ack.
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, &body);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    const msgpack_object *a = body.data.via.array.ptr;
    assert_int_equal (a [0].via.u64, QN_SQL_ACK);
    assert_int_equal (a [2].via.array.size, 8);
    const msgpack_object *p = a [2].via.array.ptr;
    s_assert_str (&p [0], "");
    s_assert_str (s_elem (p, 1, 1), "g1");
    assert_int_equal (s_elem (p, 2, 0)->via.i64, 7);
    s_assert_str (s_elem (p, 3, 1), id2);
    assert_int_equal (s_elem (p, 4, 0)->via.i64, 42);
    assert_int_equal (s_elem (p, 4, 1)->via.i64, 43);
    s_assert_str (s_elem (p, 5, 0), "completed");
    s_assert_str (s_elem (p, 5, 1), "failed");
    s_assert_str (s_elem (p, 6, 0), lease);
    s_assert_str (s_elem (p, 7, 1), "boom");
    msgpack_unpacked_destroy (&body);
    assert_true (s_no_response (w->fake));
    //  Its rows [ord, success, error, queue, partition, lease released,
    //  dlq] become one result per ack, in request order.
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 5);
    msgpack_pack_true (&pk);
    s_pack_str (&pk, "00000");
    s_pack_str (&pk, "");
    s_pack_str (&pk, "");
    msgpack_pack_array (&pk, 2);
    for (int r = 1; r <= 2; r++) {          //  queen.ack answers in ord order
        msgpack_pack_array (&pk, 7);
        msgpack_pack_int64 (&pk, r);
        r == 1 ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
        if (r == 1)
            msgpack_pack_nil (&pk);
        else
            s_pack_str (&pk, "lease expired");
        s_pack_str (&pk, "orders");
        s_pack_str (&pk, "p1");
        msgpack_pack_true (&pk);
        msgpack_pack_false (&pk);
    }
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PG_RESULT, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, 51, &out, NULL), 200);
    char want [512];
    snprintf (want, sizeof want,
              "[{\"index\":0,\"transactionId\":\"%s\",\"success\":true,\"error\":null,"
              "\"queueName\":\"orders\",\"partitionName\":\"p1\",\"leaseReleased\":true,"
              "\"dlq\":false},{\"index\":1,\"transactionId\":\"%s\",\"success\":false,"
              "\"error\":\"lease expired\",\"queueName\":\"orders\",\"partitionName\":\"p1\","
              "\"leaseReleased\":true,\"dlq\":false}]", id1, id2);
    assert_string_equal (out.data, want);
    qn_buf_free (&out);
}

static void
test_ack_refused (void **state)
{
    s_world_t *w = *state;
    //  Validation names the field; nothing is written.
    s_http_body (w->fake, 52, "POST", "/api/v1/ack/batch",
                 "{\"acknowledgments\":[{\"transactionId\":\"x\",\"partitionId\":\"nope\"}]}");
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, 52, &out, NULL), 400);
    assert_non_null (strstr (out.data, "acknowledgments[0].partitionId must be a valid UUID"));
    //  A database error is mapped, not swallowed.
    char id [QN_ID_STR_LEN + 1], pid [QN_ID_STR_LEN + 1], json [256];
    qn_id_format (QN_ID_MESSAGE, 1, id);
    qn_id_format (QN_ID_PARTITION, 1, pid);
    snprintf (json, sizeof json, "{\"transactionId\":\"%s\",\"partitionId\":\"%s\"}", id, pid);
    s_http_body (w->fake, 53, "POST", "/api/v1/ack", json);
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, &body);
    msgpack_unpacked_destroy (&body);
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PG_RESULT,
                                      "\x95\xc2\xa5" "08006" "\xa4" "gone" "\xa0\x90", 15), 0);
    assert_int_equal (s_response (w->fake, 53, &out, NULL), 503);
    //  No answer at all: the call's deadline answers for it.
    s_http_body (w->fake, 54, "POST", "/api/v1/ack", json);
    i = s_next_exec (w->fake, &body);
    msgpack_unpacked_destroy (&body);
    qn_fake_advance (w->fake, w->config.db_statement_timeout_ms + 2000);
    assert_int_equal (s_response (w->fake, 54, &out, NULL), 503);
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PG_RESULT, "\x90", 1), QN_ENOENT);
    qn_buf_free (&out);
}

// ------------------------------------------------------------------ push
//  The next QN_MSG_PUSH request to the write path, decoded into out
//  (holder initialised here, destroyed by the caller). Its index.
static int
s_next_push (qn_fake_t *fake, msgpack_unpacked *holder, qn_msg_push_t *out)
{
    int i = qn_fake_next (fake, QN_MSG_PUSH);
    assert_true (i >= 0);
    const qn_fake_msg_t *m = qn_fake_msg (fake, (size_t) i);
    assert_int_equal (m->kind, QN_FAKE_REQUEST);
    assert_string_equal (m->to, "pg_writer");
    msgpack_unpacked_init (holder);
    assert_int_equal (qn_msg_push_decode (m->body.data, m->body.len, holder, out), 0);
    return i;
}

//  A decoded push item field (not NUL-terminated) equals want.
static void
s_assert_span (const void *p, size_t n, const char *want)
{
    assert_non_null (p);
    assert_int_equal (n, strlen (want));
    assert_memory_equal (p, want, n);
}

static void
test_push_request_and_answer (void **state)
{
    s_world_t *w = *state;
    s_http_body (w->fake, 61, "POST", "/api/v1/push",
                 "{\"items\":[{\"queue\":\"orders\",\"partition\":\"p1\",\"payload\":{\"n\":1}},"
                 "{\"queue\":\"orders\",\"transactionId\":\"t-2\",\"payload\":\"x\"}]}");
    //  One push request, whatever makes it durable: [tenant, flags, items].
    msgpack_unpacked holder;
    qn_msg_push_t push;
    int i = s_next_push (w->fake, &holder, &push);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PUSH), -1);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    assert_int_equal (push.tenant_len, 0);
    assert_false (push.replay);
    assert_int_equal (push.count, 2);
    qn_msg_push_item_t a, b;
    assert_int_equal (qn_msg_push_item_decode (&push.items [0], &a), 0);
    assert_int_equal (qn_msg_push_item_decode (&push.items [1], &b), 0);
    s_assert_span (a.queue, a.queue_len, "orders");
    s_assert_span (a.partition, a.partition_len, "p1");
    s_assert_span (a.payload, a.payload_len, "{\"n\":1}");
    assert_null (a.sqs);
    s_assert_span (b.queue, b.queue_len, "orders");
    s_assert_span (b.txn, b.txn_len, "t-2");
    s_assert_span (b.payload, b.payload_len, "\"x\"");
    msgpack_unpacked_destroy (&holder);
    assert_true (s_no_response (w->fake));
    //  One answer, one result per item: queued, duplicate.
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    qn_msg_push_answer_begin (&pk, 2);
    qn_msg_push_result_t r0 = { .status = QN_PUSH_QUEUED, .seq = 5, .partition_id = 7 };
    qn_msg_push_result_t r1 = { .status = QN_PUSH_DUPLICATE, .seq = 3 };
    qn_msg_push_result (&pk, &r0);
    qn_msg_push_result (&pk, &r1);
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PUSH_ANSWER, sb.data, sb.size), 0);
    msgpack_sbuffer_destroy (&sb);
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, 61, &out, NULL), 201);
    char mid5 [QN_ID_STR_LEN + 1], mid3 [QN_ID_STR_LEN + 1], pid [QN_ID_STR_LEN + 1], want [256];
    qn_id_format (QN_ID_MESSAGE, 5, mid5);
    qn_id_format (QN_ID_MESSAGE, 3, mid3);
    qn_id_format (QN_ID_PARTITION, 7, pid);
    snprintf (want, sizeof want, "{\"index\":0,\"transaction_id\":\"%s\",\"status\":\"queued\","
              "\"message_id\":\"%s\",\"partition_id\":\"%s\",", mid5, mid5, pid);
    assert_non_null (strstr (out.data, want));
    snprintf (want, sizeof want, "{\"index\":1,\"transaction_id\":\"t-2\",\"status\":\"duplicate\","
              "\"message_id\":\"%s\",\"queueName\":\"orders\"}", mid3);
    assert_non_null (strstr (out.data, want));
    assert_int_equal (qn_counter (qn_fake_kernel (w->fake), "messages_pushed"), 1);
    qn_buf_free (&out);
}

static void
test_push_buffered_refused_and_gone (void **state)
{
    s_world_t *w = *state;
    const char *body = "{\"items\":[{\"queue\":\"orders\",\"payload\":1}]}";
    //  Made durable in the spool: the §3.6 buffered shape, with the
    //  transaction id the write path minted.
    s_http_body (w->fake, 62, "POST", "/api/v1/push", body);
    msgpack_unpacked holder;
    qn_msg_push_t push;
    int i = s_next_push (w->fake, &holder, &push);
    msgpack_unpacked_destroy (&holder);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    qn_msg_push_answer_begin (&pk, 1);
    qn_msg_push_result_t r = { .status = QN_PUSH_BUFFERED, .txn = "minted-1", .txn_len = 8 };
    qn_msg_push_result (&pk, &r);
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PUSH_ANSWER, sb.data, sb.size), 0);
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, 62, &out, NULL), 201);
    assert_non_null (strstr (out.data, "\"status\":\"buffered\""));
    assert_non_null (strstr (out.data, "\"transactionId\":\"minted-1\""));
    //  Refused because the spool could not sync: 503 naming it.
    s_http_body (w->fake, 63, "POST", "/api/v1/push", body);
    i = s_next_push (w->fake, &holder, &push);
    msgpack_unpacked_destroy (&holder);
    msgpack_sbuffer_clear (&sb);
    qn_msg_push_refuse (&pk, "58030", "disk full");
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PUSH_ANSWER, sb.data, sb.size), 0);
    assert_int_equal (s_response (w->fake, 63, &out, NULL), 503);
    assert_non_null (strstr (out.data, "File buffer write failed: disk full"));
    //  The client hangs up before the answer: nothing is sent back.
    s_http_body (w->fake, 64, "POST", "/api/v1/push", body);
    i = s_next_push (w->fake, &holder, &push);
    msgpack_unpacked_destroy (&holder);
    s_closed (w->fake, 64);
    msgpack_sbuffer_clear (&sb);
    qn_msg_push_answer_begin (&pk, 1);
    qn_msg_push_result_t q = { .status = QN_PUSH_QUEUED, .seq = 9, .partition_id = 7 };
    qn_msg_push_result (&pk, &q);
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PUSH_ANSWER, sb.data, sb.size), 0);
    assert_true (s_no_response (w->fake));
    //  A bad item is refused before anything is sent.
    s_http_body (w->fake, 65, "POST", "/api/v1/push", "{\"items\":[{\"payload\":1}]}");
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PUSH), -1);
    assert_int_equal (s_response (w->fake, 65, &out, NULL), 400);
    msgpack_sbuffer_destroy (&sb);
    qn_buf_free (&out);
}

// ------------------------------------------------------------------ ephemeral
//  The ephemeral table lives in the codec's thread: every route is
//  answered from the codec itself, no message to another actor.
static void
test_ephemeral_answered_in_the_codec (void **state)
{
    s_world_t *w = *state;
    qn_buf_t body = QN_BUF_INIT;
    s_http_body (w->fake, 51, "POST", "/api/v1/ephemeral/queues/jobs/send", "{\"payload\":{\"n\":1}}");
    assert_int_equal (s_response (w->fake, 51, &body, NULL), 201);
    assert_int_equal (body.len, strlen ("{\"status\":\"queued\"}"));
    assert_memory_equal (body.data, "{\"status\":\"queued\"}", body.len);
    s_http (w->fake, 52, "GET", "/api/v1/ephemeral/queues/jobs/receive?timeout=0");
    assert_int_equal (s_response (w->fake, 52, &body, NULL), 200);
    qn_buf_putc (&body, 0);
    assert_non_null (strstr (body.data, "\"payload\":{\"n\":1}"));
    //  Nothing but the two responses left the codec: no call to another
    //  actor (the old EPH_CALL hop) and no database.
    assert_int_equal (qn_fake_count (w->fake), 2);
    //  A waiting receive is answered when a send comes, 204 at its timeout.
    s_http (w->fake, 53, "GET", "/api/v1/ephemeral/queues/jobs/receive?timeout=30000");
    assert_true (s_no_response (w->fake));
    s_http_body (w->fake, 54, "POST", "/api/v1/ephemeral/queues/jobs/send", "{\"payload\":2}");
    assert_int_equal (s_response (w->fake, 53, &body, NULL), 200);
    assert_int_equal (s_response (w->fake, 54, &body, NULL), 201);
    assert_memory_equal (body.data, "{\"status\":\"delivered\"}", body.len);
    s_http (w->fake, 55, "GET", "/api/v1/ephemeral/queues/jobs/receive?timeout=500");
    assert_true (s_no_response (w->fake));
    qn_fake_advance (w->fake, 501);
    assert_int_equal (s_response (w->fake, 55, NULL, NULL), 204);
    qn_buf_free (&body);
}

//  A receive whose client hangs up is forgotten at once: a later send is
//  buffered for the next consumer, not handed to the gone one.
static void
test_ephemeral_receive_client_gone (void **state)
{
    s_world_t *w = *state;
    qn_buf_t body = QN_BUF_INIT;
    s_http (w->fake, 61, "GET", "/api/v1/ephemeral/queues/jobs/receive?timeout=30000");
    s_closed (w->fake, 61);
    s_http_body (w->fake, 62, "POST", "/api/v1/ephemeral/queues/jobs/send", "{\"payload\":7}");
    assert_int_equal (s_response (w->fake, 62, &body, NULL), 201);
    assert_memory_equal (body.data, "{\"status\":\"queued\"}", body.len);
    //  A batched receive that took a message but left before its answer
    //  went out (the end of the loop pass): the message goes back.
    //  (The buffered one first: a batched receive answers it at once.)
    s_http (w->fake, 63, "GET", "/api/v1/ephemeral/queues/jobs/receive?timeout=30000&max=8");
    assert_int_equal (s_response (w->fake, 63, &body, NULL), 200);
    qn_buf_putc (&body, 0);
    assert_non_null (strstr (body.data, "{\"messages\":[{\"id\":"));
    assert_non_null (strstr (body.data, "\"payload\":7"));
    s_http (w->fake, 64, "GET", "/api/v1/ephemeral/queues/jobs/receive?timeout=30000&max=8");
    s_http_body (w->fake, 65, "POST", "/api/v1/ephemeral/queues/jobs/send", "{\"payload\":8}");
    assert_int_equal (s_response (w->fake, 65, &body, NULL), 201);
    assert_memory_equal (body.data, "{\"status\":\"delivered\"}", body.len);
    s_closed (w->fake, 64);
    qn_fake_advance (w->fake, 1);
    assert_true (s_no_response (w->fake));
    s_http (w->fake, 66, "GET", "/api/v1/ephemeral/queues/jobs/receive?timeout=0");
    assert_int_equal (s_response (w->fake, 66, &body, NULL), 200);
    qn_buf_putc (&body, 0);
    assert_non_null (strstr (body.data, "\"payload\":8"));
    qn_buf_free (&body);
}

//  Request/reply in one codec: the replier's answer reaches the waiting
//  requester; a requester that hung up closes its inbox (the reply gets
//  404); nobody answering is a 504 at the request's timeout.
static void
test_ephemeral_request_reply_gone_and_timeout (void **state)
{
    s_world_t *w = *state;
    qn_buf_t body = QN_BUF_INIT;
    char reply [512];
    for (int round = 0; round < 2; round++) {
        uint64_t requester = round ? 74 : 71, replier = round ? 75 : 72, answer = round ? 76 : 73;
        s_http_body (w->fake, requester, "POST", "/api/v1/ephemeral/queues/rpc/request",
                     "{\"payload\":{\"q\":1},\"timeout\":5000}");
        assert_true (s_no_response (w->fake));
        s_http (w->fake, replier, "GET", "/api/v1/ephemeral/queues/rpc/receive?timeout=0");
        assert_int_equal (s_response (w->fake, replier, &body, NULL), 200);
        qn_buf_putc (&body, 0);
        const char *rt = strstr (body.data, "\"replyTo\":\"");
        const char *ci = strstr (body.data, "\"correlationId\":\"");
        assert_non_null (rt);
        assert_non_null (ci);
        rt += 11;
        ci += 17;
        snprintf (reply, sizeof reply, "{\"replyTo\":\"%.*s\",\"correlationId\":\"%.*s\",\"payload\":{\"a\":2}}",
                  (int) (strchr (rt, '"') - rt), rt, (int) (strchr (ci, '"') - ci), ci);
        if (round)
            s_closed (w->fake, requester);
        s_http_body (w->fake, answer, "POST", "/api/v1/ephemeral/reply", reply);
        if (round) {
            assert_int_equal (s_response (w->fake, answer, NULL, NULL), 404);
            assert_true (s_no_response (w->fake));
        }
        else {
            assert_int_equal (s_response (w->fake, requester, &body, NULL), 200);
            qn_buf_putc (&body, 0);
            assert_non_null (strstr (body.data, "\"payload\":{\"a\":2}"));
            assert_int_equal (s_response (w->fake, answer, &body, NULL), 202);
        }
    }
    s_http_body (w->fake, 77, "POST", "/api/v1/ephemeral/queues/rpc/request", "{\"payload\":1,\"timeout\":300}");
    qn_fake_advance (w->fake, 299);
    assert_true (s_no_response (w->fake));
    qn_fake_advance (w->fake, 2);
    assert_int_equal (s_response (w->fake, 77, NULL, NULL), 504);
    qn_buf_free (&body);
}

//  The table's peer operations of one pass leave as one QN_MSG_MESH_EPH
//  (operations back to back) at the pass's end; peers' come in the same
//  way, several in one message.
static void
test_ephemeral_peer_ops_coalesced (void **state)
{
    s_world_t *w = *state;
    qn_buf_t body = QN_BUF_INIT;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_eph_peer_t want = {
        .kind = QN_EPH_WANT, .name = { "q", 1 }, .b = { "10.0.0.2:7000", 13 }, .n = 2
    };
    qn_msg_eph_peer_encode (&sb, &want);
    want.name = (qn_eph_str_t) { "r", 1 };
    qn_msg_eph_peer_encode (&sb, &want);
    assert_int_equal (qn_fake_deliver (w->fake, "codec_http", QN_MSG_MESH_EPH, sb.data, sb.size, NULL, 0), 0);
    qn_fake_clear (w->fake);
    s_http_body (w->fake, 81, "POST", "/api/v1/ephemeral/queues/q/send", "{\"payload\":1}");
    s_http_body (w->fake, 82, "POST", "/api/v1/ephemeral/queues/r/send", "{\"payload\":2}");
    s_http_body (w->fake, 83, "POST", "/api/v1/ephemeral/queues/q/send", "{\"payload\":3}");
    for (uint64_t conn = 81; conn <= 83; conn++) {
        assert_int_equal (s_response (w->fake, conn, &body, NULL), 201);
        assert_memory_equal (body.data, "{\"status\":\"forwarded\"}", body.len);
    }
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_MESH_EPH), -1);
    qn_fake_advance (w->fake, 1);
    int i = qn_fake_next (w->fake, QN_MSG_MESH_EPH);
    assert_true (i >= 0);
    const qn_fake_msg_t *m = qn_fake_msg (w->fake, (size_t) i);
    assert_string_equal (m->to, "mesh");
    size_t off = 0;
    qn_msg_eph_peer_t op;
    const char *want_payloads [] = { "1", "2", "3" };
    for (int k = 0; k < 3; k++) {
        assert_int_equal (qn_msg_eph_peer_next (m->body.data, m->body.len, &off, &op, NULL), 1);
        assert_int_equal (op.kind, QN_EPH_OFFER);
        assert_memory_equal (op.to.ptr, "10.0.0.2:7000", 13);
        assert_memory_equal (op.payload.ptr, want_payloads [k], 1);
    }
    assert_int_equal (qn_msg_eph_peer_next (m->body.data, m->body.len, &off, &op, NULL), 0);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_MESH_EPH), -1);
    //  A malformed message from the mesh is refused, nothing else happens.
    assert_int_equal (qn_fake_deliver (w->fake, "codec_http", QN_MSG_MESH_EPH, "\x91\x01", 2, NULL, 0),
                      QN_EPROTO);
    msgpack_sbuffer_destroy (&sb);
    qn_buf_free (&body);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_pop_request_and_answer, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_pop_refused_and_empty, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_pop_wait_parks_and_a_commit_wakes_it, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_pop_wait_deadline_and_next_due, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_pop_wait_client_gone_and_drain, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_ack_batch, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_ack_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_push_request_and_answer, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_push_buffered_refused_and_gone, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_ephemeral_answered_in_the_codec, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_ephemeral_receive_client_gone, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_ephemeral_request_reply_gone_and_timeout, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_ephemeral_peer_ops_coalesced, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
