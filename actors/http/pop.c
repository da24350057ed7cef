/*  actors/http/pop.c - pops, long-poll and peer notify (contract
    §3.7, §3.8, §3.9, §3.21)
    A pop is one queen.pop (or queen.pop_ns) call on pg_writer with a fresh
    lease id; the rows become the §3.7 response, an empty outcome a 204.
    With wait=true an empty pop is parked in the codec's park table
    (actors/park/park.h, same thread) until a commit on its queue, the
    instant the database said something becomes claimable (next_due), a
    safety-net recheck, or its deadline; then the park calls back to run
    it again (qn_http_pop_wake) or to answer 204 (qn_http_pop_expire).
    Receives  the pop routes and POST /internal/api/notify; park callbacks
    Sends     QN_MSG_PG_EXEC (QN_SQL_POP, QN_SQL_POP_NS) to pg_writer;
              "committed" events (notify)
    Owns      per request: the parsed pop (ctx->state); whether it is
              parked (the park table holds the rest)
    Failure   bad parameters -> 400 naming the parameter; database down or
              slow -> 503 at once (pops fail fast); lock contention -> empty;
              other database errors -> qn_http_reply_pg_error; an encrypted
              payload that does not decrypt -> 500 naming the message
              (never the stored bytes)
*/
#include "actors/http/codec.h"
#include "actors/park/park.h"
#include "actors/pg/statements.h"
#include "wire/crypto.h"
#include "wire/ids.h"
#include "wire/json.h"
#include "wire/mp.h"
#include "wire/msg_committed.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define S_NAME_MAX       255
#define S_BATCH_MAX      10000
#define S_PARTITIONS_MAX 1000
#define S_QUEUE_MODE     "__QUEUE_MODE__"

//  Result columns of queen.pop / queen.pop_ns.
enum {
    C_QUEUE, C_PID, C_PARTITION, C_SEQ, C_CREATED, C_TXN, C_TRACE, C_PRODUCER,
    C_PAYLOAD, C_ENCRYPTED, C_LEASE_EXPIRES, C_NEXT_DUE, C_COUNT_
};

//  One pop request (ctx->state).
typedef struct {
    char *queue;                //  Owned; NULL for a namespace pop
    char *partition;            //  Owned, or NULL (any)
    char *ns;                   //  Owned, or NULL
    char *task;                 //  Owned, or NULL
    char *group;                //  Owned
    char *sub_mode;             //  Owned, or NULL
    char *sub_from;             //  Owned, or NULL
    int64_t batch;
    int64_t partitions;
    bool auto_ack;
    bool wait;
    int64_t deadline_ms;        //  Monotonic: request arrival + timeout
    int64_t started_us;         //  Monotonic: the pop in flight was sent
    char lease [QN_ID_STR_LEN + 1];
    bool parked;                //  In the park table (ctx->on_cancel set)
} s_pop_t;

static void s_pop_run (qn_codec_t *codec, qn_http_ctx_t *ctx, bool woken);


// ------------------------------------------------------------------ state
static void
s_pop_free (void *state)
{
    s_pop_t *ps = state;
    free (ps->queue);
    free (ps->partition);
    free (ps->ns);
    free (ps->task);
    free (ps->group);
    free (ps->sub_mode);
    free (ps->sub_from);
    free (ps);
}

//  Tells the park table that a woken pop ended without parking again.
static void
s_settled (qn_codec_t *codec, uint64_t ctx_id, bool found)
{
    qn_park_settled (qn_codec_park (codec), ctx_id, found);
}

// ------------------------------------------------------------------ parameters
//  v (len bytes) checked as a name into a copy in out. Answers 400 naming
//  `what` and returns -1 when too long or not UTF-8.
static int
s_check_name (qn_http_ctx_t *ctx, const char *v, size_t len, const char *what, char **out)
{
    if (len > S_NAME_MAX) {
        qn_http_reply_errorf (ctx, 400, "%s must be at most %d bytes", what, S_NAME_MAX);
        return -1;
    }
    if (!qn_utf8_valid (v, len)) {
        qn_http_reply_errorf (ctx, 400, "%s must be valid UTF-8", what);
        return -1;
    }
    *out = qn_strndup (v, len);
    return 0;
}

//  A string query parameter checked as a name: NULL when absent or empty,
//  else a copy. Answers 400 naming `what` and returns -1 when too long or
//  not UTF-8.
static int
s_param_name (qn_http_ctx_t *ctx, const char *name, const char *what, char **out)
{
    size_t len = 0;
    const char *v = qn_url_param (&ctx->url, name, &len);
    *out = NULL;
    if (!v || !len)
        return 0;
    return s_check_name (ctx, v, len, what, out);
}

//  A path parameter checked as a name (never empty: routing needs a segment).
static int
s_path_name (qn_http_ctx_t *ctx, int i, const char *what, char **out)
{
    *out = NULL;
    return s_check_name (ctx, qn_http_param (ctx, i), ctx->param_len [i], what, out);
}

//  The §3.7 query parameters into ps. Returns 0, or -1 after a 400.
static int
s_parse_query (qn_codec_t *codec, qn_http_ctx_t *ctx, s_pop_t *ps)
{
    const qn_config_t *cfg = qn_codec_config (codec);
    const qn_url_t *url = &ctx->url;
    //  Unparsable integers mean "use the default" (§1.5).
    int64_t batch = qn_url_param_int (url, "batch", cfg->default_batch_size, NULL);
    if (batch > S_BATCH_MAX) {
        qn_http_reply_errorf (ctx, 400, "batch must be between 1 and %d", S_BATCH_MAX);
        return -1;
    }
    ps->batch = batch < 1 ? 1 : batch;
    int64_t timeout = qn_url_param_int (url, "timeout", cfg->default_timeout_ms, NULL);
    if (timeout < 0) {
        qn_http_reply_error (ctx, 400, "timeout must be a non-negative number of milliseconds");
        return -1;
    }
    if (timeout > cfg->max_wait_ms)
        timeout = cfg->max_wait_ms;
    const char *pname = qn_url_param (url, "partitions", NULL) ? "partitions" : "maxPartitions";
    int64_t parts = qn_url_param_int (url, pname, 1, NULL);
    ps->partitions = parts < 1 ? 1 : parts > S_PARTITIONS_MAX ? S_PARTITIONS_MAX : parts;
    ps->wait = qn_url_param_bool (url, "wait", false);
    ps->auto_ack = qn_url_param_bool (url, "autoAck", false);
    ps->deadline_ms = ctx->started_ms + timeout;
    if (s_param_name (ctx, "consumerGroup", "consumerGroup", &ps->group)
    ||  s_param_name (ctx, "subscriptionMode", "subscriptionMode", &ps->sub_mode)
    ||  s_param_name (ctx, "subscriptionFrom", "subscriptionFrom", &ps->sub_from))
        return -1;
    if (!ps->group)
        ps->group = qn_strdup (S_QUEUE_MODE);
    if (!ps->sub_mode && cfg->default_subscription_mode && cfg->default_subscription_mode [0])
        ps->sub_mode = qn_strdup (cfg->default_subscription_mode);
    return 0;
}

// ------------------------------------------------------------------ rows
static const msgpack_object *
s_col (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    static const msgpack_object nil = { .type = MSGPACK_OBJECT_NIL };
    const msgpack_object *row = &res->rows [r];
    if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size <= c)
        return &nil;
    return &row->via.array.ptr [c];
}

static bool
s_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c, int64_t *out)
{
    const msgpack_object *o = s_col (res, r, c);
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
        *out = (int64_t) o->via.u64;
    else
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        *out = o->via.i64;
    else
        return false;
    return true;
}

//  Writes key: the string column, or null.
static void
s_jw_col_str (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const msgpack_object *o = s_col (res, r, c);
    qn_jw_key (w, key);
    if (o->type == MSGPACK_OBJECT_STR)
        qn_jw_strn (w, o->via.str.ptr, o->via.str.size);
    else
        qn_jw_null (w);
}

//  True when p is well-formed UTF-8 (no overlongs, no surrogates, at most
//  U+10FFFF).
static bool
s_utf8_ok (const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; ) {
        unsigned c = p [i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; }
        else
        if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; }
        else
        if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; }
        else
            return false;
        if (len - i <= n)
            return false;
        for (size_t k = 1; k <= n; k++) {
            if ((p [i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p [i + k] & 0x3F);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF))
        ||  (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

//  Writes "data": the payload bytes verbatim when they are one JSON value
//  (every HTTP push), decrypted when stored encrypted (§2.10) with the key
//  ring of QUEEN_ENCRYPTION_KEY and QUEEN_ENCRYPTION_OLD_KEYS, built into
//  *ring on first need. A payload that is not JSON (an SQS body, a Kafka
//  value) is written as a JSON string: its text when it is UTF-8, else the
//  base64 of its bytes with "dataEncoding": "base64" beside (docs/sqs.md).
//  doc: a parse document reused across the rows. Returns 0, or -1 with the
//  reason in why when an encrypted payload does not open (no such key,
//  altered): nothing usable is written then.
static int
s_jw_payload (qn_codec_t *codec, qn_jw_t *w, const qn_pg_result_t *res, uint32_t r,
              qn_buf_t *scratch, qn_crypto_keys_t **ring, qn_json_doc_t *doc, char *why,
              size_t why_len)
{
    const msgpack_object *o = s_col (res, r, C_PAYLOAD);
    const msgpack_object *enc = s_col (res, r, C_ENCRYPTED);
    const char *p = NULL;
    size_t len = 0;
    if (o->type == MSGPACK_OBJECT_BIN) {
        p = o->via.bin.ptr;
        len = o->via.bin.size;
    }
    else
    if (o->type == MSGPACK_OBJECT_STR) {
        p = o->via.str.ptr;
        len = o->via.str.size;
    }
    if (!p || !len) {
        qn_jw_knull (w, "data");
        return 0;
    }
    if (enc->type == MSGPACK_OBJECT_BOOLEAN && enc->via.boolean) {
        if (!*ring) {
            //  The settings were checked at start: this load cannot fail.
            const qn_config_t *cfg = qn_codec_config (codec);
            *ring = qn_crypto_keys_new ();
            qn_crypto_keys_load (*ring, cfg->queen_encryption_key, cfg->queen_encryption_old_keys,
                                 NULL, 0);
        }
        if (qn_crypto_open (*ring, p, len, scratch, why, why_len, NULL))
            return -1;
        p = scratch->data? scratch->data: "";
        len = scratch->len;
    }
    if (len > 0 && qn_json_parse (doc, p, len, 0) == 0) {
        qn_jw_kraw (w, "data", p, len);
        return 0;
    }
    qn_jw_key (w, "data");
    if (len > 0 && s_utf8_ok ((const unsigned char *) p, len)) {
        qn_jw_strn (w, p, len);
        return 0;
    }
    size_t cap = sodium_base64_ENCODED_LEN (len, sodium_base64_VARIANT_ORIGINAL);
    char *b64 = qn_malloc (cap);
    sodium_bin2base64 (b64, cap, (const unsigned char *) p, len, sodium_base64_VARIANT_ORIGINAL);
    qn_jw_strn (w, b64, cap - 1);
    free (b64);
    qn_jw_kstr (w, "dataEncoding", "base64");
    return 0;
}

//  The §3.7 body for res (at least one message row) into b. Returns the
//  number of messages, or -1 when a payload did not decrypt: *bad is its
//  row, why the reason, and b holds nothing usable.
static int64_t
s_write_messages (qn_codec_t *codec, const s_pop_t *ps, const qn_pg_result_t *res, qn_buf_t *b,
                  uint32_t *bad, char *why, size_t why_len)
{
    char id [QN_ID_STR_LEN + 1], pid_text [QN_ID_STR_LEN + 1], ts [32];
    const char *lease = ps->auto_ack ? "" : ps->lease;
    int64_t pid = 0, prev_pid = INT64_MIN, seq, created;
    uint32_t claimed = 0, count = 0;
    for (uint32_t r = 0; r < res->row_count; r++)
        if (s_col_int (res, r, C_PID, &pid) && pid != prev_pid) {
            claimed++;
            prev_pid = pid;
        }
    s_col_int (res, 0, C_PID, &pid);
    qn_id_format (QN_ID_PARTITION, pid, pid_text);
    qn_jw_t w;
    qn_jw_init (&w, b);
    qn_jw_obj (&w);
    qn_jw_kbool (&w, "success", true);
    s_jw_col_str (&w, "queue", res, 0, C_QUEUE);
    s_jw_col_str (&w, "partition", res, 0, C_PARTITION);
    qn_jw_kstr (&w, "partitionId", pid_text);
    qn_jw_kstr (&w, "leaseId", lease);
    qn_jw_kstr (&w, "consumerGroup", ps->group);
    qn_jw_kint (&w, "partitionsClaimed", claimed);
    qn_jw_key (&w, "messages");
    qn_jw_arr (&w);
    qn_buf_t scratch = QN_BUF_INIT;
    qn_crypto_keys_t *ring = NULL;
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    int64_t written = 0;
    for (uint32_t r = 0; r < res->row_count && written >= 0; r++) {
        if (!s_col_int (res, r, C_SEQ, &seq) || !s_col_int (res, r, C_PID, &pid))
            continue;
        qn_id_format (QN_ID_MESSAGE, seq, id);
        qn_id_format (QN_ID_PARTITION, pid, pid_text);
        qn_jw_obj (&w);
        qn_jw_kstr (&w, "id", id);
        const msgpack_object *txn = s_col (res, r, C_TXN);
        if (txn->type == MSGPACK_OBJECT_STR) {
            qn_jw_key (&w, "transactionId");
            qn_jw_strn (&w, txn->via.str.ptr, txn->via.str.size);
        }
        else
            qn_jw_kstr (&w, "transactionId", id);
        s_jw_col_str (&w, "traceId", res, r, C_TRACE);
        if (s_jw_payload (codec, &w, res, r, &scratch, &ring, &doc, why, why_len)) {
            *bad = r;
            written = -1;
            break;
        }
        s_jw_col_str (&w, "producerSub", res, r, C_PRODUCER);
        if (s_col_int (res, r, C_CREATED, &created)) {
            qn_ts_us (created, ts);
            qn_jw_kstr (&w, "createdAt", ts);
        }
        else
            qn_jw_knull (&w, "createdAt");
        qn_jw_kstr (&w, "partitionId", pid_text);
        s_jw_col_str (&w, "partition", res, r, C_PARTITION);
        qn_jw_kstr (&w, "leaseId", lease);
        qn_jw_kstr (&w, "consumerGroup", ps->group);
        qn_jw_obj_end (&w);
        count++;
    }
    qn_buf_free (&scratch);
    qn_json_doc_free (&doc);
    qn_crypto_keys_destroy (&ring);
    if (written < 0)
        return -1;
    qn_jw_arr_end (&w);
    qn_jw_obj_end (&w);
    return count;
}

//  A payload that does not decrypt is never sent as stored (§2.10): the
//  whole pop answers 500 naming the message, with the ids a client needs
//  to ack it as failed. The batch stays leased until its lease expires
//  (docs/security.md, "Payload encryption").
static void
s_reply_undecryptable (qn_http_ctx_t *ctx, const s_pop_t *ps, const qn_pg_result_t *res,
                       uint32_t r, const char *why)
{
    char id [QN_ID_STR_LEN + 1] = "", pid_text [QN_ID_STR_LEN + 1] = "";
    int64_t seq = 0, pid = 0;
    if (s_col_int (res, r, C_SEQ, &seq))
        qn_id_format (QN_ID_MESSAGE, seq, id);
    if (s_col_int (res, r, C_PID, &pid))
        qn_id_format (QN_ID_PARTITION, pid, pid_text);
    const msgpack_object *q = s_col (res, r, C_QUEUE), *part = s_col (res, r, C_PARTITION);
    int qlen = q->type == MSGPACK_OBJECT_STR ? (int) q->via.str.size : 0;
    int plen = part->type == MSGPACK_OBJECT_STR ? (int) part->via.str.size : 0;
    const char *qs = qlen ? q->via.str.ptr : "", *ps_ = plen ? part->via.str.ptr : "";
    qn_warn ("payload decryption failed: queue=%.*s partition=%.*s message=%s reason=%s",
             qlen, qs, plen, ps_, id, why);
    qn_count (qn_codec_kernel (ctx->codec), "payload_decrypt_failures", 1);
    qn_buf_t msg = QN_BUF_INIT, b = QN_BUF_INIT;
    qn_buf_printf (&msg, "Payload decryption failed for message %s (queue %.*s, partition %.*s): %s",
                   id, qlen, qs, plen, ps_, why);
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_key (&w, "error");
    qn_jw_strn (&w, msg.data, msg.len);
    qn_jw_kstr (&w, "messageId", id);
    const msgpack_object *txn = s_col (res, r, C_TXN);
    if (txn->type == MSGPACK_OBJECT_STR) {
        qn_jw_key (&w, "transactionId");
        qn_jw_strn (&w, txn->via.str.ptr, txn->via.str.size);
    }
    else
        qn_jw_kstr (&w, "transactionId", id);
    qn_jw_kstr (&w, "partitionId", pid_text);
    s_jw_col_str (&w, "queue", res, r, C_QUEUE);
    s_jw_col_str (&w, "partition", res, r, C_PARTITION);
    qn_jw_kstr (&w, "leaseId", ps->auto_ack ? "" : ps->lease);
    qn_jw_kstr (&w, "consumerGroup", ps->group);
    qn_jw_obj_end (&w);
    qn_http_reply_json (ctx, 500, b.data, b.len);
    qn_buf_free (&b);
    qn_buf_free (&msg);
}

// ------------------------------------------------------------------ parking
//  The client went away while parked; the codec frees ctx right after.
static void
s_on_cancel_parked (qn_http_ctx_t *ctx)
{
    s_pop_t *ps = ctx->state;
    ps->parked = false;
    qn_park_cancel (qn_codec_park (ctx->codec), ctx->id);
}

//  Ends the parked state of ctx (woken or expired by the park table).
static void
s_unpark (qn_http_ctx_t *ctx)
{
    s_pop_t *ps = ctx->state;
    ps->parked = false;
    ctx->on_cancel = NULL;
}

//  Parks an empty long-poll. ctx may be answered (and freed) before this
//  returns: the park wakes a pop that may have missed a commit at once.
static void
s_park (qn_codec_t *codec, qn_http_ctx_t *ctx, const qn_pg_result_t *res)
{
    s_pop_t *ps = ctx->state;
    int64_t due = 0;
    if (!(res && res->row_count && s_col_int (res, 0, C_NEXT_DUE, &due)))
        due = 0;
    qn_park_wait_t w = {
        .id = ctx->id, .tenant = ctx->tenant, .queue = ps->queue, .partition = ps->partition,
        .ns = ps->ns, .task = ps->task, .group = ps->group, .deadline_ms = ps->deadline_ms,
        .next_due_us = due, .started_us = ps->started_us
    };
    ps->parked = true;
    ctx->on_cancel = s_on_cancel_parked;
    if (qn_park_wait (qn_codec_park (codec), &w) != QN_PARK_PARKED) {
        //  Deadline passed or draining: no callback came for it.
        s_unpark (ctx);
        qn_http_reply_empty (ctx, 204);
    }
}

// ------------------------------------------------------------------ the pop
static bool
s_db_unavailable (const qn_pg_result_t *res)
{
    const char *s = res->sqlstate;
    return res->timed_out || !strncmp (s, "08", 2) || !strncmp (s, "57", 2)
        || !strncmp (s, "53", 2);
}

//  Lock contention: the client would rather see an empty pop (§3.7).
static bool
s_transient (const qn_pg_result_t *res)
{
    return !strncmp (res->sqlstate, "40", 2) || !strcmp (res->sqlstate, "55P03");
}

//  arg = ctx_id << 1 | woken: a woken pop must report back even when
//  its client is gone.
static void
s_on_popped (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    uint64_t id = (uint64_t) (uintptr_t) arg >> 1;
    bool woken = (uintptr_t) arg & 1;
    if (!ctx) {
        if (woken)
            s_settled (codec, id, false);
        return;
    }
    s_pop_t *ps = ctx->state;
    int64_t seq;
    bool empty = !res->ok || !res->row_count || !s_col_int (res, 0, C_SEQ, &seq);
    if (!res->ok && !s_transient (res)) {
        if (woken)
            s_settled (codec, id, false);
        if (s_db_unavailable (res))
            qn_http_reply_error (ctx, 503, "database unavailable");
        else
            qn_http_reply_pg_error (ctx, res);
        return;
    }
    if (empty) {
        //  Parking again reports a woken pop back to the park table.
        if (ps->wait && !qn_codec_draining (codec) && qn_now_ms () < ps->deadline_ms)
            s_park (codec, ctx, res->ok ? res : NULL);
        else {
            if (woken)
                s_settled (codec, id, false);
            qn_http_reply_empty (ctx, 204);
        }
        return;
    }
    qn_buf_t b = QN_BUF_INIT;
    uint32_t bad = 0;
    char why [256] = "";
    int64_t n = s_write_messages (codec, ps, res, &b, &bad, why, sizeof why);
    if (woken)
        s_settled (codec, id, true);
    if (n < 0)
        s_reply_undecryptable (ctx, ps, res, bad, why);
    else {
        qn_count (qn_codec_kernel (codec), "messages_popped", n);
        qn_http_reply_json (ctx, 200, b.data, b.len);
    }
    qn_buf_free (&b);
}

//  Runs the pop once (a fresh lease id each time).
static void
s_pop_run (qn_codec_t *codec, qn_http_ctx_t *ctx, bool woken)
{
    s_pop_t *ps = ctx->state;
    qn_uuid_v4 (ps->lease);
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_cstr (&args, ps->queue ? ps->queue : ps->ns);
    qn_pg_args_cstr (&args, ps->queue ? ps->partition : ps->task);
    qn_pg_args_cstr (&args, ps->group);
    qn_pg_args_cstr (&args, ps->sub_mode);
    qn_pg_args_cstr (&args, ps->sub_from);
    qn_pg_args_int (&args, (int32_t) ps->batch);
    qn_pg_args_int (&args, (int32_t) ps->partitions);
    qn_pg_args_cstr (&args, ps->auto_ack ? NULL : ps->lease);
    qn_pg_args_bool (&args, ps->auto_ack);
    ps->started_us = qn_now_us ();
    uint64_t arg = ctx->id << 1 | (woken ? 1 : 0);
    int rc = qn_codec_exec_args (codec, ctx, "pg_writer", ps->queue ? QN_SQL_POP : QN_SQL_POP_NS,
                                 NULL, &args, s_on_popped, (void *) (uintptr_t) arg);
    qn_pg_args_free (&args);
    if (rc) {
        if (woken)
            s_settled (codec, ctx->id, false);
        qn_http_reply_error (ctx, 503, "database unavailable");
    }
}

//  Common start of the three pop routes: ps (ctx->state) holds the names.
static void
s_pop_start (qn_codec_t *codec, qn_http_ctx_t *ctx, s_pop_t *ps)
{
    if (s_parse_query (codec, ctx, ps))
        return;
    if (ps->partition)
        ps->partitions = 1;
    if (qn_codec_pop_maintenance (codec)) {
        qn_http_reply_empty (ctx, 204);
        return;
    }
    if (!qn_codec_db_up (codec)) {
        qn_http_reply_error (ctx, 503, "database unavailable");
        return;
    }
    s_pop_run (codec, ctx, false);
}

//  GET /api/v1/pop/queue/:queue
static void
s_pop_queue (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_pop_t *ps = qn_zalloc (sizeof *ps);
    ctx->state = ps;
    ctx->state_free = s_pop_free;
    if (s_path_name (ctx, 0, "queue name", &ps->queue))
        return;
    s_pop_start (codec, ctx, ps);
}

//  GET /api/v1/pop/queue/:queue/partition/:partition (`partitions` ignored)
static void
s_pop_partition (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_pop_t *ps = qn_zalloc (sizeof *ps);
    ctx->state = ps;
    ctx->state_free = s_pop_free;
    if (s_path_name (ctx, 0, "queue name", &ps->queue)
    ||  s_path_name (ctx, 1, "partition name", &ps->partition))
        return;
    s_pop_start (codec, ctx, ps);
}

//  GET /api/v1/pop?namespace=&task= : wildcard pop over the matching
//  queues, higher priority first (queen.pop_ns).
static void
s_pop_namespace (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_pop_t *ps = qn_zalloc (sizeof *ps);
    ctx->state = ps;
    ctx->state_free = s_pop_free;
    if (s_param_name (ctx, "namespace", "namespace", &ps->ns)
    ||  s_param_name (ctx, "task", "task", &ps->task))
        return;
    if (!ps->ns && !ps->task) {
        qn_http_reply_error (ctx, 400, "namespace or task is required");
        return;
    }
    s_pop_start (codec, ctx, ps);
}

// ------------------------------------------------------------------ notify
//  POST /internal/api/notify {queue, partition}: wakes long-polls waiting
//  on that queue on this broker (§3.21).
static void
s_notify (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (qn_http_parse_body (ctx, &doc)) {
        qn_json_doc_free (&doc);
        return;
    }
    qn_buf_t queue = QN_BUF_INIT, part = QN_BUF_INIT;
    int qt = qn_json_type (&doc, 0) == QN_JSON_OBJECT ? qn_json_get (&doc, 0, "queue") : -1;
    int pt = qn_json_type (&doc, 0) == QN_JSON_OBJECT ? qn_json_get (&doc, 0, "partition") : -1;
    if (qt < 0 || qn_json_str (&doc, qt, &queue) != 0)
        qn_http_reply_error (ctx, 400, "queue is required");
    else
    if (queue.len > 255 || (pt >= 0 && qn_json_type (&doc, pt) == QN_JSON_STRING
                            && qn_json_str (&doc, pt, &part) == 0 && part.len > 255))
        qn_http_reply_error (ctx, 400, "queue and partition must be at most 255 bytes");
    else {
        //  With a partition, only pops waiting on it (or on any) wake.
        qn_msg_committed_t m = {
            .tenant = ctx->tenant, .tenant_len = strlen (ctx->tenant),
            .queue = queue.data, .queue_len = queue.len,
            .partition = part.len ? part.data : NULL, .partition_len = part.len
        };
        msgpack_sbuffer b;
        msgpack_sbuffer_init (&b);
        qn_msg_committed_encode (&b, &m);
        qn_publish (qn_codec_kernel (codec), "committed", QN_MSG_COMMITTED, b.data, b.size);
        msgpack_sbuffer_destroy (&b);
        qn_http_reply_json (ctx, 200, "{\"status\":\"ok\"}", 15);
    }
    qn_buf_free (&queue);
    qn_buf_free (&part);
    qn_json_doc_free (&doc);
}

// ------------------------------------------------------------------ park callbacks
//  The park table woke a parked pop (it is now its list's scout): run it
//  again, unless its time is up.
void
qn_http_pop_wake (void *codec_, uint64_t id)
{
    qn_codec_t *codec = codec_;
    qn_http_ctx_t *ctx = qn_codec_request (codec, id);
    s_pop_t *ps = ctx ? ctx->state : NULL;
    if (!ps || !ps->parked) {
        //  Not ours to run (cannot happen: a client gone is cancelled):
        //  end its scouting so the list is not held up.
        s_settled (codec, id, false);
        return;
    }
    s_unpark (ctx);
    if (qn_codec_draining (codec) || qn_now_ms () >= ps->deadline_ms) {
        s_settled (codec, id, false);
        qn_http_reply_empty (ctx, 204);
    }
    else
        s_pop_run (codec, ctx, true);
}

//  The park table expired a parked pop (deadline, or the broker drains).
void
qn_http_pop_expire (void *codec_, uint64_t id)
{
    qn_http_ctx_t *ctx = qn_codec_request (codec_, id);
    s_pop_t *ps = ctx ? ctx->state : NULL;
    if (!ps || !ps->parked)
        return;
    s_unpark (ctx);
    qn_http_reply_empty (ctx, 204);
}

const qn_http_route_t qn_http_routes_pop [] = {
    { "GET", "/api/v1/pop/queue/:queue", s_pop_queue, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/pop/queue/:queue/partition/:partition", s_pop_partition, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/pop", s_pop_namespace, QN_AUTH_READ_WRITE },
    { "POST", "/internal/api/notify", s_notify, QN_AUTH_ADMIN },
    { NULL, NULL, NULL, 0 }
};
