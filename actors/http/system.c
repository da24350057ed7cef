/*  actors/http/system.c - maintenance modes and spool status routes
    Contract §3.20 (system maintenance) and §3.18 GET /api/v1/status/buffers.
    The maintenance flags have one owner, pg_writer (actors/pg/maint.c):
    a POST sends it QN_MSG_MAINT_SET and answers when the row is written
    (the owner applies push maintenance itself and publishes the flags on
    "maintenance"). Reads answer from the flags the codec keeps from those
    events (and from the owner's reply to this codec's own set, whichever
    is newer: see qn_codec_maintenance_seen) and from the spool's counts.
    Receives  requests routed by codec_http; MAINT_STATE and
              SPOOL_STATS_REPLY replies
    Sends     QN_MSG_MAINT_SET to pg_writer, QN_MSG_SPOOL_STATS_ASK to spool
    Failure   a bad body gets 400 "enabled (boolean) is required"; a
              failed write maps through qn_http_reply_pg_error; an owner or
              spool that does not answer gives 503
*/
#include "actors/http/codec.h"
#include "wire/msg_maint.h"
#include "wire/msg_spool.h"

#include <stdlib.h>
#include <string.h>

#define S_SPOOL_TIMEOUT_MS 5000

typedef struct {
    bool ok;                    //  The spool answered
    uint64_t pending;
    uint64_t failed;
    bool db_healthy;
    bool healthy;               //  The spool's last write worked
    uint64_t failed_bytes;
} s_stats_t;

typedef void (s_stats_fn) (qn_codec_t *codec, qn_http_ctx_t *ctx, const s_stats_t *st, bool flag);

typedef struct {
    qn_codec_t *codec;          //  Not owned
    uint64_t ctx_id;
    s_stats_fn *fn;
    bool flag;                  //  Passed through to fn
    bool pop;                   //  A set: pop_maintenance_mode, else maintenance_mode
} s_ask_t;

// ------------------------------------------------------------------ asking the spool
//  The request waits on the spool: when the client leaves meanwhile, the
//  codec frees the context and our reply finds nothing to answer.
static void
s_forget (qn_http_ctx_t *ctx)
{
    (void) ctx;
}

static void
s_on_stats (void *self_, void *arg, const qn_env_t *env)
{
    (void) self_;
    s_ask_t *ask = arg;
    qn_http_ctx_t *ctx = qn_codec_request (ask->codec, ask->ctx_id);
    if (ctx) {
        ctx->on_cancel = NULL;
        s_stats_t st;
        memset (&st, 0, sizeof st);
        qn_msg_spool_stats_t m;
        if (env && env->type == QN_MSG_SPOOL_STATS_REPLY
        &&  !qn_msg_spool_stats_decode (env->body.ptr, env->body.len, &m)) {
            st.ok = true;
            st.pending = m.pending;
            st.failed = m.failed;
            st.db_healthy = m.db_healthy;
            st.healthy = m.buffer_healthy;
            st.failed_bytes = m.failed_bytes;
        }
        ask->fn (ask->codec, ctx, &st, ask->flag);
    }
    free (ask);
}

//  Asks the spool for its counts and calls fn with them (st->ok false if
//  it could not be asked or did not answer).
static void
s_ask_spool (qn_codec_t *codec, qn_http_ctx_t *ctx, s_stats_fn *fn, bool flag)
{
    s_ask_t *ask = qn_zalloc (sizeof *ask);
    ask->codec = codec;
    ask->ctx_id = ctx->id;
    ask->fn = fn;
    ask->flag = flag;
    qn_msg_t msg = { .to = "spool", .type = QN_MSG_SPOOL_STATS_ASK, .body = "\x90", .body_len = 1 };
    if (qn_request (qn_codec_kernel (codec), &msg, S_SPOOL_TIMEOUT_MS, s_on_stats, ask)) {
        free (ask);
        s_stats_t st;
        memset (&st, 0, sizeof st);
        fn (codec, ctx, &st, flag);
        return;
    }
    ctx->on_cancel = s_forget;
}

static void
s_reply_doc (qn_http_ctx_t *ctx, qn_buf_t *b)
{
    qn_http_reply_json (ctx, 200, b->data, b->len);
    qn_buf_free (b);
}

// ------------------------------------------------------------------ GET /api/v1/status/buffers
static void
s_buffers_answer (qn_codec_t *codec, qn_http_ctx_t *ctx, const s_stats_t *st, bool flag)
{
    (void) codec;
    (void) flag;
    if (!st->ok) {
        qn_http_reply_error (ctx, 503, "spool did not answer");
        return;
    }
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kuint (&w, "pending", st->pending);
    qn_jw_kuint (&w, "failed", st->failed);
    qn_jw_kbool (&w, "dbHealthy", st->db_healthy);
    qn_jw_kint (&w, "worker", 0);
    qn_jw_obj_end (&w);
    s_reply_doc (ctx, &b);
}

static void
s_buffers (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_ask_spool (codec, ctx, s_buffers_answer, false);
}

// ------------------------------------------------------------------ GET /api/v1/system/maintenance
static void
s_maintenance_answer (qn_codec_t *codec, qn_http_ctx_t *ctx, const s_stats_t *st, bool flag)
{
    (void) flag;
    if (!st->ok) {
        qn_http_reply_error (ctx, 503, "spool did not answer");
        return;
    }
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kbool (&w, "maintenanceMode", qn_codec_push_maintenance (codec));
    qn_jw_kbool (&w, "popMaintenanceMode", qn_codec_pop_maintenance (codec));
    qn_jw_kuint (&w, "bufferedMessages", st->pending);
    qn_jw_kbool (&w, "bufferHealthy", st->healthy);
    qn_jw_key (&w, "bufferStats");
    qn_jw_obj (&w);
    qn_jw_kuint (&w, "pendingCount", st->pending);
    qn_jw_kuint (&w, "failedCount", st->failed);
    qn_jw_kbool (&w, "dbHealthy", st->db_healthy);
    qn_jw_key (&w, "failedFiles");
    qn_jw_obj (&w);
    qn_jw_kint (&w, "count", st->failed_bytes ? 1 : 0);
    qn_jw_kuint (&w, "totalBytes", st->failed_bytes);
    qn_jw_kdouble (&w, "totalMB", (double) st->failed_bytes / (1024.0 * 1024.0));
    qn_jw_kint (&w, "failoverCount", 0);
    qn_jw_kint (&w, "qos0Count", 0);
    qn_jw_obj_end (&w);
    qn_jw_obj_end (&w);
    qn_jw_obj_end (&w);
    s_reply_doc (ctx, &b);
}

static void
s_maintenance_get (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_ask_spool (codec, ctx, s_maintenance_answer, false);
}

// ------------------------------------------------------------------ POST (both flags)
static void
s_pop_answer (qn_http_ctx_t *ctx, bool enabled)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kbool (&w, "popMaintenanceMode", enabled);
    qn_jw_kstr (&w, "message", enabled ? "Pop maintenance mode enabled: pops answer empty"
                                       : "Pop maintenance mode disabled: pops served normally");
    qn_jw_obj_end (&w);
    s_reply_doc (ctx, &b);
}

static void
s_push_answer (qn_codec_t *codec, qn_http_ctx_t *ctx, const s_stats_t *st, bool enabled)
{
    (void) codec;
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kbool (&w, "maintenanceMode", enabled);
    qn_jw_kuint (&w, "bufferedMessages", st->pending);
    qn_jw_kbool (&w, "bufferHealthy", st->ok && st->healthy);
    qn_jw_kstr (&w, "message", enabled
                ? "Maintenance mode enabled: pushes are written to the disk spool"
                : "Maintenance mode disabled: spooled messages are being replayed");
    qn_jw_obj_end (&w);
    s_reply_doc (ctx, &b);
}

//  The owner's answer: the row is written and the flags apply (push
//  maintenance inside pg_writer already; pop maintenance here, through
//  the state it reports, so a pop right after our answer sees it), or the
//  write failed and nothing changed.
static void
s_on_set (void *self_, void *arg, const qn_env_t *env)
{
    (void) self_;
    s_ask_t *ask = arg;
    qn_msg_maint_state_t m;
    bool ok = env && env->type == QN_MSG_MAINT_STATE
           && !qn_msg_maint_state_decode (env->body.ptr, env->body.len, &m);
    if (ok && !m.sqlstate [0])
        qn_codec_maintenance_seen (ask->codec, m.push, m.pop, m.gen);
    qn_http_ctx_t *ctx = qn_codec_request (ask->codec, ask->ctx_id);
    if (ctx) {
        ctx->on_cancel = NULL;
        if (!env)
            qn_http_reply_error (ctx, 503, "database did not answer in time");
        else
        if (!ok)
            qn_http_reply_error (ctx, 500, "malformed maintenance answer");
        else
        if (m.sqlstate [0]) {
            qn_pg_result_t res;
            memset (&res, 0, sizeof res);
            msgpack_unpacked_init (&res.holder);
            snprintf (res.sqlstate, sizeof res.sqlstate, "%s", m.sqlstate);
            res.message = qn_strndup (m.message, m.message_len);
            res.detail = qn_strdup ("");
            qn_http_reply_pg_error (ctx, &res);
            qn_pg_result_free (&res);
        }
        else
        if (ask->pop)
            s_pop_answer (ctx, m.pop);
        else
            s_ask_spool (ask->codec, ctx, s_push_answer, m.push);
    }
    free (ask);
}

static void
s_set_flag (qn_codec_t *codec, qn_http_ctx_t *ctx, bool pop)
{
    static const char *required = "enabled (boolean) is required";
    if (!ctx->body_len) {
        qn_http_reply_error (ctx, 400, required);
        return;
    }
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (qn_http_parse_body (ctx, &doc)) {
        qn_json_doc_free (&doc);
        return;
    }
    bool enabled = false;
    int t = qn_json_type (&doc, 0) == QN_JSON_OBJECT ? qn_json_get (&doc, 0, "enabled") : -1;
    if (t < 0 || qn_json_bool (&doc, t, &enabled)) {
        qn_json_doc_free (&doc);
        qn_http_reply_error (ctx, 400, required);
        return;
    }
    qn_json_doc_free (&doc);
    qn_msg_maint_set_t set = { .pop = pop, .enabled = enabled };
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_maint_set_encode (&sb, &set);
    s_ask_t *ask = qn_zalloc (sizeof *ask);
    ask->codec = codec;
    ask->ctx_id = ctx->id;
    ask->pop = pop;
    qn_msg_t msg = { .to = "pg_writer", .type = QN_MSG_MAINT_SET, .body = sb.data, .body_len = sb.size };
    uint32_t timeout = (uint32_t) qn_codec_config (codec)->db_statement_timeout_ms + 2000;
    int rc = qn_request (qn_codec_kernel (codec), &msg, timeout, s_on_set, ask);
    msgpack_sbuffer_destroy (&sb);
    if (rc) {
        free (ask);
        qn_http_reply_error (ctx, 503, "database writer is busy");
        return;
    }
    ctx->on_cancel = s_forget;
}

static void
s_maintenance_post (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_set_flag (codec, ctx, false);
}

// ------------------------------------------------------------------ pop maintenance, shared state
static void
s_pop_get (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_pop_answer (ctx, qn_codec_pop_maintenance (codec));
}

static void
s_pop_post (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_set_flag (codec, ctx, true);
}

static void
s_shared_state (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    (void) codec;
    static const char body [] = "{\"enabled\":false}";
    qn_http_reply_json (ctx, 200, body, sizeof body - 1);
}

const qn_http_route_t qn_http_routes_system [] = {
    { "GET", "/api/v1/system/maintenance", s_maintenance_get, QN_AUTH_ADMIN },
    { "POST", "/api/v1/system/maintenance", s_maintenance_post, QN_AUTH_ADMIN },
    { "GET", "/api/v1/system/maintenance/pop", s_pop_get, QN_AUTH_ADMIN },
    { "POST", "/api/v1/system/maintenance/pop", s_pop_post, QN_AUTH_ADMIN },
    { "GET", "/api/v1/system/shared-state", s_shared_state, QN_AUTH_ADMIN },
    { "GET", "/api/v1/status/buffers", s_buffers, QN_AUTH_READ_ONLY },
    { NULL, NULL, NULL, 0 }
};
