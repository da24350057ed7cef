/*  test/client/test_libqueen.c - libqueen against a real broker
    Run by test/integration/libqueen.test.mjs with QUEEN_URL (a running
    broker) and QUEEN_DEAD_URL (a port nobody listens on). Every public
    function is called, with its error paths: 400, 404, 409, refused
    operations, a dead broker and a timeout. Queue names carry a random
    prefix so runs never share state.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/queen.h"

static const char *s_url;
static const char *s_dead;
static char s_prefix [32];

static queen_client_t *
s_client (int push_batch)
{
    queen_error_t err = { 0 };
    queen_client_t *c = queen_new (&(queen_options_t) { .url = s_url, .pool_size = 3,
                                                        .push_batch = push_batch }, &err);
    assert_non_null (c);
    assert_int_equal (err.code, QUEEN_OK);
    return c;
}

static char *
s_name (const char *what)
{
    static char buf [8][128];
    static int i;
    char *b = buf [i++ % 8];
    snprintf (b, 128, "%s-%s", s_prefix, what);
    return b;
}

static int64_t
s_now_ms (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
test_options_and_strings (void **state)
{
    (void) state;
    queen_error_t err = { 0 };
    assert_null (queen_new (&(queen_options_t) { .url = "ftp://x" }, &err));
    assert_int_equal (err.code, QUEEN_ERR_ARG);
    assert_null (queen_new (NULL, &err));
    assert_int_equal (err.code, QUEEN_ERR_ARG);
    assert_null (queen_new (&(queen_options_t) { .url = s_url, .push_batch = 20000 }, &err));
    assert_int_equal (err.code, QUEEN_ERR_ARG);
    assert_string_equal (queen_strerror (QUEEN_ERR_CONNECT), "connection error");
    assert_string_equal (queen_strerror (QUEEN_ERR_NOT_FOUND), "not found");
    assert_string_equal (queen_strerror (QUEEN_OK), "ok");
    char *e = queen_escape ("a b/c%é");
    assert_string_equal (e, "a%20b%2Fc%25%C3%A9");
    free (e);
    char u1 [37], u2 [37];
    queen_uuid7 (u1);
    queen_uuid7 (u2);
    assert_int_equal (strlen (u1), 36);
    assert_int_equal (u1 [14], '7');
    assert_string_not_equal (u1, u2);
    queen_error_clear (&err);
    //  A client with a trailing slash in its URL
    char url [256];
    snprintf (url, sizeof url, "%s/", s_url);
    queen_client_t *c = queen_new (&(queen_options_t) { .url = url }, &err);
    assert_non_null (c);
    assert_string_equal (queen_url (c), s_url);
    assert_int_equal (queen_health (c, &err), QUEEN_OK);
    queen_destroy (&c);
    assert_null (c);
    queen_destroy (&c);
}

static void
test_broker_down (void **state)
{
    (void) state;
    queen_error_t err = { 0 };
    queen_client_t *c = queen_new (&(queen_options_t) { .url = s_dead, .retries = 1 }, &err);
    assert_non_null (c);
    assert_int_equal (queen_health (c, &err), QUEEN_ERR_CONNECT);
    assert_int_equal (err.http_status, 0);
    assert_true (strlen (err.message) > 0);
    queen_batch_t b;
    assert_int_equal (queen_pop (c, "q", NULL, &b, &err), QUEEN_ERR_CONNECT);
    assert_int_equal (b.count, 0);
    queen_item_t it = { .queue = "q", .payload = "1" };
    size_t done = 99;
    assert_int_equal (queen_push (c, &it, 1, NULL, &done, &err), QUEEN_ERR_CONNECT);
    assert_int_equal (done, 0);
    queen_kv_entry_t kv;
    assert_int_equal (queen_kv_get (c, "b", "k", &kv, &err), QUEEN_ERR_CONNECT);
    printf ("broker down: %s\n", err.message);
    queen_error_clear (&err);
    queen_destroy (&c);
}

static void
test_timeout (void **state)
{
    (void) state;
    queen_error_t err = { 0 };
    queen_client_t *c = queen_new (&(queen_options_t) { .url = s_url, .timeout_ms = 300,
                                                        .retries = -1 }, &err);
    assert_non_null (c);
    //  A raw long-poll of 3 s with a 300 ms client timeout
    char path [256];
    snprintf (path, sizeof path, "/api/v1/pop/queue/%s?wait=true&timeout=3000", s_name ("empty"));
    queen_response_t resp = { 0 };
    assert_int_equal (queen_request (c, "GET", path, NULL, &resp, &err), QUEEN_ERR_TIMEOUT);
    assert_int_equal (err.http_status, 0);
    queen_response_free (&resp);
    queen_error_clear (&err);
    queen_destroy (&c);
}

static void
test_push_pop_ack (void **state)
{
    (void) state;
    queen_client_t *c = s_client (0);
    queen_error_t err = { 0 };
    const char *q = s_name ("ppa");
    queen_item_t items [3] = {
        { .queue = q, .partition = "p1", .payload = "{\"n\": 1}", .transaction_id = "t-1" },
        { .queue = q, .partition = "p1", .payload = "[1,2]" },
        { .queue = q, .partition = "p1", .payload = "\"three\"" },
    };
    queen_push_result_t *res = NULL;
    size_t done = 0;
    assert_int_equal (queen_push (c, items, 3, &res, &done, &err), QUEEN_OK);
    assert_int_equal (done, 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal (res [i].status, "queued");
        assert_non_null (res [i].message_id);
        assert_non_null (res [i].partition_id);
    }
    assert_string_equal (res [0].transaction_id, "t-1");
    assert_int_equal (strlen (res [1].transaction_id), 36);     //  Made by the library
    queen_push_results_free (res, 3);

    //  The same transaction id again: a duplicate, not an error
    assert_int_equal (queen_push (c, items, 1, &res, NULL, &err), QUEEN_OK);
    assert_string_equal (res [0].status, "duplicate");
    queen_push_results_free (res, 1);

    queen_batch_t b;
    assert_int_equal (queen_pop (c, q, &(queen_pop_opts_t) { .batch = 10 }, &b, &err), QUEEN_OK);
    assert_int_equal (b.count, 3);
    assert_string_equal (b.queue, q);
    assert_non_null (b.lease_id);
    assert_string_equal (b.messages [0].data, "{\"n\": 1}");        //  Byte-for-byte
    assert_int_equal (b.messages [0].data_len, 8);
    assert_string_equal (b.messages [1].data, "[1,2]");
    assert_string_equal (b.messages [2].data, "\"three\"");
    assert_string_equal (b.messages [0].transaction_id, "t-1");
    assert_string_equal (b.messages [0].partition, "p1");
    assert_string_equal (b.messages [0].lease_id, b.lease_id);
    assert_non_null (b.messages [0].created_at);
    assert_non_null (b.body);

    //  Ack the first alone, then the rest as a batch
    queen_ack_t a = { .transaction_id = b.messages [0].transaction_id,
                      .partition_id = b.messages [0].partition_id, .lease_id = b.lease_id };
    assert_int_equal (queen_ack (c, &a, NULL, &err), QUEEN_OK);
    queen_ack_t two [2];
    for (int i = 0; i < 2; i++)
        two [i] = (queen_ack_t) { .transaction_id = b.messages [i + 1].transaction_id,
                                  .partition_id = b.messages [i + 1].partition_id,
                                  .lease_id = b.lease_id };
    bool ok [2] = { false, false };
    assert_int_equal (queen_ack_batch (c, two, 2, NULL, ok, &err), QUEEN_OK);
    assert_true (ok [0] && ok [1]);
    queen_batch_free (&b);

    //  Nothing left: 204 is OK with 0 messages
    assert_int_equal (queen_pop (c, q, NULL, &b, &err), QUEEN_OK);
    assert_int_equal (b.count, 0);
    queen_batch_free (&b);
    queen_error_clear (&err);
    queen_destroy (&c);
}

static void
test_push_batches_and_errors (void **state)
{
    (void) state;
    queen_client_t *c = s_client (2);
    queen_error_t err = { 0 };
    const char *q = s_name ("batches");
    queen_item_t items [5];
    char payload [5][32];
    for (int i = 0; i < 5; i++) {
        snprintf (payload [i], sizeof payload [i], "{\"i\":%d}", i);
        items [i] = (queen_item_t) { .queue = q, .payload = payload [i] };
    }
    queen_push_result_t *res = NULL;
    size_t done = 0;
    assert_int_equal (queen_push (c, items, 5, &res, &done, &err), QUEEN_OK);
    assert_int_equal (done, 5);
    for (int i = 0; i < 5; i++)
        assert_string_equal (res [i].status, "queued");
    queen_push_results_free (res, 5);
    queen_batch_t b;
    assert_int_equal (queen_pop (c, q, &(queen_pop_opts_t) { .batch = 10, .auto_ack = true }, &b, &err),
                      QUEEN_OK);
    assert_int_equal (b.count, 5);
    for (int i = 0; i < 5; i++)
        assert_string_equal (b.messages [i].data, payload [i]);
    queen_batch_free (&b);

    //  Caught by the library
    queen_item_t bad = { .queue = q, .payload = "{nope" };
    assert_int_equal (queen_push (c, &bad, 1, NULL, NULL, &err), QUEEN_ERR_ARG);
    assert_int_equal (queen_push (c, &(queen_item_t) { .payload = "1" }, 1, NULL, NULL, &err), QUEEN_ERR_ARG);
    assert_int_equal (queen_push (c, items, 0, NULL, NULL, &err), QUEEN_ERR_ARG);

    //  Refused by the broker: a 400 naming the field
    char longname [300];
    memset (longname, 'x', 299);
    longname [299] = 0;
    queen_item_t too_long = { .queue = longname, .payload = "1" };
    assert_int_equal (queen_push (c, &too_long, 1, NULL, &done, &err), QUEEN_ERR_BAD_REQUEST);
    assert_int_equal (err.http_status, 400);
    assert_non_null (strstr (err.message, "queue must be at most 255 bytes"));
    assert_non_null (err.body);
    assert_int_equal (done, 0);
    printf ("push 400: %s\n", err.message);
    queen_error_clear (&err);
    queen_destroy (&c);
}

static void
test_longpoll (void **state)
{
    (void) state;
    queen_client_t *c = s_client (0);
    queen_error_t err = { 0 };
    const char *q = s_name ("lp");
    queen_batch_t b;
    int64_t t0 = s_now_ms ();
    assert_int_equal (queen_pop (c, q, &(queen_pop_opts_t) { .wait = true, .timeout_ms = 600 }, &b, &err),
                      QUEEN_OK);
    assert_int_equal (b.count, 0);
    assert_true (s_now_ms () - t0 >= 500);          //  It waited (the broker answers at its deadline)
    queen_batch_free (&b);
    //  A partition pop with a consumer group sees a message pushed before it
    queen_item_t it = { .queue = q, .partition = "pA", .payload = "{\"x\":1}" };
    assert_int_equal (queen_push (c, &it, 1, NULL, NULL, &err), QUEEN_OK);
    assert_int_equal (queen_pop (c, q, &(queen_pop_opts_t) { .partition = "pA", .consumer_group = "g1",
                                                             .subscription_mode = "all", .wait = true,
                                                             .timeout_ms = 2000 }, &b, &err), QUEEN_OK);
    assert_int_equal (b.count, 1);
    assert_string_equal (b.messages [0].consumer_group, "g1");
    assert_int_equal (queen_ack_all (c, &b, "completed", &err), QUEEN_OK);
    queen_batch_free (&b);
    //  Bad parameters come back as the API's 400
    assert_int_equal (queen_pop (c, q, &(queen_pop_opts_t) { .batch = 20000 }, &b, &err), QUEEN_ERR_BAD_REQUEST);
    assert_non_null (strstr (err.message, "batch"));
    assert_int_equal (queen_pop (c, NULL, NULL, &b, &err), QUEEN_ERR_ARG);
    queen_error_clear (&err);
    queen_destroy (&c);
}

static void
test_ack_and_lease_errors (void **state)
{
    (void) state;
    queen_client_t *c = s_client (0);
    queen_error_t err = { 0 };
    const char *q = s_name ("lease");
    queen_item_t it = { .queue = q, .payload = "{}" };
    assert_int_equal (queen_push (c, &it, 1, NULL, NULL, &err), QUEEN_OK);
    queen_batch_t b;
    assert_int_equal (queen_pop (c, q, NULL, &b, &err), QUEEN_OK);
    assert_int_equal (b.count, 1);
    assert_int_equal (queen_lease_extend (c, b.lease_id, 30, &err), QUEEN_OK);
    assert_int_equal (queen_lease_extend (c, "5b1c0e4e-2f0e-4a8e-9a55-0d7a4f2b9c11", 0, &err),
                      QUEEN_ERR_REFUSED);
    assert_non_null (strstr (err.message, "Lease not found"));
    assert_int_equal (queen_lease_extend (c, "not-a-uuid", 0, &err), QUEEN_ERR_BAD_REQUEST);
    assert_int_equal (err.http_status, 400);
    assert_int_equal (queen_lease_extend (c, NULL, 0, &err), QUEEN_ERR_ARG);

    //  Ack with a partition id that is not one of ours: 400
    queen_ack_t a = { .transaction_id = b.messages [0].transaction_id, .partition_id = "nope" };
    assert_int_equal (queen_ack (c, &a, NULL, &err), QUEEN_ERR_BAD_REQUEST);
    assert_non_null (strstr (err.message, "partitionId"));
    //  Missing fields: caught before sending
    assert_int_equal (queen_ack (c, &(queen_ack_t) { .transaction_id = "x" }, NULL, &err), QUEEN_ERR_ARG);
    assert_int_equal (queen_ack_batch (c, &a, 0, NULL, NULL, &err), QUEEN_ERR_ARG);
    //  A lease that does not hold this message: refused per item
    a = (queen_ack_t) { .transaction_id = b.messages [0].transaction_id,
                        .partition_id = b.messages [0].partition_id,
                        .lease_id = "5b1c0e4e-2f0e-4a8e-9a55-0d7a4f2b9c11" };
    bool ok [1] = { true };
    assert_int_equal (queen_ack_batch (c, &a, 1, NULL, ok, &err), QUEEN_ERR_REFUSED);
    assert_false (ok [0]);
    printf ("ack refused: %s\n", err.message);
    //  The right lease works; the lease is then gone
    assert_int_equal (queen_ack_all (c, &b, "completed", &err), QUEEN_OK);
    queen_batch_t empty = { 0 };
    assert_int_equal (queen_ack_all (c, &empty, "completed", &err), QUEEN_ERR_ARG);
    queen_batch_free (&b);
    queen_error_clear (&err);
    queen_destroy (&c);
}

static void
test_transaction (void **state)
{
    (void) state;
    queen_client_t *c = s_client (0);
    queen_error_t err = { 0 };
    const char *qa = s_name ("txa");
    const char *qb = s_name ("txb");
    queen_item_t it = { .queue = qa, .payload = "{\"order\":1}" };
    assert_int_equal (queen_push (c, &it, 1, NULL, NULL, &err), QUEEN_OK);
    queen_batch_t b;
    assert_int_equal (queen_pop (c, qa, NULL, &b, &err), QUEEN_OK);
    assert_int_equal (b.count, 1);

    queen_txn_t *txn = queen_txn_new ();
    queen_ack_t a = { .transaction_id = b.messages [0].transaction_id,
                      .partition_id = b.messages [0].partition_id, .lease_id = b.lease_id };
    queen_txn_ack (txn, &a, NULL);
    queen_item_t out = { .queue = qb, .payload = "{\"invoice\":1}", .transaction_id = "inv-1" };
    queen_txn_push (txn, &out, 1);
    queen_txn_require_lease (txn, b.lease_id);
    assert_int_equal (queen_txn_size (txn), 2);
    queen_response_t resp = { 0 };
    assert_int_equal (queen_txn_commit (c, txn, &resp, &err), QUEEN_OK);
    assert_non_null (strstr (resp.body, "\"success\":true"));
    queen_response_free (&resp);
    queen_txn_destroy (&txn);
    assert_null (txn);
    queen_batch_free (&b);

    assert_int_equal (queen_pop (c, qb, NULL, &b, &err), QUEEN_OK);
    assert_int_equal (b.count, 1);
    assert_string_equal (b.messages [0].data, "{\"invoice\":1}");
    assert_string_equal (b.messages [0].transaction_id, "inv-1");
    queen_batch_free (&b);
    //  qa is consumed: the ack committed
    assert_int_equal (queen_pop (c, qa, NULL, &b, &err), QUEEN_OK);
    assert_int_equal (b.count, 0);
    queen_batch_free (&b);

    //  The same push again: a duplicate fails the whole transaction
    txn = queen_txn_new ();
    queen_txn_push (txn, &out, 1);
    assert_int_equal (queen_txn_commit (c, txn, NULL, &err), QUEEN_ERR_REFUSED);
    assert_int_equal (err.http_status, 200);
    printf ("transaction refused: %s\n", err.message);
    queen_txn_destroy (&txn);
    //  A lease that is not held
    txn = queen_txn_new ();
    queen_txn_push (txn, &it, 1);
    queen_txn_require_lease (txn, "5b1c0e4e-2f0e-4a8e-9a55-0d7a4f2b9c11");
    assert_int_equal (queen_txn_commit (c, txn, NULL, &err), QUEEN_ERR_REFUSED);
    assert_non_null (strstr (err.message, "invalid or expired"));
    queen_txn_destroy (&txn);
    //  Empty
    txn = queen_txn_new ();
    assert_int_equal (queen_txn_commit (c, txn, NULL, &err), QUEEN_ERR_ARG);
    queen_txn_destroy (&txn);
    queen_error_clear (&err);
    queen_destroy (&c);
}

typedef struct {
    int calls;
    int fail_on;
    long sleep_ms;
    size_t seen;
} s_handler_state_t;

static int
s_handler (queen_client_t *client, const queen_batch_t *batch, void *arg)
{
    (void) client;
    s_handler_state_t *st = arg;
    st->calls++;
    st->seen += batch->count;
    if (st->sleep_ms)
        usleep ((useconds_t) st->sleep_ms * 1000);
    return st->calls == st->fail_on ? 1 : 0;
}

static void
test_consume (void **state)
{
    (void) state;
    queen_client_t *c = s_client (0);
    queen_error_t err = { 0 };
    const char *q = s_name ("consume");
    //  retryLimit 0 would dead-letter at once; a failed batch is retried
    char body [512];
    snprintf (body, sizeof body, "{\"queue\":\"%s\",\"options\":{\"retryLimit\":3,\"retryDelay\":0,\"leaseTime\":2}}", q);
    assert_int_equal (queen_request (c, "POST", "/api/v1/configure", body, NULL, &err), QUEEN_OK);
    queen_item_t items [6];
    for (int i = 0; i < 6; i++)
        items [i] = (queen_item_t) { .queue = q, .payload = "{\"w\":1}" };
    assert_int_equal (queen_push (c, items, 6, NULL, NULL, &err), QUEEN_OK);

    //  First batch fails (acked failed, redelivered); the handler outlives
    //  the 2 s lease, so only renewal keeps it
    s_handler_state_t st = { .fail_on = 1, .sleep_ms = 2500 };
    queen_consume_stats_t stats;
    queen_consume_opts_t co = { .queue = q, .pop = { .batch = 3, .timeout_ms = 2000 },
                                .renew_ms = 500, .renew_seconds = 2, .max_batches = 1 };
    assert_int_equal (queen_consume (c, &co, s_handler, &st, &stats, &err), QUEEN_OK);
    assert_int_equal (stats.batches, 1);
    assert_int_equal (stats.failed, 1);
    assert_true (stats.renewals >= 2);
    printf ("consume: renewals=%ld\n", stats.renewals);
    //  Then the rest, quickly
    st.sleep_ms = 0;
    co.max_batches = 2;
    co.renew_ms = 0;
    assert_int_equal (queen_consume (c, &co, s_handler, &st, &stats, &err), QUEEN_OK);
    assert_int_equal (stats.messages, 6);
    assert_int_equal (stats.failed, 0);
    assert_int_equal (st.seen, 9);
    queen_batch_t b;
    assert_int_equal (queen_pop (c, q, NULL, &b, &err), QUEEN_OK);
    assert_int_equal (b.count, 0);
    queen_batch_free (&b);
    //  A stop flag already set returns at once
    volatile int stop = 1;
    co.stop = &stop;
    assert_int_equal (queen_consume (c, &co, s_handler, &st, &stats, &err), QUEEN_OK);
    assert_int_equal (stats.batches, 0);
    assert_int_equal (queen_consume (c, &(queen_consume_opts_t) { 0 }, s_handler, &st, &stats, &err),
                      QUEEN_ERR_ARG);
    queen_error_clear (&err);
    queen_destroy (&c);
}

static void
test_kv (void **state)
{
    (void) state;
    queen_client_t *c = s_client (0);
    queen_error_t err = { 0 };
    const char *bucket = s_name ("kv");
    int64_t v1 = 0, v2 = 0;
    assert_int_equal (queen_kv_set (c, bucket, "user/42", "{\"items\": [1, 2]}", 0, 0, &v1, &err), QUEEN_OK);
    assert_true (v1 > 0);
    queen_kv_entry_t e;
    assert_int_equal (queen_kv_get (c, bucket, "user/42", &e, &err), QUEEN_OK);
    assert_string_equal (e.value, "{\"items\": [1, 2]}");
    assert_int_equal (e.version, v1);
    assert_null (e.expires_at);
    assert_non_null (e.updated_at);
    queen_kv_entry_free (&e);
    //  Compare-and-set
    assert_int_equal (queen_kv_set (c, bucket, "user/42", "1", 0, v1 + 1000, NULL, &err), QUEEN_ERR_CONFLICT);
    assert_int_equal (err.http_status, 409);
    assert_string_equal (err.message, "version conflict");
    assert_non_null (strstr (err.body, "currentVersion"));
    assert_int_equal (queen_kv_set (c, bucket, "user/42", "2", 3600, v1, &v2, &err), QUEEN_OK);
    assert_true (v2 > v1);
    assert_int_equal (queen_kv_get (c, bucket, "user/42", &e, &err), QUEEN_OK);
    assert_non_null (e.expires_at);
    queen_kv_entry_free (&e);
    assert_int_equal (queen_kv_set (c, bucket, "user/43", "true", 0, QUEEN_KV_ANY_VERSION, NULL, &err), QUEEN_OK);
    queen_response_t resp = { 0 };
    assert_int_equal (queen_kv_list (c, bucket, "user/", NULL, 1, &resp, &err), QUEEN_OK);
    assert_non_null (strstr (resp.body, "\"key\":\"user/42\""));
    assert_non_null (strstr (resp.body, "\"next\":\"user/42\""));
    assert_int_equal (queen_kv_list (c, bucket, "user/", "user/42", 10, &resp, &err), QUEEN_OK);
    assert_non_null (strstr (resp.body, "user/43"));
    assert_null (strstr (resp.body, "user/42"));
    queen_response_free (&resp);
    //  Delete, with a wrong version first
    assert_int_equal (queen_kv_del (c, bucket, "user/42", v1, &err), QUEEN_ERR_CONFLICT);
    assert_int_equal (queen_kv_del (c, bucket, "user/42", v2, &err), QUEEN_OK);
    assert_int_equal (queen_kv_get (c, bucket, "user/42", &e, &err), QUEEN_ERR_NOT_FOUND);
    assert_int_equal (err.http_status, 404);
    assert_string_equal (err.message, "key not found");
    assert_int_equal (queen_kv_del (c, bucket, "user/42", QUEEN_KV_ANY_VERSION, &err), QUEEN_ERR_NOT_FOUND);
    //  Too large, bad arguments
    size_t big = 1100000;
    char *value = malloc (big + 3);
    value [0] = '"';
    memset (value + 1, 'a', big);
    value [big + 1] = '"';
    value [big + 2] = 0;
    assert_int_equal (queen_kv_set (c, bucket, "big", value, 0, -1, NULL, &err), QUEEN_ERR_TOO_LARGE);
    free (value);
    assert_int_equal (queen_kv_set (c, bucket, "k", "{bad", 0, -1, NULL, &err), QUEEN_ERR_BAD_REQUEST);
    assert_non_null (strstr (err.message, "Invalid JSON"));
    assert_int_equal (queen_kv_get (c, NULL, "k", &e, &err), QUEEN_ERR_ARG);
    queen_error_clear (&err);
    queen_destroy (&c);
}

static void
test_timers (void **state)
{
    (void) state;
    queen_client_t *c = s_client (0);
    queen_error_t err = { 0 };
    const char *q = s_name ("timers");
    char id [256];
    bool created = false;
    char timer_id [128];
    snprintf (timer_id, sizeof timer_id, "%s-t1", s_prefix);
    queen_timer_t t = { .timer_id = timer_id, .queue = q, .payload = "{\"kind\":\"cart\"}",
                        .delay_ms = 3600000 };
    assert_int_equal (queen_timer_schedule (c, &t, id, &created, &err), QUEEN_OK);
    assert_string_equal (id, timer_id);
    assert_true (created);
    assert_int_equal (queen_timer_schedule (c, &t, id, &created, &err), QUEEN_OK);
    assert_false (created);
    //  The same id for a different timer
    t.payload = "2";
    assert_int_equal (queen_timer_schedule (c, &t, id, &created, &err), QUEEN_ERR_CONFLICT);
    queen_response_t resp = { 0 };
    assert_int_equal (queen_timer_get (c, timer_id, &resp, &err), QUEEN_OK);
    assert_non_null (strstr (resp.body, "\"status\":\"pending\""));
    assert_int_equal (queen_timer_list (c, q, NULL, 10, &resp, &err), QUEEN_OK);
    assert_non_null (strstr (resp.body, timer_id));
    assert_int_equal (queen_timer_cancel (c, timer_id, &err), QUEEN_OK);
    assert_int_equal (queen_timer_cancel (c, timer_id, &err), QUEEN_ERR_NOT_FOUND);
    assert_int_equal (queen_timer_get (c, timer_id, &resp, &err), QUEEN_ERR_NOT_FOUND);
    assert_int_equal (resp.status, 404);
    queen_response_free (&resp);
    //  A broker-made id; one that fires at once becomes a message
    queen_timer_t now = { .queue = q, .payload = "{\"fired\":true}", .fire_at = "2020-01-01T00:00:00Z" };
    assert_int_equal (queen_timer_schedule (c, &now, id, &created, &err), QUEEN_OK);
    assert_int_equal (strlen (id), 36);
    queen_batch_t b;
    assert_int_equal (queen_pop (c, q, &(queen_pop_opts_t) { .wait = true, .timeout_ms = 5000 }, &b, &err),
                      QUEEN_OK);
    assert_int_equal (b.count, 1);
    assert_string_equal (b.messages [0].data, "{\"fired\":true}");
    queen_batch_free (&b);
    //  Broker-side validation
    queen_timer_t both = { .queue = q, .payload = "1", .fire_at = "not a time" };
    assert_int_equal (queen_timer_schedule (c, &both, NULL, NULL, &err), QUEEN_ERR_BAD_REQUEST);
    assert_int_equal (queen_timer_schedule (c, &(queen_timer_t) { .queue = q }, NULL, NULL, &err), QUEEN_ERR_ARG);
    queen_error_clear (&err);
    queen_destroy (&c);
}

static void
test_raw_requests (void **state)
{
    (void) state;
    queen_client_t *c = s_client (0);
    queen_error_t err = { 0 };
    queen_response_t resp = { 0 };
    char path [256];
    snprintf (path, sizeof path, "/api/v1/resources/queues/%s", s_name ("none"));
    assert_int_equal (queen_request (c, "GET", path, NULL, &resp, &err), QUEEN_ERR_NOT_FOUND);
    assert_int_equal (err.http_status, 404);
    assert_string_equal (err.message, "Queue not found");
    assert_int_equal (resp.status, 404);
    assert_int_equal (queen_request (c, "GET", "/api/v1/resources/overview", NULL, &resp, &err), QUEEN_OK);
    assert_int_equal (resp.status, 200);
    assert_int_equal (err.code, QUEEN_OK);
    assert_int_equal (queen_request (c, "POST", "/api/v1/configure", "{\"queue\":", &resp, &err),
                      QUEEN_ERR_BAD_REQUEST);
    assert_non_null (strstr (err.message, "Invalid JSON"));
    assert_int_equal (queen_request (c, "GET", "no-slash", NULL, &resp, &err), QUEEN_ERR_ARG);
    queen_response_free (&resp);
    queen_error_clear (&err);
    queen_destroy (&c);
}

//  Runs queen_poll/queen_wait until `slot` finished (at most ~10 s).
static int
s_drive (queen_client_t *c, int want)
{
    int got = 0;
    for (int i = 0; i < 1000 && got < want; i++) {
        queen_slot_t *done [4];
        int n = queen_poll (c, done, 4);
        got += n;
        if (got < want)
            queen_wait (c, 10);
    }
    return got;
}

static void
test_slots (void **state)
{
    (void) state;
    queen_client_t *c = s_client (0);
    const char *q = s_name ("slots");
    int owner_a, owner_b;
    queen_slot_t *a = queen_slot_new (c, &owner_a);
    queen_slot_t *b = queen_slot_new (c, &owner_b);
    assert_ptr_equal (queen_slot_owner (a), &owner_a);
    //  A long-poll on one slot, a push on the other wakes it
    char path [256];
    snprintf (path, sizeof path, "/api/v1/pop/queue/%s?wait=true&timeout=5000&batch=5", q);
    assert_int_equal (queen_slot_start (a, "GET", path, NULL, 0, 10000), QUEEN_OK);
    assert_true (queen_slot_busy (a));
    assert_int_equal (queen_slot_start (a, "GET", path, NULL, 0, 10000), QUEEN_ERR_ARG);
    char body [256];
    snprintf (body, sizeof body, "{\"items\":[{\"queue\":\"%s\",\"payload\":{\"s\":1}}]}", q);
    assert_int_equal (queen_slot_start (b, "POST", "/api/v1/push", body, strlen (body), 10000), QUEEN_OK);
    assert_int_equal (s_drive (c, 2), 2);
    assert_false (queen_slot_busy (a));
    long status = 0;
    const char *resp;
    size_t len;
    assert_int_equal (queen_slot_result (b, &status, &resp, &len), QUEEN_OK);
    assert_int_equal (status, 201);
    assert_int_equal (queen_slot_result (a, &status, &resp, &len), QUEEN_OK);
    assert_int_equal (status, 200);
    assert_non_null (strstr (resp, "{\"s\":1}"));
    assert_false (queen_slot_maybe_sent (a));
    //  A 404 is a result, described with its body
    assert_int_equal (queen_slot_start (a, "GET", "/api/v1/resources/queues/no-such-queue-here", NULL, 0, 0), QUEEN_OK);
    assert_int_equal (s_drive (c, 1), 1);
    assert_int_equal (queen_slot_result (a, &status, NULL, NULL), QUEEN_ERR_NOT_FOUND);
    assert_int_equal (status, 404);
    assert_non_null (strstr (queen_slot_error (a), "status 404: {\"error\":\"Queue not found\"}"));
    //  Cancel a long-poll in flight
    assert_int_equal (queen_slot_start (a, "GET", path, NULL, 0, 10000), QUEEN_OK);
    queen_slot_cancel (a);
    assert_false (queen_slot_busy (a));
    queen_slot_destroy (&a);
    queen_slot_destroy (&b);
    assert_null (a);
    queen_destroy (&c);

    //  A dead broker: a transport error that may have been sent
    queen_error_t err = { 0 };
    c = queen_new (&(queen_options_t) { .url = s_dead }, &err);
    queen_slot_t *d = queen_slot_new (c, NULL);
    assert_int_equal (queen_slot_start (d, "GET", "/health", NULL, 0, 2000), QUEEN_OK);
    assert_int_equal (s_drive (c, 1), 1);
    assert_int_equal (queen_slot_result (d, &status, NULL, NULL), QUEEN_ERR_CONNECT);
    assert_int_equal (status, 0);
    assert_true (queen_slot_maybe_sent (d));
    assert_true (strlen (queen_slot_error (d)) > 0);
    queen_slot_clear_maybe_sent (d);
    assert_false (queen_slot_maybe_sent (d));
    assert_int_equal (queen_slot_start (d, "GET", "no-slash", NULL, 0, 0), QUEEN_ERR_ARG);
    queen_slot_destroy (&d);
    queen_destroy (&c);
}

int
main (void)
{
    s_url = getenv ("QUEEN_URL");
    s_dead = getenv ("QUEEN_DEAD_URL");
    if (!s_url || !s_dead) {
        fprintf (stderr, "test_libqueen: set QUEEN_URL and QUEEN_DEAD_URL\n");
        return 2;
    }
    char u [37];
    queen_uuid7 (u);
    snprintf (s_prefix, sizeof s_prefix, "lq-%.8s", u + 28);
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_options_and_strings),
        cmocka_unit_test (test_broker_down),
        cmocka_unit_test (test_timeout),
        cmocka_unit_test (test_push_pop_ack),
        cmocka_unit_test (test_push_batches_and_errors),
        cmocka_unit_test (test_longpoll),
        cmocka_unit_test (test_ack_and_lease_errors),
        cmocka_unit_test (test_transaction),
        cmocka_unit_test (test_consume),
        cmocka_unit_test (test_kv),
        cmocka_unit_test (test_timers),
        cmocka_unit_test (test_raw_requests),
        cmocka_unit_test (test_slots),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
