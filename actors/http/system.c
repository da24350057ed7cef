/*  actors/http/system.c - maintenance modes and spool status routes
    Contract §3.20 (system maintenance) and §3.18 GET /api/v1/status/buffers.
    The maintenance flags live in queen.system_state (rows maintenance_mode
    and pop_maintenance_mode, value {"enabled":bool}); a POST writes the
    row through pg_writer, then publishes the "maintenance" event so this
    broker acts on it at once (the spool re-reads the rows every 2 s, which
    carries a change to the other brokers). Reads answer from the flags the
    codec keeps and from the spool's counts.
    Receives  requests routed by codec_http; SPOOL_STATS replies
    Sends     QN_MSG_PG_EXEC to pg_writer, QN_MSG_SPOOL_STATS to spool,
              "maintenance" events
    Failure   a bad body gets 400 "enabled (boolean) is required"; a
              database failure maps through qn_http_reply_pg_error; a spool
              that does not answer gives 503
*/
#include "actors/http/codec.h"
#include "actors/pg/statements.h"

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
} s_ask_t;

// ------------------------------------------------------------------ asking the spool
//  The request waits on the spool: when the client leaves meanwhile, the
//  codec frees the context and our reply finds nothing to answer.
static void
s_forget (qn_http_ctx_t *ctx)
{
    (void) ctx;
}

static uint64_t
s_u64 (const msgpack_object *o)
{
    return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? o->via.u64 : 0;
}

static bool
s_bool (const msgpack_object *o)
{
    return o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
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
        msgpack_unpacked msg;
        msgpack_unpacked_init (&msg);
        const msgpack_object *o = &msg.data;
        //  [pending, failed, db_healthy, buffer_healthy, failed_bytes, event_seq]
        if (env && msgpack_unpack_next (&msg, env->body.ptr, env->body.len, NULL) == MSGPACK_UNPACK_SUCCESS
        &&  o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size >= 3) {
            const msgpack_object *f = o->via.array.ptr;
            st.ok = true;
            st.pending = s_u64 (&f [0]);
            st.failed = s_u64 (&f [1]);
            st.db_healthy = s_bool (&f [2]);
            st.healthy = o->via.array.size > 3 ? s_bool (&f [3]) : true;
            st.failed_bytes = o->via.array.size > 4 ? s_u64 (&f [4]) : 0;
            if (o->via.array.size > 5)
                qn_codec_spool_seen (ask->codec, st.pending, s_u64 (&f [5]), true);
        }
        msgpack_unpacked_destroy (&msg);
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
    qn_msg_t msg = { .to = "spool", .type = QN_MSG_SPOOL_STATS, .body = "\x90", .body_len = 1 };
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
typedef struct {
    bool pop;                   //  pop_maintenance_mode, else maintenance_mode
    bool enabled;
} s_set_t;

static void
s_publish (qn_codec_t *codec, bool push, bool pop)
{
    //  This codec acts at once (a push right after the answer must see
    //  the new mode); the event tells the spool and anyone else.
    qn_codec_set_maintenance (codec, push, pop);
    char body [3] = { (char) 0x92, push ? (char) 0xc3 : (char) 0xc2, pop ? (char) 0xc3 : (char) 0xc2 };
    qn_publish (qn_codec_kernel (codec), "maintenance", QN_MSG_CONFIG, body, sizeof body);
}

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

static void
s_on_written (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    s_set_t *set = arg;
    if (res->ok) {
        //  The row is written: act on it here now, whoever is waiting.
        bool push = set->pop ? qn_codec_push_maintenance (codec) : set->enabled;
        bool pop = set->pop ? set->enabled : qn_codec_pop_maintenance (codec);
        s_publish (codec, push, pop);
        qn_info ("maintenance flag written: %s=%s", set->pop ? "pop" : "push",
                 set->enabled ? "on" : "off");
    }
    if (ctx) {
        if (!res->ok)
            qn_http_reply_pg_error (ctx, res);
        else
        if (set->pop)
            s_pop_answer (ctx, set->enabled);
        else
            s_ask_spool (codec, ctx, s_push_answer, set->enabled);
    }
    free (set);
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
    //  Both values are ours, never client text: literals, no parameters.
    char sql [256];
    snprintf (sql, sizeof sql,
              "SELECT queen.maintenance_set ('%s', %s)",
              pop ? "pop_maintenance_mode" : "maintenance_mode", enabled ? "true" : "false");
    s_set_t *set = qn_zalloc (sizeof *set);
    set->pop = pop;
    set->enabled = enabled;
    int rc = qn_codec_exec (codec, ctx, "pg_writer", QN_SQL_RAW, sql, "\x90", 1,
                            s_on_written, set);
    if (rc) {
        free (set);
        qn_http_reply_error (ctx, 503, "database writer is busy");
    }
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
