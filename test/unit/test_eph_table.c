/*  test/unit/test_eph_table.c - the ephemeral table (actors/ephemeral/)
    hosted inline, as codec_http hosts it, on the fake kernel: the test is
    the host (def->answer records every answer, in order, with the call's
    corr), its timers run on the fake's manual clock, and what it sends the
    mesh (QN_MSG_MESH_EPH, one message per operation: coalesce off) is
    recorded by the fake. Queue bounds and both overflow policies, the
    broker's byte cap, a waiting consumer served first, a requester's
    timeout and its reply by inbox, batched receives and replies, names per
    tenant, a consumer waiting on a peer (WANT) getting the message as an
    OFFER, an offered hand sending no WANT, and subscriber expiry.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/ephemeral/table.h"
#include "test/support/fake_kernel.h"
#include "wire/msg_ephemeral.h"

#define S_MAX_ANSWERS 256

typedef struct {
    int status;
    char *json;                 //  Owned, NUL-terminated
    uint64_t corr;
} s_answer_t;

//  The host: the table, the fake it runs on, and its answers in order.
typedef struct {
    qn_fake_world_t *world;
    qn_fake_t *fake;
    qn_eph_t *table;            //  Owned
    s_answer_t answers [S_MAX_ANSWERS];
    size_t count;               //  Recorded
    size_t next;                //  The first not taken by s_answer
    uint64_t corr;              //  The last call's
} host_t;

static const char *
s_no_env (const char *name)
{
    if (!strcmp (name, "EPHEMERAL_MAX_BYTES"))
        return "2048";
    if (!strcmp (name, "MESH_PORT"))
        return "7000";
    return NULL;
}

//  def->answer: every call is answered exactly once, to its own host.
static void
s_on_answer (void *arg, const char *reply_to, uint64_t corr, int status, const char *json, size_t len)
{
    host_t *h = arg;
    assert_string_equal (reply_to, "test");
    assert_true (h->count < S_MAX_ANSWERS);
    for (size_t i = 0; i < h->count; i++)
        assert_true (h->answers [i].corr != corr);
    s_answer_t *a = &h->answers [h->count++];
    a->status = status;
    a->json = qn_strndup (json, len);
    a->corr = corr;
}

static int
s_setup (void **state)
{
    host_t *h = qn_zalloc (sizeof *h);
    h->world = qn_fake_world_new (s_no_env);
    if (!h->world) {
        free (h);
        return -1;
    }
    h->fake = h->world->fake;
    qn_eph_def_t def = { .answer = s_on_answer, .arg = h };
    h->table = qn_eph_new (qn_fake_kernel (h->fake), &h->world->config, &def);
    qn_eph_start (h->table);    //  What a host does at START: the 1 s WANT repeat
    *state = h;
    return 0;
}

static int
s_teardown (void **state)
{
    host_t *h = *state;
    qn_eph_destroy (&h->table);
    assert_null (h->table);
    qn_fake_world_destroy (&h->world);
    for (size_t i = 0; i < h->count; i++)
        free (h->answers [i].json);
    free (h);
    return 0;
}

static bool
s_answered (host_t *h, uint64_t corr)
{
    for (size_t i = 0; i < h->count; i++)
        if (h->answers [i].corr == corr)
            return true;
    return false;
}

//  A call with a tenant, a receive's max and a subscriber. The table
//  answers it before returning (and returns NULL), or returns the handle
//  of its wait.
static void
s_call_full (host_t *h, const char *op, const char *name, const char *body, int64_t timeout,
             const char *query, int64_t max, const char *tenant)
{
    qn_msg_eph_call_t m = {
        .op = { op, strlen (op) }, .name = { name, strlen (name) }, .body = { body, strlen (body) },
        .query = { query, strlen (query) }, .tenant = { tenant, strlen (tenant) },
        .timeout_ms = timeout, .max = max
    };
    uint64_t corr = ++h->corr;
    void *waits = qn_eph_call (h->table, &m, "test", corr);
    assert_true (s_answered (h, corr) == (waits == NULL));
}

static void
s_call (host_t *h, const char *op, const char *name, const char *body, int64_t timeout,
        const char *query)
{
    s_call_full (h, op, name, body, timeout, query, 0, "");
}

//  A call with a tenant and a receive's max.
static void
s_call_ex (host_t *h, const char *op, const char *name, const char *body, int64_t timeout,
           int64_t max, const char *tenant)
{
    s_call_full (h, op, name, body, timeout, "", max, tenant);
}

//  The next answer: its status, and its body copied into json.
static int
s_answer (host_t *h, char *json, size_t cap)
{
    assert_true (h->next < h->count);
    const s_answer_t *a = &h->answers [h->next++];
    snprintf (json, cap, "%s", a->json);
    return a->status;
}

//  The call the answer s_answer took last was for.
static uint64_t
s_answer_corr (host_t *h)
{
    assert_true (h->next > 0);
    return h->answers [h->next - 1].corr;
}

static bool
s_no_answer (host_t *h)
{
    return h->next == h->count;
}

//  Decodes the next MESH_EPH message the table sent into *op (fails the
//  test when there is none or it does not decode).
static void
s_sent_op (host_t *h, qn_msg_eph_peer_t *op)
{
    int i = qn_fake_next (h->fake, QN_MSG_MESH_EPH);
    assert_true (i >= 0);
    const qn_fake_msg_t *m = qn_fake_msg (h->fake, (size_t) i);
    assert_int_equal (qn_msg_eph_peer_decode (m->body.data, m->body.len, op), 0);
}

//  Forgets what was recorded so far: the mesh's messages and the answers.
static void
s_clear (host_t *h)
{
    qn_fake_clear (h->fake);
    h->next = h->count;
}

static void
test_reject_and_drop_oldest (void **state)
{
    host_t *w = *state;
    char json [1024];
    s_call (w, "configure", "r", "{\"maxMessages\":2,\"overflow\":\"reject\"}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    s_call (w, "send", "r", "{\"payload\":1}", 0, "");
    s_call (w, "send", "r", "{\"payload\":2}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    assert_string_equal (json, "{\"status\":\"queued\"}");
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    s_call (w, "send", "r", "{\"payload\":3}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 429);
    s_call (w, "configure", "d", "{\"maxMessages\":2,\"overflow\":\"drop-oldest\"}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    for (int i = 1; i <= 3; i++) {
        char body [32];
        snprintf (body, sizeof body, "{\"payload\":%d}", i);
        s_call (w, "send", "d", body, 0, "");
        assert_int_equal (s_answer (w, json, sizeof json), 201);
    }
    s_call (w, "receive", "d", "", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_non_null (strstr (json, "\"payload\":2"));
    s_call (w, "configure", "x", "{\"overflow\":\"sometimes\"}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 400);
}

static void
test_byte_cap (void **state)
{
    host_t *w = *state;
    char json [4096], body [1024];
    snprintf (body, sizeof body, "{\"payload\":\"%0600d\"}", 0);
    int statuses [4];
    for (int i = 0; i < 4; i++) {
        s_call (w, "send", "big", body, 0, "");
        statuses [i] = s_answer (w, json, sizeof json);
    }
    //  2048 bytes hold three 602-byte payloads (+ 64 each), not four.
    assert_int_equal (statuses [2], 201);
    assert_int_equal (statuses [3], 503);
    s_call (w, "stats", "", "", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_non_null (strstr (json, "\"bytes\":1998"));
}

static void
test_waiting_consumer_first (void **state)
{
    host_t *w = *state;
    char json [1024];
    s_call (w, "receive", "jobs", "", 5000, "");
    assert_true (s_no_answer (w));
    //  It tells the peers (WANT) that one consumer waits here, at the end
    //  of this pass of the host's loop (a 0 ms timer).
    assert_true (qn_fake_next (w->fake, QN_MSG_MESH_EPH) < 0);
    qn_fake_advance (w->fake, 0);
    assert_true (qn_fake_next (w->fake, QN_MSG_MESH_EPH) >= 0);
    s_call (w, "send", "jobs", "{\"payload\":{\"a\":1}}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_string_equal (json, "{\"id\":1,\"payload\":{\"a\":1}}");
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    assert_string_equal (json, "{\"status\":\"delivered\"}");
    //  Nobody waits any more: a receive times out on the clock with 204.
    s_call (w, "receive", "jobs", "", 1000, "");
    qn_fake_advance (w->fake, 999);
    assert_true (s_no_answer (w));
    qn_fake_advance (w->fake, 2);
    assert_int_equal (s_answer (w, json, sizeof json), 204);
}

static void
test_request_timeout_and_reply (void **state)
{
    host_t *w = *state;
    char json [1024];
    s_call (w, "request", "rpc", "{\"payload\":\"q\",\"timeout\":500}", 0, "");
    uint64_t first = w->corr;
    assert_true (s_no_answer (w));
    qn_fake_advance (w->fake, 501);
    assert_int_equal (s_answer (w, json, sizeof json), 504);
    assert_int_equal (s_answer_corr (w), first);
    //  The request waits in the buffer; a replier takes it and answers.
    s_call (w, "request", "rpc", "{\"payload\":\"q2\",\"timeout\":5000,\"correlationId\":\"k\"}", 0, "");
    s_call (w, "receive", "rpc", "", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_non_null (strstr (json, "\"payload\":\"q\""));     //  The first, oldest
    s_call (w, "receive", "rpc", "", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_non_null (strstr (json, "\"replyTo\":\"2@127.0.0.1:7000\",\"correlationId\":\"k\""));
    s_call (w, "reply", "", "{\"replyTo\":\"2@127.0.0.1:7000\",\"correlationId\":\"k\",\"payload\":[1]}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_string_equal (json, "{\"correlationId\":\"k\",\"payload\":[1]}");
    assert_int_equal (s_answer (w, json, sizeof json), 202);
    //  A reply for another broker's inbox goes to the mesh.
    s_clear (w);
    s_call (w, "reply", "", "{\"replyTo\":\"9@10.0.0.2:7000\",\"correlationId\":\"k\",\"payload\":1}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 202);
    assert_string_equal (json, "{\"status\":\"forwarded\"}");
    qn_msg_eph_peer_t op;
    s_sent_op (w, &op);
    assert_int_equal (op.kind, QN_EPH_REPLY);
    assert_int_equal (op.to.len, 13);
}

static void
test_batch_receive_and_reply (void **state)
{
    host_t *w = *state;
    char json [2048];
    //  Buffered messages: a receive with max takes up to max of them.
    for (int i = 1; i <= 3; i++) {
        char body [32];
        snprintf (body, sizeof body, "{\"payload\":%d}", i);
        s_call (w, "send", "b", body, 0, "");
        assert_int_equal (s_answer (w, json, sizeof json), 201);
    }
    s_call_ex (w, "receive", "b", "", 0, 2, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_string_equal (json, "{\"messages\":[{\"id\":1,\"payload\":1},{\"id\":2,\"payload\":2}]}");
    s_call_ex (w, "receive", "b", "", 0, 5, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_string_equal (json, "{\"messages\":[{\"id\":3,\"payload\":3}]}");
    s_call_ex (w, "receive", "b", "", 0, 1001, "");
    assert_int_equal (s_answer (w, json, sizeof json), 400);
    //  A waiting receive with max collects what arrives in one pass of
    //  the loop and answers at its end.
    s_call_ex (w, "receive", "b", "", 5000, 3, "");
    s_call (w, "send", "b", "{\"payload\":4}", 0, "");
    s_call (w, "send", "b", "{\"payload\":5}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    assert_string_equal (json, "{\"status\":\"delivered\"}");
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    assert_true (s_no_answer (w));
    qn_fake_advance (w->fake, 0);
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_string_equal (json, "{\"messages\":[{\"id\":4,\"payload\":4},{\"id\":5,\"payload\":5}]}");
    //  Full at max: it takes no more; the next message is buffered.
    s_call_ex (w, "receive", "b", "", 5000, 1, "");
    s_call (w, "send", "b", "{\"payload\":6}", 0, "");
    s_call (w, "send", "b", "{\"payload\":7}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    assert_string_equal (json, "{\"status\":\"queued\"}");
    qn_fake_advance (w->fake, 0);
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_string_equal (json, "{\"messages\":[{\"id\":6,\"payload\":6}]}");
    //  Two requests answered by one batch reply; a third reply has no
    //  requester, a fourth is malformed.
    s_call_ex (w, "receive", "b", "", 0, 10, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    s_call (w, "request", "b", "{\"payload\":\"x\",\"correlationId\":\"k1\"}", 0, "");
    uint64_t k1 = w->corr;
    s_call (w, "request", "b", "{\"payload\":\"y\",\"correlationId\":\"k2\"}", 0, "");
    uint64_t k2 = w->corr;
    assert_true (s_no_answer (w));
    s_call (w, "reply", "",
            "{\"replies\":[{\"replyTo\":\"2@127.0.0.1:7000\",\"correlationId\":\"k2\",\"payload\":2},"
            "{\"replyTo\":\"1@127.0.0.1:7000\",\"correlationId\":\"k1\",\"payload\":1},"
            "{\"replyTo\":\"9@127.0.0.1:7000\",\"correlationId\":\"k9\",\"payload\":9},"
            "{\"replyTo\":\"nowhere\",\"correlationId\":\"k9\",\"payload\":9}]}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_string_equal (json, "{\"correlationId\":\"k2\",\"payload\":2}");
    assert_int_equal (s_answer_corr (w), k2);
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_string_equal (json, "{\"correlationId\":\"k1\",\"payload\":1}");
    assert_int_equal (s_answer_corr (w), k1);
    assert_int_equal (s_answer (w, json, sizeof json), 202);
    assert_string_equal (json, "{\"delivered\":2,\"forwarded\":0,\"missing\":1,\"invalid\":1}");
    s_call (w, "reply", "", "{\"replies\":{}}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 400);
    s_call (w, "reply", "", "{\"replies\":[1]}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 400);
}

static void
test_names_per_tenant (void **state)
{
    host_t *w = *state;
    char json [1024];
    //  Tenant ta's "jobs" is not tb's, nor the default tenant's.
    s_call_ex (w, "send", "jobs", "{\"payload\":\"a\"}", 0, 0, "ta");
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    s_call_ex (w, "receive", "jobs", "", 0, 0, "tb");
    assert_int_equal (s_answer (w, json, sizeof json), 204);
    s_call_ex (w, "receive", "jobs", "", 0, 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 204);
    s_call_ex (w, "configure", "jobs", "{}", 0, 0, "ta");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_non_null (strstr (json, "\"queue\":\"jobs\",") );
    assert_non_null (strstr (json, "\"buffered\":1"));
    s_call_ex (w, "receive", "jobs", "", 0, 0, "ta");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_non_null (strstr (json, "\"payload\":\"a\""));
    //  What travels to the peers names the tenant: a WANT for ta's "q".
    s_clear (w);
    s_call_ex (w, "receive", "q", "", 5000, 0, "ta");
    qn_fake_advance (w->fake, 0);
    qn_msg_eph_peer_t op;
    s_sent_op (w, &op);
    assert_int_equal (op.kind, QN_EPH_WANT);
    assert_int_equal (op.name.len, 5);
    assert_memory_equal (op.name.ptr, "\x1fta\x1fq", 5);
    //  A client name cannot spell another tenant's key.
    s_call_ex (w, "send", "\x1fta\x1fq", "{\"payload\":1}", 0, 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 400);
    //  Only the requester's tenant may answer it.
    s_call_ex (w, "request", "rpc", "{\"payload\":1,\"correlationId\":\"k\"}", 0, 0, "ta");
    const char *reply = "{\"replyTo\":\"1@127.0.0.1:7000\",\"correlationId\":\"k\",\"payload\":2}";
    s_call_ex (w, "reply", "", reply, 0, 0, "tb");
    assert_int_equal (s_answer (w, json, sizeof json), 404);
    s_call_ex (w, "reply", "", reply, 0, 0, "ta");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_string_equal (json, "{\"correlationId\":\"k\",\"payload\":2}");
    assert_int_equal (s_answer (w, json, sizeof json), 202);
}

static void
test_offer_to_a_peer (void **state)
{
    host_t *w = *state;
    char json [1024];
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_eph_peer_t want = {
        .kind = QN_EPH_WANT, .name = { "q", 1 }, .b = { "10.0.0.2:7000", 13 }, .n = 1
    };
    qn_msg_eph_peer_encode (&sb, &want);
    assert_int_equal (qn_eph_peer (w->table, sb.data, sb.size), 0);
    s_clear (w);
    s_call (w, "send", "q", "{\"payload\":7}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    assert_string_equal (json, "{\"status\":\"forwarded\"}");
    qn_msg_eph_peer_t op;
    s_sent_op (w, &op);
    assert_int_equal (op.kind, QN_EPH_OFFER);
    assert_memory_equal (op.to.ptr, "10.0.0.2:7000", 13);
    assert_memory_equal (op.payload.ptr, "7", 1);
    //  Its one consumer is taken: the next message stays here.
    s_call (w, "send", "q", "{\"payload\":8}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    assert_string_equal (json, "{\"status\":\"queued\"}");
    msgpack_sbuffer_destroy (&sb);
}

static void
test_presence_expiry (void **state)
{
    host_t *w = *state;
    char json [1024];
    s_call (w, "subscribe", "t", "{\"subscriber\":\"s1\",\"ttl\":1000}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    s_call (w, "subscribe", "t", "{\"subscriber\":\"s2\",\"ttl\":5000}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    s_call (w, "publish", "t", "{\"payload\":\"k1\"}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    assert_string_equal (json, "{\"deliveredHere\":2,\"subscribers\":2}");
    qn_fake_advance (w->fake, 1500);
    s_call (w, "subscribers", "t", "", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_null (strstr (json, "s1"));
    assert_non_null (strstr (json, "\"subscriber\":\"s2\""));
    s_call (w, "poll", "t", "", 0, "s2");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_string_equal (json, "{\"messages\":[{\"id\":2,\"payload\":\"k1\"}]}");
    s_call (w, "poll", "t", "", 0, "s1");
    assert_int_equal (s_answer (w, json, sizeof json), 404);
}

//  A message a peer offered to our waiting consumer: the peer counted it
//  against our WANT already, so handing it sends no WANT; a new consumer
//  waiting (a change no peer can count) does.
static void
test_offered_hand_sends_no_want (void **state)
{
    host_t *w = *state;
    char json [1024];
    s_call (w, "receive", "o", "", 5000, "");
    qn_fake_advance (w->fake, 0);
    assert_true (qn_fake_next (w->fake, QN_MSG_MESH_EPH) >= 0);        //  WANT 1
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_MESH_EPH), -1);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_eph_peer_t offer = {
        .kind = QN_EPH_OFFER, .to = { "127.0.0.1:7000", 14 }, .name = { "o", 1 }, .payload = { "5", 1 }
    };
    qn_msg_eph_peer_encode (&sb, &offer);
    assert_int_equal (qn_eph_peer (w->table, sb.data, sb.size), 0);
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_non_null (strstr (json, "\"payload\":5"));
    qn_fake_advance (w->fake, 0);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_MESH_EPH), -1);
    //  The consumer comes back: WANT 1 again.
    s_call (w, "receive", "o", "", 5000, "");
    qn_fake_advance (w->fake, 0);
    qn_msg_eph_peer_t op;
    s_sent_op (w, &op);
    assert_int_equal (op.kind, QN_EPH_WANT);
    assert_int_equal (op.n, 1);
    //  A local send to it is a change the peers cannot count: WANT 0.
    s_call (w, "send", "o", "{\"payload\":6}", 0, "");
    assert_int_equal (s_answer (w, json, sizeof json), 200);
    assert_int_equal (s_answer (w, json, sizeof json), 201);
    qn_fake_advance (w->fake, 0);
    s_sent_op (w, &op);
    assert_int_equal (op.kind, QN_EPH_WANT);
    assert_int_equal (op.n, 0);
    msgpack_sbuffer_destroy (&sb);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup_teardown (test_reject_and_drop_oldest, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_byte_cap, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_waiting_consumer_first, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_request_timeout_and_reply, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_offer_to_a_peer, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_batch_receive_and_reply, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_names_per_tenant, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_presence_expiry, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown (test_offered_hand_sends_no_want, s_setup, s_teardown),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
