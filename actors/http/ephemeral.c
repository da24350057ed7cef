/*  actors/http/ephemeral.c - the HTTP routes of the ephemeral queues
    (docs/ephemeral.md). Each route is forwarded whole to the ephemeral
    actor (actors/ephemeral/ephemeral.c) as QN_MSG_EPH_CALL [op, name,
    body, timeout_ms, subscriber]; its answer is one row [status, json]
    sent back as the HTTP response. No database in the path. Names are
    per tenant: the call carries ctx->tenant, and the actor scopes every
    queue and topic name (and every inbox) by it.
    Sends     QN_MSG_EPH_CALL to "ephemeral"
    Failure   a bad timeout or name is a 400 here; an actor that does not
              answer within the wait plus 5 s is a 503; a message handed
              to a receive whose client has gone meanwhile is sent back to
              its queue (at its tail), not lost
*/
#include "actors/http/state.h"
#include "wire/json.h"
#include "wire/msg_ephemeral.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_WAIT_DEFAULT_MS 30000

//  The client of a receive left before its message came: the message goes
//  back to its queue ({"payload", "replyTo", "correlationId"} of the
//  answer are a send's body). The actor's answer to this send is dropped.
typedef struct {
    char *queue;                //  Owned
    char tenant [80];
} s_requeue_t;

static void
s_requeue (qn_codec_t *codec, const s_requeue_t *rq, const char *json, size_t len)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_eph_call_t m = {
        .op = { "send", 4 }, .name = { rq->queue, strlen (rq->queue) }, .body = { json, len },
        .tenant = { rq->tenant, strlen (rq->tenant) }
    };
    qn_msg_eph_call_encode (&b, &m);
    qn_send_body (qn_codec_kernel (codec), "ephemeral", QN_MSG_EPH_CALL, 0, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
}

static void
s_requeue_free (s_requeue_t *rq)
{
    if (rq) {
        free (rq->queue);
        free (rq);
    }
}

//  Every message of an answer goes back: {"messages": [...]} of a receive
//  with max, or the one message.
static void
s_requeue_all (qn_codec_t *codec, const s_requeue_t *queue, const char *json, size_t len)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    int list = -1;
    if (!qn_json_parse (&doc, json, len, 64) && qn_json_type (&doc, 0) == QN_JSON_OBJECT)
        list = qn_json_get (&doc, 0, "messages");
    if (list < 0)
        s_requeue (codec, queue, json, len);
    else
        for (int t = qn_json_first (&doc, list); t >= 0; t = qn_json_next_sibling (&doc, list, t)) {
            size_t n;
            const char *raw = qn_json_raw (&doc, t, &n);
            s_requeue (codec, queue, raw, n);
        }
    qn_json_doc_free (&doc);
}

static void
s_on_answer (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    s_requeue_t *requeue = arg; //  Owned: the queue of a receive, or NULL
    int64_t status = 0;
    const char *json;
    size_t len;
    bool answered = res->ok && qn_hs_col_int (res, 0, 0, &status)
                 && qn_hs_col_span (res, 0, 1, &json, &len);
    if (!ctx) {
        if (requeue && answered && status == 200)
            s_requeue_all (codec, requeue, json, len);
        s_requeue_free (requeue);
        return;
    }
    s_requeue_free (requeue);
    if (!answered || status < 200 || status > 599) {
        qn_http_reply_error (ctx, 503, "ephemeral queues did not answer in time");
        return;
    }
    if (status == 204)
        qn_http_reply_empty (ctx, 204);
    else
        qn_http_reply_json (ctx, (int) status, json, len);
}

static void
s_call (qn_codec_t *codec, qn_http_ctx_t *ctx, const char *op, bool named)
{
    const char *name = named ? qn_http_param (ctx, 0) : "";
    if (named && !qn_hs_name_ok (ctx, "name", name, strlen (name), false))
        return;
    int64_t timeout = 0;
    bool present = false;
    int64_t max_wait = qn_codec_config (codec)->max_wait_ms;
    if (!qn_hs_query_int (ctx, "timeout", 0, max_wait, &timeout, &present))
        return;
    if (!present)
        timeout = S_WAIT_DEFAULT_MS;
    int64_t max = 0;
    if (!qn_hs_query_int (ctx, "max", 1, 1000, &max, &present))
        return;
    size_t sub_len = 0;
    bool ok = true;
    const char *sub = qn_hs_query_text (ctx, "subscriber", &sub_len, &ok);
    if (!ok)
        return;
    qn_msg_eph_call_t m = {
        .op = { op, strlen (op) }, .name = { name, strlen (name) },
        .body = { ctx->body, ctx->body_len }, .query = { sub, sub ? sub_len : 0 },
        .tenant = { ctx->tenant, strlen (ctx->tenant) }, .timeout_ms = timeout, .max = max
    };
    //  A request's own wait is in its body; the actor caps it at MAX_WAIT_MS.
    uint32_t wait = (uint32_t) (!strcmp (op, "request") ? max_wait : timeout) + 5000;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_eph_call_encode (&b, &m);
    s_requeue_t *requeue = NULL;
    if (!strcmp (op, "receive")) {
        requeue = qn_zalloc (sizeof *requeue);
        requeue->queue = qn_strdup (name);
        snprintf (requeue->tenant, sizeof requeue->tenant, "%s", ctx->tenant);
    }
    if (qn_codec_call (codec, ctx, "ephemeral", QN_MSG_EPH_CALL, b.data, b.size, wait,
                       s_on_answer, requeue)) {
        s_requeue_free (requeue);
        qn_http_reply_error (ctx, 503, "ephemeral queues are busy");
    }
    msgpack_sbuffer_destroy (&b);
}

#define S_ROUTE(fn, op, named) \
    static void fn (qn_codec_t *codec, qn_http_ctx_t *ctx) { s_call (codec, ctx, op, named); }
S_ROUTE (s_configure, "configure", true)
S_ROUTE (s_send, "send", true)
S_ROUTE (s_receive, "receive", true)
S_ROUTE (s_request, "request", true)
S_ROUTE (s_reply, "reply", false)
S_ROUTE (s_subscribe, "subscribe", true)
S_ROUTE (s_subscribers, "subscribers", true)
S_ROUTE (s_publish, "publish", true)
S_ROUTE (s_poll, "poll", true)
S_ROUTE (s_stats, "stats", false)

const qn_http_route_t qn_http_routes_ephemeral [] = {
    { "POST", "/api/v1/ephemeral/queues/:name", s_configure, QN_AUTH_ADMIN },
    { "POST", "/api/v1/ephemeral/queues/:name/send", s_send, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/ephemeral/queues/:name/receive", s_receive, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/ephemeral/queues/:name/request", s_request, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/ephemeral/reply", s_reply, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/ephemeral/topics/:name/subscribe", s_subscribe, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/ephemeral/topics/:name/subscribers", s_subscribers, QN_AUTH_READ_ONLY },
    { "POST", "/api/v1/ephemeral/topics/:name/publish", s_publish, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/ephemeral/topics/:name/poll", s_poll, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/ephemeral/stats", s_stats, QN_AUTH_READ_ONLY },
    { NULL, NULL, NULL, 0 }
};
