/*  actors/http/state.c - state in the broker: the kv store and timers
    Our own extension routes (docs/http-api.md, "State: kv and timers"):
      PUT    /api/v1/kv/:bucket/:key[?ifVersion=&ttl=]   body = the value
      GET    /api/v1/kv/:bucket/:key
      DELETE /api/v1/kv/:bucket/:key[?ifVersion=]
      GET    /api/v1/kv/:bucket[?prefix=&after=&limit=]
      POST   /api/v1/timers
      GET    /api/v1/timers[?queue=&after=&limit=]
      GET    /api/v1/timers/:timerId
      DELETE /api/v1/timers/:timerId
    A handler validates the whole request (400 naming the field, 413 for
    an oversized value), then makes one call: PG_EXEC of a catalogue
    statement on pg_writer (schema/030_state.sql), and answers from its
    row. Values and timer payloads are stored byte-for-byte as sent (the
    raw JSON text) and given back the same way, except the payload of a
    timer whose queue is encrypted (§2.10, docs/security.md): it is sealed
    before it is stored, exactly as a push to that queue would be
    (actors/http/seal.c: at most one settings round trip first), with a
    keyed digest of its plaintext for the idempotent re-create, and
    decrypted for the answers of the read routes (a payload that does not
    decrypt is shown as stored, with a decryptionError).
    Receives  routed requests from codec_http, and their PG_RESULT replies
    Sends     QN_MSG_PG_EXEC to pg_writer (and, for a timer whose queue's
              encryption is not confirmed, to pg_reader through
              qn_hw_seal_then); QN_MSG_TIMER_ARM [id, due_us] to
              timer_wheel after creating a timer (so a short one fires on
              time without waiting for the wheel's next load)
    Owns      one small call state per timer request (its timerId; for a
              create, its validated body and sealed payload until sent)
    Failure   bad input gets a 4xx before any SQL runs; database errors map
              through qn_http_reply_pg_error; a call that cannot be sent
              answers 503
    Size      past STYLE §12's ~800 lines: eight routes sharing the input
              and result helpers at the top; the natural split is
              codec_http_kv.c / codec_http_timers.c if the riders of the
              second part make it grow.
*/
#include "actors/http/codec.h"
#include "actors/http/write.h"
#include "actors/pg/statements.h"
#include "wire/crypto.h"
#include "wire/ids.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_NAME_MAX      255                     //  Bytes of a bucket, key, queue, timerId...
#define S_VALUE_MAX     (1024 * 1024)           //  Bytes of a kv value
#define S_TTL_MAX       315360000               //  10 years, in seconds
#define S_DELAY_MAX_MS  (S_TTL_MAX * 1000LL)
#define S_LIMIT_DEFAULT 100
#define S_LIMIT_MAX     1000

//  What a timer request's callback needs.
typedef struct {
    char timer_id [S_NAME_MAX + 1];
    int64_t limit;              //  List: rows shown (one more was asked for)
} s_call_t;

// ------------------------------------------------------------------ input
//  Validates a name-like string (bucket, key, queue, timerId, ...): 1..255
//  bytes of UTF-8 without NUL (empty allowed when may_be_empty). Answers
//  400 naming `what` and returns false when it is not one.
static bool
s_name_ok (qn_http_ctx_t *ctx, const char *what, const char *s, size_t len, bool may_be_empty)
{
    if (!len && !may_be_empty)
        qn_http_reply_errorf (ctx, 400, "%s must not be empty", what);
    else
    if (len > S_NAME_MAX)
        qn_http_reply_errorf (ctx, 400, "%s must be at most %d bytes", what, S_NAME_MAX);
    else
    if (!qn_utf8_valid (s, len))
        qn_http_reply_errorf (ctx, 400, "%s must be valid UTF-8 without NUL characters", what);
    else
        return true;
    return false;
}

//  Path parameter i checked as a name; NULL after answering 400.
static const char *
s_param (qn_http_ctx_t *ctx, int i, const char *what, size_t *len)
{
    const char *s = qn_http_param (ctx, i);
    *len = s ? ctx->param_len [i] : 0;
    if (!s_name_ok (ctx, what, s ? s : "", *len, false))
        return NULL;
    return s;
}

//  Optional integer query parameter in [min, max]: *present tells whether
//  it was given (an empty value is absent). False after answering 400.
static bool
s_query_int (qn_http_ctx_t *ctx, const char *name, int64_t min, int64_t max,
             int64_t *out, bool *present)
{
    size_t len = 0;
    const char *v = qn_url_param (&ctx->url, name, &len);
    *present = v && len;
    if (!*present)
        return true;
    bool bad = false;
    *out = qn_url_param_int (&ctx->url, name, 0, &bad);
    if (bad || *out < min || *out > max) {
        qn_http_reply_errorf (ctx, 400, "%s must be an integer between %" PRId64 " and %" PRId64,
                              name, min, max);
        return false;
    }
    return true;
}

//  Optional text query parameter checked as a name (may be empty); NULL
//  with *ok true when absent, *ok false after answering 400.
static const char *
s_query_text (qn_http_ctx_t *ctx, const char *name, size_t *len, bool *ok)
{
    const char *v = qn_url_param (&ctx->url, name, len);
    *ok = !v || s_name_ok (ctx, name, v, *len, true);
    return v;
}

//  The unescaped text of string token tok into scratch (NUL-terminated).
//  Returns 0, 1 when it holds a NUL, -1 when tok is not a string.
static int
s_json_text (const qn_json_doc_t *doc, int tok, qn_buf_t *scratch)
{
    qn_buf_reset (scratch);
    return qn_json_str (doc, tok, scratch);
}

//  Member `key` of the body object; -1 when absent or null.
static int
s_field (const qn_json_doc_t *doc, const char *key)
{
    int tok = qn_json_get (doc, 0, key);
    return tok >= 0 && qn_json_is_null (doc, tok) ? -1 : tok;
}

// ------------------------------------------------------------------ packing and results
//  Column c of row r, or NULL.
static const msgpack_object *
s_col (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    if (!res->rows || r >= res->row_count)
        return NULL;
    const msgpack_object *row = &res->rows [r];
    if (row->type != MSGPACK_OBJECT_ARRAY || c >= row->via.array.size)
        return NULL;
    return &row->via.array.ptr [c];
}

static bool
s_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c, int64_t *out)
{
    const msgpack_object *o = s_col (res, r, c);
    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX)
        *out = (int64_t) o->via.u64;
    else
    if (o && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        *out = o->via.i64;
    else
        return false;
    return true;
}

//  Text or bytea column as a span; false when NULL or absent.
static bool
s_col_span (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char **p, size_t *len)
{
    const msgpack_object *o = s_col (res, r, c);
    if (o && o->type == MSGPACK_OBJECT_STR) {
        *p = o->via.str.ptr;
        *len = o->via.str.size;
        return true;
    }
    if (o && o->type == MSGPACK_OBJECT_BIN) {
        *p = o->via.bin.ptr;
        *len = o->via.bin.size;
        return true;
    }
    return false;
}

static bool
s_col_is (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char *s)
{
    const char *p;
    size_t len;
    return s_col_span (res, r, c, &p, &len) && len == strlen (s) && !memcmp (p, s, len);
}

//  "key": ts-ms of timestamp column c, or null.
static void
s_jw_ts (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    int64_t us;
    if (s_col_int (res, r, c, &us)) {
        char ts [32];
        qn_ts_ms (us, ts);
        qn_jw_kstr (w, key, ts);
    }
    else
        qn_jw_knull (w, key);
}

//  "key": the text column c, or null.
static void
s_jw_text (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const char *p;
    size_t len;
    qn_jw_key (w, key);
    if (s_col_span (res, r, c, &p, &len))
        qn_jw_strn (w, p, len);
    else
        qn_jw_null (w);
}

//  "key": the stored JSON text of column c (empty or NULL: null).
static void
s_jw_json (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const char *p;
    size_t len;
    if (s_col_span (res, r, c, &p, &len) && len)
        qn_jw_kraw (w, key, p, len);
    else
        qn_jw_knull (w, key);
}

//  "payload": a timer's stored payload (column c), decrypted when it is
//  stored sealed (column enc_c true, §2.10) as the message read route
//  does: one that does not open (its key is not configured, altered bytes)
//  is written as stored, followed by "decryptionError": the reason.
static void
s_jw_payload (qn_codec_t *codec, qn_jw_t *w, const qn_pg_result_t *res, uint32_t r,
              uint32_t c, uint32_t enc_c)
{
    const msgpack_object *enc = s_col (res, r, enc_c);
    const char *p;
    size_t len;
    if (!enc || enc->type != MSGPACK_OBJECT_BOOLEAN || !enc->via.boolean
    ||  !s_col_span (res, r, c, &p, &len) || !len) {
        s_jw_json (w, "payload", res, r, c);
        return;
    }
    qn_buf_t plain = QN_BUF_INIT;
    char why [256] = "";
    if (qn_crypto_open_json (qn_hw_keys (codec), p, len, &plain, why, sizeof why) == 0)
        qn_jw_kraw (w, "payload", plain.data, plain.len);
    else {
        qn_warn ("timer payload not decrypted: sent as stored: reason=%s", why);
        qn_count (qn_codec_kernel (codec), "payload_decrypt_failures", 1);
        qn_jw_kraw (w, "payload", p, len);
        qn_jw_kstr (w, "decryptionError", why);
    }
    qn_buf_free (&plain);
}

static void
s_reply_buf (qn_http_ctx_t *ctx, int status, qn_buf_t *b)
{
    qn_http_reply_json (ctx, status, b->data, b->len);
    qn_buf_free (b);
}

//  Sends the statement; answers 503 when it cannot be sent (then cb is not
//  called and `call` is freed).
static void
s_exec (qn_codec_t *codec, qn_http_ctx_t *ctx, uint32_t stmt, const qn_pg_args_t *args,
        qn_codec_result_fn *cb, s_call_t *call)
{
    int rc = qn_codec_exec_args (codec, ctx, "pg_writer", stmt, NULL, args, cb, call);
    if (rc) {
        free (call);
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
    }
}

//  Answers a failed call, or one with no row; true when it answered.
static bool
s_failed (qn_http_ctx_t *ctx, qn_pg_result_t *res)
{
    if (!res->ok)
        qn_http_reply_pg_error (ctx, res);
    else
    if (!res->row_count)
        qn_http_reply_error (ctx, 500, "the database returned no row");
    else
        return false;
    return true;
}

// ------------------------------------------------------------------ kv
//  Writes "bucket" (and "key") from the path.
static void
s_jw_bucket_key (qn_jw_t *w, qn_http_ctx_t *ctx, bool with_key)
{
    qn_jw_key (w, "bucket");
    qn_jw_strn (w, qn_http_param (ctx, 0), ctx->param_len [0]);
    if (with_key) {
        qn_jw_key (w, "key");
        qn_jw_strn (w, qn_http_param (ctx, 1), ctx->param_len [1]);
    }
}

static void
s_reply_conflict (qn_http_ctx_t *ctx, int64_t current)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kstr (&w, "error", "version conflict");
    s_jw_bucket_key (&w, ctx, true);
    qn_jw_kint (&w, "currentVersion", current);
    qn_jw_obj_end (&w);
    s_reply_buf (ctx, 409, &b);
}

//  Validates the path's bucket and key; false after answering.
static bool
s_bucket_key (qn_http_ctx_t *ctx, bool with_key)
{
    size_t len;
    return s_param (ctx, 0, "bucket", &len) && (!with_key || s_param (ctx, 1, "key", &len));
}

//  Starts the parameters of a kv call: tenant, bucket (and key).
static void
s_args_head (qn_pg_args_t *args, qn_http_ctx_t *ctx, bool with_key)
{
    qn_pg_args_init (args);
    qn_pg_args_cstr (args, ctx->tenant);
    qn_pg_args_str (args, qn_http_param (ctx, 0), ctx->param_len [0]);
    if (with_key)
        qn_pg_args_str (args, qn_http_param (ctx, 1), ctx->param_len [1]);
}

//  Row: status, version, expires_at, current_version.
static void
s_on_kv_put (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    (void) arg;
    if (!ctx || s_failed (ctx, res))
        return;
    int64_t version = 0;
    if (!s_col_is (res, 0, 0, "ok")) {
        s_col_int (res, 0, 3, &version);
        s_reply_conflict (ctx, version);
        return;
    }
    s_col_int (res, 0, 1, &version);
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    s_jw_bucket_key (&w, ctx, true);
    qn_jw_kint (&w, "version", version);
    s_jw_ts (&w, "expiresAt", res, 0, 2);
    qn_jw_obj_end (&w);
    s_reply_buf (ctx, 200, &b);
}

static void
s_kv_put (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    int64_t if_version = 0, ttl = 0;
    bool has_if, has_ttl;
    if (!s_bucket_key (ctx, true)
    ||  !s_query_int (ctx, "ifVersion", 0, INT64_MAX, &if_version, &has_if)
    ||  !s_query_int (ctx, "ttl", 0, S_TTL_MAX, &ttl, &has_ttl))
        return;
    //  Whitespace around the value is not stored: allow some before parsing.
    if (ctx->body_len > S_VALUE_MAX + 4096) {
        qn_http_reply_errorf (ctx, 413, "value must be at most %d bytes", S_VALUE_MAX);
        return;
    }
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (qn_http_parse_body (ctx, &doc)) {
        qn_json_doc_free (&doc);
        return;
    }
    size_t len;
    const char *value = qn_json_raw (&doc, 0, &len);
    if (len > S_VALUE_MAX) {
        qn_json_doc_free (&doc);
        qn_http_reply_errorf (ctx, 413, "value must be at most %d bytes", S_VALUE_MAX);
        return;
    }
    qn_pg_args_t args;
    s_args_head (&args, ctx, true);
    qn_pg_args_bin (&args, value, len);
    has_if ? qn_pg_args_int (&args, if_version) : qn_pg_args_null (&args);
    has_ttl ? qn_pg_args_int (&args, ttl) : qn_pg_args_null (&args);
    qn_json_doc_free (&doc);
    s_exec (codec, ctx, QN_SQL_KV_PUT, &args, s_on_kv_put, NULL);
    qn_pg_args_free (&args);
}

//  True when the call found a row; otherwise answers (the database error,
//  or 404 with not_found) unless the client is gone, and returns false.
static bool
s_found (qn_http_ctx_t *ctx, const qn_pg_result_t *res, const char *not_found)
{
    if (!ctx)
        return false;
    if (!res->ok) {
        qn_http_reply_pg_error (ctx, res);
        return false;
    }
    if (!res->row_count) {
        qn_http_reply_error (ctx, 404, not_found);
        return false;
    }
    return true;
}

//  Row: value, version, expires_at, updated_at (none: absent or expired).
static void
s_on_kv_get (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    (void) arg;
    if (!s_found (ctx, res, "key not found"))
        return;
    int64_t version = 0;
    s_col_int (res, 0, 1, &version);
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    s_jw_bucket_key (&w, ctx, true);
    s_jw_json (&w, "value", res, 0, 0);
    qn_jw_kint (&w, "version", version);
    s_jw_ts (&w, "expiresAt", res, 0, 2);
    s_jw_ts (&w, "updatedAt", res, 0, 3);
    qn_jw_obj_end (&w);
    s_reply_buf (ctx, 200, &b);
}

static void
s_kv_get (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    if (!s_bucket_key (ctx, true))
        return;
    qn_pg_args_t args;
    s_args_head (&args, ctx, true);
    s_exec (codec, ctx, QN_SQL_KV_GET, &args, s_on_kv_get, NULL);
    qn_pg_args_free (&args);
}

//  Row: status (deleted | not_found | conflict), version.
static void
s_on_kv_delete (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    (void) arg;
    if (!ctx || s_failed (ctx, res))
        return;
    int64_t version = 0;
    s_col_int (res, 0, 1, &version);
    if (s_col_is (res, 0, 0, "not_found")) {
        qn_http_reply_error (ctx, 404, "key not found");
        return;
    }
    if (s_col_is (res, 0, 0, "conflict")) {
        s_reply_conflict (ctx, version);
        return;
    }
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kbool (&w, "deleted", true);
    s_jw_bucket_key (&w, ctx, true);
    qn_jw_kint (&w, "version", version);
    qn_jw_obj_end (&w);
    s_reply_buf (ctx, 200, &b);
}

static void
s_kv_delete (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    int64_t if_version = 0;
    bool has_if;
    if (!s_bucket_key (ctx, true)
    ||  !s_query_int (ctx, "ifVersion", 0, INT64_MAX, &if_version, &has_if))
        return;
    qn_pg_args_t args;
    s_args_head (&args, ctx, true);
    has_if ? qn_pg_args_int (&args, if_version) : qn_pg_args_null (&args);
    s_exec (codec, ctx, QN_SQL_KV_DELETE, &args, s_on_kv_delete, NULL);
    qn_pg_args_free (&args);
}

//  Rows: key, version, expires_at, updated_at; one more than shown when a
//  next page exists.
static void
s_on_kv_list (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    s_call_t *call = arg;
    if (ctx && !res->ok)
        qn_http_reply_pg_error (ctx, res);
    else
    if (ctx) {
        uint32_t shown = res->row_count > call->limit ? (uint32_t) call->limit : res->row_count;
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        s_jw_bucket_key (&w, ctx, false);
        qn_jw_key (&w, "keys");
        qn_jw_arr (&w);
        for (uint32_t r = 0; r < shown; r++) {
            int64_t version = 0;
            s_col_int (res, r, 1, &version);
            qn_jw_obj (&w);
            s_jw_text (&w, "key", res, r, 0);
            qn_jw_kint (&w, "version", version);
            s_jw_ts (&w, "expiresAt", res, r, 2);
            s_jw_ts (&w, "updatedAt", res, r, 3);
            qn_jw_obj_end (&w);
        }
        qn_jw_arr_end (&w);
        if (res->row_count > shown && shown)
            s_jw_text (&w, "next", res, shown - 1, 0);
        else
            qn_jw_knull (&w, "next");
        qn_jw_obj_end (&w);
        s_reply_buf (ctx, 200, &b);
    }
    free (call);
}

static void
s_kv_list (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    size_t prefix_len, after_len;
    bool ok_prefix, ok_after, has_limit;
    int64_t limit = S_LIMIT_DEFAULT;
    if (!s_bucket_key (ctx, false))
        return;
    const char *prefix = s_query_text (ctx, "prefix", &prefix_len, &ok_prefix);
    if (!ok_prefix)
        return;
    const char *after = s_query_text (ctx, "after", &after_len, &ok_after);
    if (!ok_after || !s_query_int (ctx, "limit", 1, S_LIMIT_MAX, &limit, &has_limit))
        return;
    s_call_t *call = qn_zalloc (sizeof *call);
    call->limit = limit;
    qn_pg_args_t args;
    s_args_head (&args, ctx, false);
    qn_pg_args_str (&args, prefix && prefix_len ? prefix : NULL, prefix_len);
    qn_pg_args_str (&args, after && after_len ? after : NULL, after_len);
    qn_pg_args_int (&args, limit + 1);
    s_exec (codec, ctx, QN_SQL_KV_LIST, &args, s_on_kv_list, call);
    qn_pg_args_free (&args);
}

// ------------------------------------------------------------------ timers
//  Row: status (created | exists | fired | conflict), id, due_at, fired_at.
static void
s_on_timer_created (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    s_call_t *call = arg;
    int64_t id = 0, due = 0;
    bool created = res->ok && s_col_is (res, 0, 0, "created");
    if (created && s_col_int (res, 0, 1, &id) && s_col_int (res, 0, 2, &due))
        qn_hw_timer_arm (codec, id, due);
    if (!ctx || s_failed (ctx, res)) {
        free (call);
        return;
    }
    if (s_col_is (res, 0, 0, "conflict")) {
        qn_http_reply_errorf (ctx, 409, "timerId %s is taken by a different timer", call->timer_id);
        free (call);
        return;
    }
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kstr (&w, "timerId", call->timer_id);
    s_jw_ts (&w, "fireAt", res, 0, 2);
    qn_jw_kbool (&w, "created", created);
    qn_jw_kbool (&w, "fired", s_col_is (res, 0, 0, "fired"));
    qn_jw_obj_end (&w);
    s_reply_buf (ctx, created ? 201 : 200, &b);
    free (call);
}

//  A validated POST /api/v1/timers (c->ext of its call): tokens of the
//  body, -1 when absent.
typedef struct {
    char timer_id [S_NAME_MAX + 1];
    char minted_txn [QN_ID_STR_LEN + 1];    //  When the body has no transactionId
    int queue, partition, txn, payload;
    bool has_at;                //  fireAt given, else delayMs
    int64_t at_us, delay_ms;
    uint32_t extra;             //  The payload's index in c->extra (qn_hw_seal_add)
} s_timer_t;

//  The timing of a timer request: exactly one of fireAt (ISO-8601 string
//  or integer milliseconds since the Unix epoch) and delayMs, into tm.
//  False after answering 400.
static bool
s_timing (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, s_timer_t *tm, qn_buf_t *scratch)
{
    int at = s_field (doc, "fireAt"), delay = s_field (doc, "delayMs");
    int64_t v;
    if (at >= 0 && delay >= 0) {
        qn_http_reply_error (ctx, 400, "give either fireAt or delayMs, not both");
        return false;
    }
    if (at < 0 && delay < 0) {
        qn_http_reply_error (ctx, 400, "fireAt or delayMs is required");
        return false;
    }
    if (delay >= 0) {
        if (qn_json_int (doc, delay, &v) || v < 0 || v > S_DELAY_MAX_MS) {
            qn_http_reply_errorf (ctx, 400, "delayMs must be an integer between 0 and %lld",
                                  (long long) S_DELAY_MAX_MS);
            return false;
        }
        tm->has_at = false;
        tm->delay_ms = v;
        return true;
    }
    int64_t us;
    if (qn_json_type (doc, at) == QN_JSON_STRING) {
        if (s_json_text (doc, at, scratch) || qn_ts_parse (scratch->data, scratch->len, &us)) {
            qn_http_reply_error (ctx, 400, "fireAt must be an ISO-8601 timestamp or milliseconds since the epoch");
            return false;
        }
    }
    else
    if (qn_json_int (doc, at, &v) == 0 && v >= 0 && v <= INT64_MAX / 1000)
        us = v * 1000;
    else {
        qn_http_reply_error (ctx, 400, "fireAt must be an ISO-8601 timestamp or milliseconds since the epoch");
        return false;
    }
    if (us < 0 || us > qn_wall_us () + S_DELAY_MAX_MS * 1000) {
        qn_http_reply_error (ctx, 400, "fireAt must be after 1970 and at most 10 years ahead");
        return false;
    }
    tm->has_at = true;
    tm->at_us = us;
    return true;
}

//  Optional string field `name` checked as a name; *tok -1 when absent or
//  null (or empty, for empty_is_absent). False after answering 400.
static bool
s_body_name (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, const char *name, bool empty_is_absent,
             int *tok, qn_buf_t *out)
{
    *tok = s_field (doc, name);
    if (*tok < 0)
        return true;
    int rc = s_json_text (doc, *tok, out);
    if (rc < 0) {
        qn_http_reply_errorf (ctx, 400, "%s must be a string", name);
        return false;
    }
    if (!out->len && empty_is_absent) {
        *tok = -1;
        return true;
    }
    if (rc == 1) {
        qn_http_reply_errorf (ctx, 400, "%s must not contain NUL characters", name);
        return false;
    }
    return s_name_ok (ctx, name, out->data, out->len, false);
}

//  Packs queen.timer_create's arguments for a validated (and sealed) timer
//  and calls it. Takes c.
static void
s_timer_send (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c)
{
    const s_timer_t *tm = c->ext;
    const qn_hw_extra_t *x = &c->extra [tm->extra];
    bool sealed = x->sealed.len > 0;
    qn_buf_t scratch = QN_BUF_INIT;
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_cstr (&args, tm->timer_id);
    qn_hw_pack_tok (qn_pg_args_value (&args), &c->doc, tm->queue, &scratch);
    qn_hw_pack_tok (qn_pg_args_value (&args), &c->doc, tm->partition, &scratch);
    if (sealed)
        qn_pg_args_bin (&args, x->sealed.data, x->sealed.len);
    else {
        size_t len;
        const char *raw = qn_json_raw (&c->doc, tm->payload, &len);
        qn_pg_args_bin (&args, raw, len);
    }
    if (tm->txn >= 0)
        qn_hw_pack_tok (qn_pg_args_value (&args), &c->doc, tm->txn, &scratch);
    else
        qn_pg_args_cstr (&args, tm->minted_txn);
    qn_pg_args_bool (&args, tm->txn >= 0);
    tm->has_at ? qn_pg_args_int (&args, tm->at_us) : qn_pg_args_null (&args);
    tm->has_at ? qn_pg_args_null (&args) : qn_pg_args_int (&args, tm->delay_ms);
    //  Sealed: the keyed digest of the plaintext stands for the payload in
    //  the fingerprint (the envelope differs at every create).
    if (sealed)
        qn_pg_args_bin (&args, x->digest, sizeof x->digest);
    else
        qn_pg_args_null (&args);
    s_call_t *call = qn_zalloc (sizeof *call);
    memcpy (call->timer_id, tm->timer_id, sizeof call->timer_id);
    s_exec (codec, ctx, QN_SQL_TIMER_CREATE, &args, s_on_timer_created, call);
    qn_pg_args_free (&args);
    qn_buf_free (&scratch);
    qn_hw_call_free (c);
}

//  Validates the body, then seals the payload when the target queue is
//  encrypted (§2.10, as a push to it would be) and sends.
static void
s_timer_create (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_hw_call_t *c = qn_hw_call_new (ctx);
    qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    s_timer_t *tm = qn_zalloc (sizeof *tm);
    c->ext = tm;
    c->ext_free = free;
    if (qn_http_parse_body (ctx, doc))
        goto done;
    if (qn_json_type (doc, 0) != QN_JSON_OBJECT) {
        qn_http_reply_error (ctx, 400, "Request body must be a JSON object");
        goto done;
    }
    int tid;
    if (!s_body_name (ctx, doc, "timerId", false, &tid, &scratch))
        goto done;
    if (tid >= 0)
        snprintf (tm->timer_id, sizeof tm->timer_id, "%s", scratch.data);
    else
        qn_uuid_v7 (tm->timer_id);
    if (!s_body_name (ctx, doc, "queue", false, &tm->queue, &scratch))
        goto done;
    if (tm->queue < 0) {
        qn_http_reply_error (ctx, 400, "queue is required");
        goto done;
    }
    if (!s_body_name (ctx, doc, "partition", false, &tm->partition, &scratch)
    ||  !s_body_name (ctx, doc, "transactionId", true, &tm->txn, &scratch))
        goto done;
    tm->payload = qn_json_get (doc, 0, "payload");
    if (tm->payload < 0) {
        qn_http_reply_error (ctx, 400, "payload is required");
        goto done;
    }
    if (!s_timing (ctx, doc, tm, &scratch))
        goto done;
    if (tm->txn < 0)
        qn_uuid_v7 (tm->minted_txn);
    tm->extra = qn_hw_seal_add (c, tm->queue, tm->payload);
    qn_hw_seal_then (codec, ctx, c, s_timer_send);
    c = NULL;
done:
    qn_buf_free (&scratch);
    qn_hw_call_free (c);
}

//  Row: status (cancelled | fired | not_found), fired_at.
static void
s_on_timer_cancelled (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    (void) arg;
    if (!ctx || s_failed (ctx, res))
        return;
    if (s_col_is (res, 0, 0, "not_found")) {
        qn_http_reply_error (ctx, 404, "timer not found");
        return;
    }
    bool cancelled = s_col_is (res, 0, 0, "cancelled");
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    if (!cancelled)
        qn_jw_kstr (&w, "error", "timer already fired");
    qn_jw_key (&w, "timerId");
    qn_jw_strn (&w, qn_http_param (ctx, 0), ctx->param_len [0]);
    qn_jw_kbool (&w, "cancelled", cancelled);
    qn_jw_kbool (&w, "fired", !cancelled);
    if (!cancelled)
        s_jw_ts (&w, "firedAt", res, 0, 1);
    qn_jw_obj_end (&w);
    s_reply_buf (ctx, cancelled ? 200 : 409, &b);
}

//  Calls stmt with (tenant, :timerId) for the routes on one timer; cb
//  answers. A missing timerId is answered here.
static void
s_timer_exec (qn_codec_t *codec, qn_http_ctx_t *ctx, uint32_t stmt, qn_codec_result_fn *cb)
{
    size_t len;
    const char *id = s_param (ctx, 0, "timerId", &len);
    if (!id)
        return;
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_str (&args, id, len);
    s_exec (codec, ctx, stmt, &args, cb, NULL);
    qn_pg_args_free (&args);
}

static void
s_timer_cancel (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_timer_exec (codec, ctx, QN_SQL_TIMER_CANCEL, s_on_timer_cancelled);
}

//  Row: queue, partition, txn_id, payload, due_at, created_at, fired_at,
//  seq, partition_id, is_encrypted.
static void
s_on_timer_get (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) arg;
    if (!s_found (ctx, res, "timer not found"))
        return;
    int64_t fired_at, seq, pid;
    bool fired = s_col_int (res, 0, 6, &fired_at);
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_key (&w, "timerId");
    qn_jw_strn (&w, qn_http_param (ctx, 0), ctx->param_len [0]);
    qn_jw_kstr (&w, "status", fired ? "fired" : "pending");
    s_jw_text (&w, "queue", res, 0, 0);
    s_jw_text (&w, "partition", res, 0, 1);
    s_jw_text (&w, "transactionId", res, 0, 2);
    s_jw_payload (codec, &w, res, 0, 3, 9);
    s_jw_ts (&w, "fireAt", res, 0, 4);
    s_jw_ts (&w, "createdAt", res, 0, 5);
    s_jw_ts (&w, "firedAt", res, 0, 6);
    char id [QN_ID_STR_LEN + 1];
    if (fired && s_col_int (res, 0, 7, &seq) && s_col_int (res, 0, 8, &pid)) {
        qn_id_format (QN_ID_MESSAGE, seq, id);
        qn_jw_kstr (&w, "messageId", id);
        qn_id_format (QN_ID_PARTITION, pid, id);
        qn_jw_kstr (&w, "partitionId", id);
    }
    else {
        qn_jw_knull (&w, "messageId");
        qn_jw_knull (&w, "partitionId");
    }
    qn_jw_obj_end (&w);
    s_reply_buf (ctx, 200, &b);
}

static void
s_timer_get (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_timer_exec (codec, ctx, QN_SQL_TIMER_GET, s_on_timer_get);
}

//  Rows: timer_id, queue, partition, txn_id, payload, due_at, created_at,
//  id, is_encrypted; one more than shown when a next page exists. The
//  cursor is "<due_us>.<id>" of the last row shown.
static void
s_on_timer_list (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    s_call_t *call = arg;
    if (ctx && !res->ok)
        qn_http_reply_pg_error (ctx, res);
    else
    if (ctx) {
        uint32_t shown = res->row_count > call->limit ? (uint32_t) call->limit : res->row_count;
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_key (&w, "timers");
        qn_jw_arr (&w);
        for (uint32_t r = 0; r < shown; r++) {
            qn_jw_obj (&w);
            s_jw_text (&w, "timerId", res, r, 0);
            s_jw_text (&w, "queue", res, r, 1);
            s_jw_text (&w, "partition", res, r, 2);
            s_jw_text (&w, "transactionId", res, r, 3);
            s_jw_payload (codec, &w, res, r, 4, 8);
            s_jw_ts (&w, "fireAt", res, r, 5);
            s_jw_ts (&w, "createdAt", res, r, 6);
            qn_jw_obj_end (&w);
        }
        qn_jw_arr_end (&w);
        int64_t due, id;
        if (res->row_count > shown && shown
        &&  s_col_int (res, shown - 1, 5, &due) && s_col_int (res, shown - 1, 7, &id)) {
            char cursor [48];
            snprintf (cursor, sizeof cursor, "%" PRId64 ".%" PRId64, due, id);
            qn_jw_kstr (&w, "next", cursor);
        }
        else
            qn_jw_knull (&w, "next");
        qn_jw_obj_end (&w);
        s_reply_buf (ctx, 200, &b);
    }
    free (call);
}

//  Parses a list cursor "<due_us>.<id>". 0, or -1.
static int
s_cursor (const char *s, int64_t *due, int64_t *id)
{
    char tail;
    long long a, b;
    if (sscanf (s, "%lld.%lld%c", &a, &b, &tail) != 2 || b < 0)
        return -1;
    *due = a;
    *id = b;
    return 0;
}

static void
s_timer_list (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    size_t queue_len, after_len;
    bool ok, has_limit;
    int64_t limit = S_LIMIT_DEFAULT, due = 0, id = 0;
    const char *queue = s_query_text (ctx, "queue", &queue_len, &ok);
    if (!ok || !s_query_int (ctx, "limit", 1, S_LIMIT_MAX, &limit, &has_limit))
        return;
    const char *after = qn_url_param (&ctx->url, "after", &after_len);
    if (after && after_len && s_cursor (after, &due, &id)) {
        qn_http_reply_error (ctx, 400, "after must be a cursor returned as next");
        return;
    }
    s_call_t *call = qn_zalloc (sizeof *call);
    call->limit = limit;
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    qn_pg_args_cstr (&args, ctx->tenant);
    qn_pg_args_str (&args, queue && queue_len ? queue : NULL, queue_len);
    if (after && after_len) {
        qn_pg_args_int (&args, due);
        qn_pg_args_int (&args, id);
    }
    else {
        qn_pg_args_null (&args);
        qn_pg_args_null (&args);
    }
    qn_pg_args_int (&args, limit + 1);
    s_exec (codec, ctx, QN_SQL_TIMER_LIST, &args, s_on_timer_list, call);
    qn_pg_args_free (&args);
}

const qn_http_route_t qn_http_routes_state [] = {
    { "PUT", "/api/v1/kv/:bucket/:key", s_kv_put, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/kv/:bucket/:key", s_kv_get, QN_AUTH_READ_ONLY },
    { "DELETE", "/api/v1/kv/:bucket/:key", s_kv_delete, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/kv/:bucket", s_kv_list, QN_AUTH_READ_ONLY },
    { "POST", "/api/v1/timers", s_timer_create, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/timers", s_timer_list, QN_AUTH_READ_ONLY },
    { "GET", "/api/v1/timers/:timerId", s_timer_get, QN_AUTH_READ_ONLY },
    { "DELETE", "/api/v1/timers/:timerId", s_timer_cancel, QN_AUTH_READ_WRITE },
    { NULL, NULL, NULL, 0 }
};
