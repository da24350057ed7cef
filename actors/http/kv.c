/*  actors/http/kv.c - the kv routes (see state.c for the whole area)
      PUT    /api/v1/kv/:bucket/:key[?ifVersion=&ttl=]   body = the value
      GET    /api/v1/kv/:bucket/:key
      DELETE /api/v1/kv/:bucket/:key[?ifVersion=]
      GET    /api/v1/kv/:bucket[?prefix=&after=&limit=]
    Each validates the request, makes one PG_EXEC call of a catalogue
    statement (schema/functions/30_kv.sql) and answers from its row.
*/
#include "actors/http/state.h"
#include "actors/pg/statements.h"
#include "wire/crypto.h"
#include "wire/ids.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    qn_hs_reply_buf (ctx, 409, &b);
}

//  Validates the path's bucket and key; false after answering.
static bool
s_bucket_key (qn_http_ctx_t *ctx, bool with_key)
{
    size_t len;
    return qn_hs_param (ctx, 0, "bucket", &len) && (!with_key || qn_hs_param (ctx, 1, "key", &len));
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
    if (!ctx || qn_hs_failed (ctx, res))
        return;
    int64_t version = 0;
    if (!qn_hs_col_is (res, 0, 0, "ok")) {
        qn_hs_col_int (res, 0, 3, &version);
        s_reply_conflict (ctx, version);
        return;
    }
    qn_hs_col_int (res, 0, 1, &version);
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    s_jw_bucket_key (&w, ctx, true);
    qn_jw_kint (&w, "version", version);
    qn_hs_jw_ts (&w, "expiresAt", res, 0, 2);
    qn_jw_obj_end (&w);
    qn_hs_reply_buf (ctx, 200, &b);
}

void
qn_hs_kv_put (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    int64_t if_version = 0, ttl = 0;
    bool has_if, has_ttl;
    if (!s_bucket_key (ctx, true)
    ||  !qn_hs_query_int (ctx, "ifVersion", 0, INT64_MAX, &if_version, &has_if)
    ||  !qn_hs_query_int (ctx, "ttl", 0, QN_HS_TTL_MAX, &ttl, &has_ttl))
        return;
    //  Whitespace around the value is not stored: allow some before parsing.
    if (ctx->body_len > QN_HS_VALUE_MAX + 4096) {
        qn_http_reply_errorf (ctx, 413, "value must be at most %d bytes", QN_HS_VALUE_MAX);
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
    if (len > QN_HS_VALUE_MAX) {
        qn_json_doc_free (&doc);
        qn_http_reply_errorf (ctx, 413, "value must be at most %d bytes", QN_HS_VALUE_MAX);
        return;
    }
    qn_pg_args_t args;
    s_args_head (&args, ctx, true);
    qn_pg_args_bin (&args, value, len);
    has_if ? qn_pg_args_int (&args, if_version) : qn_pg_args_null (&args);
    has_ttl ? qn_pg_args_int (&args, ttl) : qn_pg_args_null (&args);
    qn_json_doc_free (&doc);
    qn_hs_exec (codec, ctx, QN_SQL_KV_PUT, &args, s_on_kv_put, NULL);
    qn_pg_args_free (&args);
}

//  Row: value, version, expires_at, updated_at (none: absent or expired).
static void
s_on_kv_get (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    (void) arg;
    if (!qn_hs_found (ctx, res, "key not found"))
        return;
    int64_t version = 0;
    qn_hs_col_int (res, 0, 1, &version);
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    s_jw_bucket_key (&w, ctx, true);
    qn_hs_jw_json (&w, "value", res, 0, 0);
    qn_jw_kint (&w, "version", version);
    qn_hs_jw_ts (&w, "expiresAt", res, 0, 2);
    qn_hs_jw_ts (&w, "updatedAt", res, 0, 3);
    qn_jw_obj_end (&w);
    qn_hs_reply_buf (ctx, 200, &b);
}

void
qn_hs_kv_get (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    if (!s_bucket_key (ctx, true))
        return;
    qn_pg_args_t args;
    s_args_head (&args, ctx, true);
    qn_hs_exec (codec, ctx, QN_SQL_KV_GET, &args, s_on_kv_get, NULL);
    qn_pg_args_free (&args);
}

//  Row: status (deleted | not_found | conflict), version.
static void
s_on_kv_delete (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    (void) arg;
    if (!ctx || qn_hs_failed (ctx, res))
        return;
    int64_t version = 0;
    qn_hs_col_int (res, 0, 1, &version);
    if (qn_hs_col_is (res, 0, 0, "not_found")) {
        qn_http_reply_error (ctx, 404, "key not found");
        return;
    }
    if (qn_hs_col_is (res, 0, 0, "conflict")) {
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
    qn_hs_reply_buf (ctx, 200, &b);
}

void
qn_hs_kv_delete (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    int64_t if_version = 0;
    bool has_if;
    if (!s_bucket_key (ctx, true)
    ||  !qn_hs_query_int (ctx, "ifVersion", 0, INT64_MAX, &if_version, &has_if))
        return;
    qn_pg_args_t args;
    s_args_head (&args, ctx, true);
    has_if ? qn_pg_args_int (&args, if_version) : qn_pg_args_null (&args);
    qn_hs_exec (codec, ctx, QN_SQL_KV_DELETE, &args, s_on_kv_delete, NULL);
    qn_pg_args_free (&args);
}

//  Rows: key, version, expires_at, updated_at; one more than shown when a
//  next page exists.
static void
s_on_kv_list (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    qn_hs_call_t *call = arg;
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
            qn_hs_col_int (res, r, 1, &version);
            qn_jw_obj (&w);
            qn_hs_jw_text (&w, "key", res, r, 0);
            qn_jw_kint (&w, "version", version);
            qn_hs_jw_ts (&w, "expiresAt", res, r, 2);
            qn_hs_jw_ts (&w, "updatedAt", res, r, 3);
            qn_jw_obj_end (&w);
        }
        qn_jw_arr_end (&w);
        if (res->row_count > shown && shown)
            qn_hs_jw_text (&w, "next", res, shown - 1, 0);
        else
            qn_jw_knull (&w, "next");
        qn_jw_obj_end (&w);
        qn_hs_reply_buf (ctx, 200, &b);
    }
    free (call);
}

void
qn_hs_kv_list (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    size_t prefix_len, after_len;
    bool ok_prefix, ok_after, has_limit;
    int64_t limit = QN_HS_LIMIT_DEFAULT;
    if (!s_bucket_key (ctx, false))
        return;
    const char *prefix = qn_hs_query_text (ctx, "prefix", &prefix_len, &ok_prefix);
    if (!ok_prefix)
        return;
    const char *after = qn_hs_query_text (ctx, "after", &after_len, &ok_after);
    if (!ok_after || !qn_hs_query_int (ctx, "limit", 1, QN_HS_LIMIT_MAX, &limit, &has_limit))
        return;
    qn_hs_call_t *call = qn_zalloc (sizeof *call);
    call->limit = limit;
    qn_pg_args_t args;
    s_args_head (&args, ctx, false);
    qn_pg_args_str (&args, prefix && prefix_len ? prefix : NULL, prefix_len);
    qn_pg_args_str (&args, after && after_len ? after : NULL, after_len);
    qn_pg_args_int (&args, limit + 1);
    qn_hs_exec (codec, ctx, QN_SQL_KV_LIST, &args, s_on_kv_list, call);
    qn_pg_args_free (&args);
}
