/*  actors/http/state.h - shared by the state routes (kv.c, timers.c, state.c)
    Private to actors/http: input checks, parameter packing and result
    reading that the kv and timer routes share (defined in state.c, with
    the route table qn_http_routes_state), and the route handlers of
    kv.c and timers.c that the table names.
*/
#ifndef QN_ACTORS_HTTP_STATE_H
#define QN_ACTORS_HTTP_STATE_H

#include "actors/http/codec.h"
#include "actors/http/write.h"

#define QN_HS_NAME_MAX      255                     //  Bytes of a bucket, key, queue, timerId...
#define QN_HS_VALUE_MAX     (1024 * 1024)           //  Bytes of a kv value
#define QN_HS_TTL_MAX       315360000               //  10 years, in seconds
#define QN_HS_DELAY_MAX_MS  (QN_HS_TTL_MAX * 1000LL)
#define QN_HS_LIMIT_DEFAULT 100
#define QN_HS_LIMIT_MAX     1000

//  What a timer request's callback needs.
typedef struct {
    char timer_id [QN_HS_NAME_MAX + 1];
    int64_t limit;              //  List: rows shown (one more was asked for)
} qn_hs_call_t;

// ------------------------------------------------------------------ shared helpers (state.c)
bool qn_hs_name_ok (qn_http_ctx_t *ctx, const char *what, const char *s, size_t len, bool may_be_empty);
const char *qn_hs_param (qn_http_ctx_t *ctx, int i, const char *what, size_t *len);
bool qn_hs_query_int (qn_http_ctx_t *ctx, const char *name, int64_t min, int64_t max,
                      int64_t *out, bool *present);
const char *qn_hs_query_text (qn_http_ctx_t *ctx, const char *name, size_t *len, bool *ok);
int qn_hs_json_text (const qn_json_doc_t *doc, int tok, qn_buf_t *scratch);
int qn_hs_field (const qn_json_doc_t *doc, const char *key);
const msgpack_object *qn_hs_col (const qn_pg_result_t *res, uint32_t r, uint32_t c);
bool qn_hs_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c, int64_t *out);
bool qn_hs_col_span (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char **p, size_t *len);
bool qn_hs_col_is (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char *s);
void qn_hs_jw_ts (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c);
void qn_hs_jw_text (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c);
void qn_hs_jw_json (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c);
void qn_hs_jw_payload (qn_codec_t *codec, qn_jw_t *w, const qn_pg_result_t *res, uint32_t r,
                       uint32_t c, uint32_t enc_c);
void qn_hs_reply_buf (qn_http_ctx_t *ctx, int status, qn_buf_t *b);
void qn_hs_exec (qn_codec_t *codec, qn_http_ctx_t *ctx, uint32_t stmt, const qn_pg_args_t *args,
                 qn_codec_result_fn *cb, qn_hs_call_t *call);
bool qn_hs_failed (qn_http_ctx_t *ctx, qn_pg_result_t *res);
bool qn_hs_found (qn_http_ctx_t *ctx, const qn_pg_result_t *res, const char *not_found);

// ------------------------------------------------------------------ route handlers
//  kv.c
void qn_hs_kv_put (qn_codec_t *codec, qn_http_ctx_t *ctx);
void qn_hs_kv_get (qn_codec_t *codec, qn_http_ctx_t *ctx);
void qn_hs_kv_delete (qn_codec_t *codec, qn_http_ctx_t *ctx);
void qn_hs_kv_list (qn_codec_t *codec, qn_http_ctx_t *ctx);
//  timers.c
void qn_hs_timer_create (qn_codec_t *codec, qn_http_ctx_t *ctx);
void qn_hs_timer_list (qn_codec_t *codec, qn_http_ctx_t *ctx);
void qn_hs_timer_get (qn_codec_t *codec, qn_http_ctx_t *ctx);
void qn_hs_timer_cancel (qn_codec_t *codec, qn_http_ctx_t *ctx);

#endif
