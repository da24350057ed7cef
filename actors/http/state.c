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
    statement on pg_writer (schema/functions/30_kv.sql, 31_timers.sql), and answers from its
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
              timers after creating a timer (so a short one fires on
              time without waiting for its next load)
    Owns      one small call state per timer request (its timerId; for a
              create, its validated body and sealed payload until sent)
    Failure   bad input gets a 4xx before any SQL runs; database errors map
              through qn_http_reply_pg_error; a call that cannot be sent
              answers 503
    Files     kv.c (the kv routes), timers.c (the timer routes), this file
              (the input and result helpers they share, and the route
              table); state.h declares what they share.
*/
#include "actors/http/state.h"
#include "actors/pg/statements.h"
#include "wire/crypto.h"
#include "wire/ids.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ input
//  Validates a name-like string (bucket, key, queue, timerId, ...): 1..255
//  bytes of UTF-8 without NUL (empty allowed when may_be_empty). Answers
//  400 naming `what` and returns false when it is not one.
bool
qn_hs_name_ok (qn_http_ctx_t *ctx, const char *what, const char *s, size_t len, bool may_be_empty)
{
    if (!len && !may_be_empty)
        qn_http_reply_errorf (ctx, 400, "%s must not be empty", what);
    else
    if (len > QN_HS_NAME_MAX)
        qn_http_reply_errorf (ctx, 400, "%s must be at most %d bytes", what, QN_HS_NAME_MAX);
    else
    if (!qn_utf8_valid (s, len))
        qn_http_reply_errorf (ctx, 400, "%s must be valid UTF-8 without NUL characters", what);
    else
        return true;
    return false;
}

//  Path parameter i checked as a name; NULL after answering 400.
const char *
qn_hs_param (qn_http_ctx_t *ctx, int i, const char *what, size_t *len)
{
    const char *s = qn_http_param (ctx, i);
    *len = s ? ctx->param_len [i] : 0;
    if (!qn_hs_name_ok (ctx, what, s ? s : "", *len, false))
        return NULL;
    return s;
}

//  Optional integer query parameter in [min, max]: *present tells whether
//  it was given (an empty value is absent). False after answering 400.
bool
qn_hs_query_int (qn_http_ctx_t *ctx, const char *name, int64_t min, int64_t max,
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
const char *
qn_hs_query_text (qn_http_ctx_t *ctx, const char *name, size_t *len, bool *ok)
{
    const char *v = qn_url_param (&ctx->url, name, len);
    *ok = !v || qn_hs_name_ok (ctx, name, v, *len, true);
    return v;
}

//  The unescaped text of string token tok into scratch (NUL-terminated).
//  Returns 0, 1 when it holds a NUL, -1 when tok is not a string.
int
qn_hs_json_text (const qn_json_doc_t *doc, int tok, qn_buf_t *scratch)
{
    qn_buf_reset (scratch);
    return qn_json_str (doc, tok, scratch);
}

//  Member `key` of the body object; -1 when absent or null.
int
qn_hs_field (const qn_json_doc_t *doc, const char *key)
{
    int tok = qn_json_get (doc, 0, key);
    return tok >= 0 && qn_json_is_null (doc, tok) ? -1 : tok;
}

// ------------------------------------------------------------------ packing and results

//  Column c of row r, or NULL.
const msgpack_object *
qn_hs_col (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    if (!res->rows || r >= res->row_count)
        return NULL;
    const msgpack_object *row = &res->rows [r];
    if (row->type != MSGPACK_OBJECT_ARRAY || c >= row->via.array.size)
        return NULL;
    return &row->via.array.ptr [c];
}

bool
qn_hs_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c, int64_t *out)
{
    const msgpack_object *o = qn_hs_col (res, r, c);
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
bool
qn_hs_col_span (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char **p, size_t *len)
{
    const msgpack_object *o = qn_hs_col (res, r, c);
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

bool
qn_hs_col_is (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char *s)
{
    const char *p;
    size_t len;
    return qn_hs_col_span (res, r, c, &p, &len) && len == strlen (s) && !memcmp (p, s, len);
}

//  "key": ts-ms of timestamp column c, or null.
void
qn_hs_jw_ts (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    int64_t us;
    if (qn_hs_col_int (res, r, c, &us)) {
        char ts [32];
        qn_ts_ms (us, ts);
        qn_jw_kstr (w, key, ts);
    }
    else
        qn_jw_knull (w, key);
}

//  "key": the text column c, or null.
void
qn_hs_jw_text (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const char *p;
    size_t len;
    qn_jw_key (w, key);
    if (qn_hs_col_span (res, r, c, &p, &len))
        qn_jw_strn (w, p, len);
    else
        qn_jw_null (w);
}

//  "key": the stored JSON text of column c (empty or NULL: null).
void
qn_hs_jw_json (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const char *p;
    size_t len;
    if (qn_hs_col_span (res, r, c, &p, &len) && len)
        qn_jw_kraw (w, key, p, len);
    else
        qn_jw_knull (w, key);
}

//  "payload": a timer's stored payload (column c), decrypted when it is
//  stored sealed (column enc_c true, §2.10) as the message read route
//  does: one that does not open (its key is not configured, altered bytes)
//  is written as stored, followed by "decryptionError": the reason.
void
qn_hs_jw_payload (qn_codec_t *codec, qn_jw_t *w, const qn_pg_result_t *res, uint32_t r,
                  uint32_t c, uint32_t enc_c)
{
    const msgpack_object *enc = qn_hs_col (res, r, enc_c);
    const char *p;
    size_t len;
    if (!enc || enc->type != MSGPACK_OBJECT_BOOLEAN || !enc->via.boolean
    ||  !qn_hs_col_span (res, r, c, &p, &len) || !len) {
        qn_hs_jw_json (w, "payload", res, r, c);
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

void
qn_hs_reply_buf (qn_http_ctx_t *ctx, int status, qn_buf_t *b)
{
    qn_http_reply_json (ctx, status, b->data, b->len);
    qn_buf_free (b);
}

//  Sends the statement; answers 503 when it cannot be sent (then cb is not
//  called and `call` is freed).
void
qn_hs_exec (qn_codec_t *codec, qn_http_ctx_t *ctx, uint32_t stmt, const qn_pg_args_t *args,
            qn_codec_result_fn *cb, qn_hs_call_t *call)
{
    int rc = qn_codec_exec_args (codec, ctx, "pg_writer", stmt, NULL, args, cb, call);
    if (rc) {
        free (call);
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
    }
}

//  Answers a failed call, or one with no row; true when it answered.
bool
qn_hs_failed (qn_http_ctx_t *ctx, qn_pg_result_t *res)
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

//  True when the call found a row; otherwise answers (the database error,
//  or 404 with not_found) unless the client is gone, and returns false.
bool
qn_hs_found (qn_http_ctx_t *ctx, const qn_pg_result_t *res, const char *not_found)
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

const qn_http_route_t qn_http_routes_state [] = {
    { "PUT", "/api/v1/kv/:bucket/:key", qn_hs_kv_put, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/kv/:bucket/:key", qn_hs_kv_get, QN_AUTH_READ_ONLY },
    { "DELETE", "/api/v1/kv/:bucket/:key", qn_hs_kv_delete, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/kv/:bucket", qn_hs_kv_list, QN_AUTH_READ_ONLY },
    { "POST", "/api/v1/timers", qn_hs_timer_create, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/timers", qn_hs_timer_list, QN_AUTH_READ_ONLY },
    { "GET", "/api/v1/timers/:timerId", qn_hs_timer_get, QN_AUTH_READ_ONLY },
    { "DELETE", "/api/v1/timers/:timerId", qn_hs_timer_cancel, QN_AUTH_READ_WRITE },
    { NULL, NULL, NULL, 0 }
};
