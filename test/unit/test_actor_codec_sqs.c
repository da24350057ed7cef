/*  test/unit/test_actor_codec_sqs.c - codec_sqs's translation
    The real SQS codec actor (actors/sqs/codec.c + ops.c) on the fake
    kernel, signatures off: an HTTP_REQUEST in -> the catalogue statements
    (and, for sends, the push operation) it asks pg_writer for; their
    answers in -> the HTTP_RESPONSE to sqs_acceptor. A send during an
    outage runs on the settings read last. An empty ReceiveMessage with a wait parks and is run again
    by a "committed" event. Bodies between actors are packed by hand (the
    test plays sqs_acceptor and pg_writer).
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
#include "wire/mp.h"
#include "wire/msg_db.h"
#include "wire/msg_pg.h"
#include "wire/msg_push.h"

typedef qn_fake_world_t s_world_t;

static const char *
s_env (const char *name)
{
    if (!strcmp (name, "SQS_VERIFY_SIGNATURES"))
        return "false";
    if (!strcmp (name, "SQS_PUBLIC_URL"))
        return "http://sqs.test:9324";
    return NULL;
}

static int
s_setup (void **state)
{
    s_world_t *w = qn_fake_world_start (s_env, qn_codec_sqs_new);
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

static void
s_pack_str (msgpack_packer *pk, const char *s)
{
    msgpack_pack_str (pk, strlen (s));
    msgpack_pack_str_body (pk, s, strlen (s));
}

//  A JSON 1.0 request for `op` with `body`, signed by access key `akid`
//  (NULL: no Authorization header; signatures are not verified here).
static void
s_json_request_as (qn_fake_t *fake, uint64_t conn, const char *op, const char *body, const char *akid)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 6);
    msgpack_pack_uint64 (&pk, conn);
    msgpack_pack_uint32 (&pk, 1);
    s_pack_str (&pk, "POST");
    s_pack_str (&pk, "/");
    msgpack_pack_true (&pk);
    msgpack_pack_array (&pk, akid? 3: 2);
    if (akid) {
        char auth [256];
        snprintf (auth, sizeof auth, "AWS4-HMAC-SHA256 Credential=%s/20261201/us-east-1/sqs/aws4_request, "
                  "SignedHeaders=host;x-amz-date, Signature=%064d", akid, 0);
        msgpack_pack_array (&pk, 2);
        s_pack_str (&pk, "Authorization");
        s_pack_str (&pk, auth);
    }
    char target [64];
    snprintf (target, sizeof target, "AmazonSQS.%s", op);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "X-Amz-Target");
    s_pack_str (&pk, target);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "Content-Type");
    s_pack_str (&pk, "application/x-amz-json-1.0");
    assert_int_equal (qn_fake_deliver (fake, "codec_sqs", QN_MSG_HTTP_REQUEST, b.data, b.size,
                                       body, strlen (body)), 0);
    msgpack_sbuffer_destroy (&b);
}

static void
s_json_request (qn_fake_t *fake, uint64_t conn, const char *op, const char *body)
{
    s_json_request_as (fake, conn, op, body, NULL);
}

//  The next PG_EXEC: its index; asserts the statement; body decoded.
static int
s_next_exec (qn_fake_t *fake, uint32_t stmt, msgpack_unpacked *body)
{
    int i = qn_fake_next (fake, QN_MSG_PG_EXEC);
    assert_true (i >= 0);
    const qn_fake_msg_t *m = qn_fake_msg (fake, (size_t) i);
    assert_string_equal (m->to, "pg_writer");
    msgpack_unpacked_init (body);
    assert_int_equal (msgpack_unpack_next (body, m->body.data, m->body.len, NULL), MSGPACK_UNPACK_SUCCESS);
    assert_int_equal (body->data.via.array.ptr [0].via.u64, stmt);
    return i;
}

static void
s_assert_str (const msgpack_object *o, const char *want)
{
    assert_int_equal (o->type, MSGPACK_OBJECT_STR);
    assert_int_equal (o->via.str.size, strlen (want));
    assert_memory_equal (o->via.str.ptr, want, strlen (want));
}

static void
s_result_head (msgpack_packer *pk, uint32_t rows)
{
    msgpack_pack_array (pk, 5);
    msgpack_pack_true (pk);
    s_pack_str (pk, "00000");
    s_pack_str (pk, "");
    s_pack_str (pk, "");
    msgpack_pack_array (pk, rows);
}

//  The sqs_queue row of a standard queue with id 3 (rows 0: no queue).
static void
s_answer_queue (qn_fake_t *fake, int i, uint32_t rows)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    s_result_head (&pk, rows);
    if (rows) {
        msgpack_pack_array (&pk, 10);
        msgpack_pack_int32 (&pk, 3);
        msgpack_pack_false (&pk);
        s_pack_str (&pk, "{\"VisibilityTimeout\":\"30\",\"DelaySeconds\":\"0\"}");
        s_pack_str (&pk, "{}");
        msgpack_pack_int64 (&pk, 1764500000000000);
        msgpack_pack_int64 (&pk, 1764500000000000);
        msgpack_pack_int64 (&pk, 0);
        msgpack_pack_int64 (&pk, 0);
        msgpack_pack_int64 (&pk, 0);
        char key [32];
        memset (key, 9, sizeof key);
        msgpack_pack_bin (&pk, 32);
        msgpack_pack_bin_body (&pk, key, 32);
    }
    assert_int_equal (qn_fake_answer (fake, (size_t) i, QN_MSG_PG_RESULT, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
}

//  The response to sqs_acceptor: status, headers+body text into out.
static int
s_response (qn_fake_t *fake, qn_buf_t *out)
{
    int i = qn_fake_next (fake, QN_MSG_HTTP_RESPONSE);
    assert_true (i >= 0);
    const qn_fake_msg_t *m = qn_fake_msg (fake, (size_t) i);
    assert_string_equal (m->to, "sqs_acceptor");
    assert_int_equal (m->frame_count, 1);
    qn_buf_reset (out);
    qn_buf_append (out, m->frames [0].data, m->frames [0].len);
    return atoi (out->data + 9);
}

//  The next QN_MSG_PUSH to pg_writer: its index; request decoded into m
//  (holder initialised here, destroyed by the caller).
static int
s_next_push (qn_fake_t *fake, msgpack_unpacked *holder, qn_msg_push_t *m)
{
    int i = qn_fake_next (fake, QN_MSG_PUSH);
    assert_true (i >= 0);
    const qn_fake_msg_t *msg = qn_fake_msg (fake, (size_t) i);
    assert_int_equal (msg->kind, QN_FAKE_REQUEST);
    assert_string_equal (msg->to, "pg_writer");
    msgpack_unpacked_init (holder);
    assert_int_equal (qn_msg_push_decode (msg->body.data, msg->body.len, holder, m), 0);
    return i;
}

static void
s_assert_span (const char *p, size_t len, const char *want)
{
    assert_non_null (p);
    assert_int_equal (len, strlen (want));
    assert_memory_equal (p, want, len);
}

//  Answers push request i with one result for its single item.
static void
s_answer_push (qn_fake_t *fake, int i, const qn_msg_push_result_t *res)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_push_answer_begin (&pk, 1);
    qn_msg_push_result (&pk, res);
    assert_int_equal (qn_fake_answer (fake, (size_t) i, QN_MSG_PUSH_ANSWER, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
}

static const char *s_send_q1 = "{\"QueueUrl\":\"http://x/000000000000/q1\",\"MessageBody\":\"hello\"}";

//  A send is the push operation: the queue's settings, then one PUSH item
//  with its SQS metadata; the answer's seq is the MessageId.
static void
test_send_message (void **state)
{
    s_world_t *w = *state;
    s_json_request (w->fake, 1, "SendMessage", s_send_q1);
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    const msgpack_object *p = body.data.via.array.ptr [2].via.array.ptr;
    s_assert_str (&p [0], "");
    s_assert_str (&p [1], "q1");
    msgpack_unpacked_destroy (&body);
    s_answer_queue (w->fake, i, 1);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    qn_msg_push_t m;
    i = s_next_push (w->fake, &body, &m);
    assert_false (m.replay);
    assert_int_equal (m.count, 1);
    qn_msg_push_item_t it;
    assert_int_equal (qn_msg_push_item_decode (&m.items [0], &it), 0);
    s_assert_span (it.queue, it.queue_len, "q1");
    assert_true (it.partition_len > 5);
    assert_memory_equal (it.partition, "_sqs-", 5);
    s_assert_span (it.payload, it.payload_len, "hello");
    assert_null (it.txn);               //  Its own transaction id: none
    s_assert_span (it.producer, it.producer_len, "anonymous");
    assert_false (it.encrypted);
    assert_false (it.has_not_before);
    assert_non_null (it.sqs);
    qn_buf_t meta = QN_BUF_INIT;
    qn_buf_append (&meta, it.sqs, it.sqs_len);
    qn_buf_putc (&meta, 0);
    assert_non_null (strstr (meta.data, "\"sent\":"));
    assert_null (strstr (meta.data, "\"dedup\""));     //  A standard queue
    qn_buf_free (&meta);
    msgpack_unpacked_destroy (&body);
    s_answer_push (w->fake, i, &(qn_msg_push_result_t) { .status = QN_PUSH_QUEUED, .seq = 5, .partition_id = 7 });
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, &out), 200);
    assert_non_null (strstr (out.data, "Content-Type: application/x-amz-json-1.0"));
    assert_non_null (strstr (out.data, "x-amzn-RequestId: "));
    assert_non_null (strstr (out.data, "{\"MessageId\":\"00000001-0000-8000-8000-000000000005\","
                                       "\"MD5OfMessageBody\":\"5d41402abc4b2a76b9719d911017c592\"}"));
    qn_buf_free (&out);
}

//  A push refused because the queue went away (QN404) is NonExistentQueue.
static void
test_send_queue_gone (void **state)
{
    s_world_t *w = *state;
    s_json_request (w->fake, 1, "SendMessage", s_send_q1);
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    msgpack_unpacked_destroy (&body);
    s_answer_queue (w->fake, i, 1);
    qn_msg_push_t m;
    i = s_next_push (w->fake, &body, &m);
    msgpack_unpacked_destroy (&body);
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_push_refuse (&pk, "QN404", "queue q1 does not exist");
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PUSH_ANSWER, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, &out), 400);
    assert_non_null (strstr (out.data, "AWS.SimpleQueueService.NonExistentQueue"));
    qn_buf_free (&out);
}

//  pg_writer's "db" event.
static void
s_db (qn_fake_t *fake, bool up)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_db_health_encode (&b, up);
    assert_int_equal (qn_fake_publish (fake, "db", QN_MSG_DB_HEALTH, b.data, b.size), 1);
    msgpack_sbuffer_destroy (&b);
}

//  Answers PG_EXEC i with a failure of the database (08006).
static void
s_answer_down (qn_fake_t *fake, int i)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_pg_result_begin (&pk, false, "08006", "database unavailable", "", 0);
    assert_int_equal (qn_fake_answer (fake, (size_t) i, QN_MSG_PG_RESULT, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
}

//  During an outage a send runs on the settings read last: with the
//  database reported down it asks nothing before its push; with the read
//  failing for the database's sake (before the event) it falls back on
//  them too. The spool's answer gives the MessageId. A queue never read
//  has no kept settings: ServiceUnavailable.
static void
test_send_during_outage (void **state)
{
    s_world_t *w = *state;
    //  A lookup while the database is up keeps q1's settings.
    s_json_request (w->fake, 1, "GetQueueUrl", "{\"QueueName\":\"q1\"}");
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    msgpack_unpacked_destroy (&body);
    s_answer_queue (w->fake, i, 1);
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, &out), 200);
    //  The read fails (the event has not come yet): the kept settings.
    qn_fake_clear (w->fake);
    s_json_request (w->fake, 2, "SendMessage", s_send_q1);
    i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    msgpack_unpacked_destroy (&body);
    s_answer_down (w->fake, i);
    qn_msg_push_t m;
    i = s_next_push (w->fake, &body, &m);
    assert_int_equal (m.count, 1);
    msgpack_unpacked_destroy (&body);
    static const char txn [] = "01900000-0000-7000-8000-0000000000aa";
    s_answer_push (w->fake, i, &(qn_msg_push_result_t) { .status = QN_PUSH_BUFFERED, .txn = txn,
                                                         .txn_len = sizeof txn - 1 });
    assert_int_equal (s_response (w->fake, &out), 200);
    assert_non_null (strstr (out.data, "{\"MessageId\":\"01900000-0000-7000-8000-0000000000aa\","
                                       "\"MD5OfMessageBody\":\"5d41402abc4b2a76b9719d911017c592\"}"));
    //  Reported down: no read at all.
    s_db (w->fake, false);
    qn_fake_clear (w->fake);
    s_json_request (w->fake, 3, "SendMessage", s_send_q1);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    i = s_next_push (w->fake, &body, &m);
    msgpack_unpacked_destroy (&body);
    s_answer_push (w->fake, i, &(qn_msg_push_result_t) { .status = QN_PUSH_BUFFERED, .txn = txn,
                                                         .txn_len = sizeof txn - 1 });
    assert_int_equal (s_response (w->fake, &out), 200);
    //  Another queue, never read: asked, fails, ServiceUnavailable.
    qn_fake_clear (w->fake);
    s_json_request (w->fake, 4, "SendMessage",
                    "{\"QueueUrl\":\"http://x/000000000000/q2\",\"MessageBody\":\"hello\"}");
    i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    msgpack_unpacked_destroy (&body);
    s_answer_down (w->fake, i);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PUSH), -1);
    assert_int_equal (s_response (w->fake, &out), 503);
    assert_non_null (strstr (out.data, "ServiceUnavailable"));
    //  Other operations are not run on kept settings.
    qn_fake_clear (w->fake);
    s_json_request (w->fake, 5, "GetQueueUrl", "{\"QueueName\":\"q1\"}");
    i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    msgpack_unpacked_destroy (&body);
    s_answer_down (w->fake, i);
    assert_int_equal (s_response (w->fake, &out), 503);
    //  Up again: sends read the settings first.
    s_db (w->fake, true);
    qn_fake_clear (w->fake);
    s_json_request (w->fake, 6, "SendMessage", s_send_q1);
    i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    msgpack_unpacked_destroy (&body);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PUSH), -1);
    s_answer_queue (w->fake, i, 1);
    i = s_next_push (w->fake, &body, &m);
    msgpack_unpacked_destroy (&body);
    s_answer_push (w->fake, i, &(qn_msg_push_result_t) { .status = QN_PUSH_QUEUED, .seq = 5, .partition_id = 7 });
    assert_int_equal (s_response (w->fake, &out), 200);
    qn_buf_free (&out);
}

//  An access key of queen.sqs_keys: the first request asks pg_reader for it
//  and waits; the answer's tenant is then every statement's tenant, and a
//  second request of the key asks nothing. A disabled key acts (unverified)
//  for the default tenant.
static void
test_access_key_tenant (void **state)
{
    s_world_t *w = *state;
    const char *req = "{\"QueueUrl\":\"http://x/000000000000/q1\",\"AttributeNames\":[\"All\"]}";
    s_json_request_as (w->fake, 4, "GetQueueAttributes", req, "QNAKACME");
    int i = qn_fake_next (w->fake, QN_MSG_PG_EXEC);
    assert_true (i >= 0);
    const qn_fake_msg_t *m = qn_fake_msg (w->fake, (size_t) i);
    assert_string_equal (m->to, "pg_reader");
    msgpack_unpacked body;
    msgpack_unpacked_init (&body);
    assert_int_equal (msgpack_unpack_next (&body, m->body.data, m->body.len, NULL), MSGPACK_UNPACK_SUCCESS);
    assert_int_equal (body.data.via.array.ptr [0].via.u64, QN_SQL_SQS_KEY_GET);
    s_assert_str (&body.data.via.array.ptr [2].via.array.ptr [0], "QNAKACME");
    msgpack_unpacked_destroy (&body);
    //  Nothing else until the key is known.
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_PG_EXEC), -1);
    //  [secret, tenant, enabled]
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    s_result_head (&pk, 1);
    msgpack_pack_array (&pk, 3);
    s_pack_str (&pk, "acme-secret");
    s_pack_str (&pk, "acme");
    msgpack_pack_true (&pk);
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PG_RESULT, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
    //  Replayed: the queue is looked up as tenant acme's.
    i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    s_assert_str (&body.data.via.array.ptr [2].via.array.ptr [0], "acme");
    s_assert_str (&body.data.via.array.ptr [2].via.array.ptr [1], "q1");
    msgpack_unpacked_destroy (&body);
    s_answer_queue (w->fake, i, 1);
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, &out), 200);
    //  Cached: straight to the queue, as acme.
    s_json_request_as (w->fake, 4, "GetQueueAttributes", req, "QNAKACME");
    i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    s_assert_str (&body.data.via.array.ptr [2].via.array.ptr [0], "acme");
    msgpack_unpacked_destroy (&body);
    s_answer_queue (w->fake, i, 1);
    assert_int_equal (s_response (w->fake, &out), 200);
    //  A disabled key: the default tenant (verification is off here).
    s_json_request_as (w->fake, 5, "GetQueueAttributes", req, "QNAKOFF");
    i = qn_fake_next (w->fake, QN_MSG_PG_EXEC);
    assert_true (i >= 0);
    assert_string_equal (qn_fake_msg (w->fake, (size_t) i)->to, "pg_reader");
    msgpack_sbuffer_init (&b);
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    s_result_head (&pk, 1);
    msgpack_pack_array (&pk, 3);
    s_pack_str (&pk, "off-secret");
    s_pack_str (&pk, "globex");
    msgpack_pack_false (&pk);
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PG_RESULT, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
    i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    s_assert_str (&body.data.via.array.ptr [2].via.array.ptr [0], "");
    msgpack_unpacked_destroy (&body);
    s_answer_queue (w->fake, i, 1);
    assert_int_equal (s_response (w->fake, &out), 200);
    qn_buf_free (&out);
}

static void
test_missing_queue (void **state)
{
    s_world_t *w = *state;
    s_json_request (w->fake, 2, "GetQueueAttributes",
                    "{\"QueueUrl\":\"http://x/000000000000/nope\",\"AttributeNames\":[\"All\"]}");
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    msgpack_unpacked_destroy (&body);
    s_answer_queue (w->fake, i, 0);
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, &out), 400);
    assert_non_null (strstr (out.data, "x-amzn-query-error: AWS.SimpleQueueService.NonExistentQueue;Sender"));
    assert_non_null (strstr (out.data, "{\"__type\":\"com.amazonaws.sqs#QueueDoesNotExist\""));
    qn_buf_free (&out);
}

static void
test_create_queue_url (void **state)
{
    s_world_t *w = *state;
    s_json_request (w->fake, 3, "CreateQueue", "{\"QueueName\":\"orders\"}");
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, QN_SQL_SQS_CREATE, &body);
    msgpack_unpacked_destroy (&body);
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    s_result_head (&pk, 1);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "created");
    msgpack_pack_int32 (&pk, 4);
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PG_RESULT, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, &out), 200);
    assert_non_null (strstr (out.data, "{\"QueueUrl\":\"http://sqs.test:9324/000000000000/orders\"}"));
    qn_buf_free (&out);
}

static void
test_receive_parks_and_wakes (void **state)
{
    s_world_t *w = *state;
    s_json_request (w->fake, 4, "ReceiveMessage",
                    "{\"QueueUrl\":\"http://x/000000000000/q1\",\"WaitTimeSeconds\":5}");
    msgpack_unpacked body;
    int i = s_next_exec (w->fake, QN_SQL_SQS_QUEUE, &body);
    msgpack_unpacked_destroy (&body);
    s_answer_queue (w->fake, i, 1);
    i = s_next_exec (w->fake, QN_SQL_SQS_RECEIVE, &body);
    msgpack_unpacked_destroy (&body);
    //  Empty: one row with only next_due (nil here).
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    s_result_head (&pk, 1);
    msgpack_pack_array (&pk, 16);
    for (int c = 0; c < 16; c++)
        msgpack_pack_nil (&pk);
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PG_RESULT, b.data, b.size), 0);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_HTTP_RESPONSE), -1);     //  parked
    //  A commit on q1 runs it again at once.
    msgpack_sbuffer_clear (&b);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "");
    s_pack_str (&pk, "q1");
    assert_true (qn_fake_publish (w->fake, "committed", QN_MSG_COMMITTED, b.data, b.size) > 0);
    i = s_next_exec (w->fake, QN_SQL_SQS_RECEIVE, &body);
    msgpack_unpacked_destroy (&body);
    msgpack_sbuffer_clear (&b);
    s_result_head (&pk, 1);
    msgpack_pack_array (&pk, 16);
    msgpack_pack_int64 (&pk, 7);                    //  partition id
    s_pack_str (&pk, "_sqs-3");
    msgpack_pack_int64 (&pk, 9);                    //  seq
    msgpack_pack_int64 (&pk, 1764500000000000);     //  created
    msgpack_pack_bin (&pk, 2);
    msgpack_pack_bin_body (&pk, "hi", 2);
    msgpack_pack_int32 (&pk, 1);                    //  receive count
    msgpack_pack_int64 (&pk, 1764500001000000);     //  first receive
    for (int c = 7; c < 16; c++)
        msgpack_pack_nil (&pk);
    assert_int_equal (qn_fake_answer (w->fake, (size_t) i, QN_MSG_PG_RESULT, b.data, b.size), 0);
    msgpack_sbuffer_destroy (&b);
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (s_response (w->fake, &out), 200);
    assert_non_null (strstr (out.data, "\"Body\":\"hi\""));
    assert_non_null (strstr (out.data, "\"MessageId\":\"00000001-0000-8000-8000-000000000009\""));
    assert_non_null (strstr (out.data, "\"ReceiptHandle\":\""));
    qn_buf_free (&out);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_send_message, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_send_queue_gone, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_send_during_outage, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_missing_queue, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_access_key_tenant, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_create_queue_url, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_receive_parks_and_wakes, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
