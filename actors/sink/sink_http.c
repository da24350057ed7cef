/*  actors/sink/sink_http.c - "sink_http": the sink's own /health and /metrics
    The codec behind the sink's acceptor ("sink_acceptor", made with
    qn_http_acceptor_new on SINK_PORT). Answers from the process's
    counters and gauges, which the sink actor sets (kernel/counters.c):
      GET /health   200 {"status":"ok"} or 503 {"status":"failing"} while
                    the sink's steps fail (broker or bucket unavailable),
                    with per-queue progress: committed window, watermark,
                    lag, staged windows
      GET /metrics  Prometheus text: every sink_* counter and gauge as
                    queen_sink_*
    Anything else is 404 {"error":"not found"}.
    Receives  QN_MSG_HTTP_REQUEST, QN_MSG_HTTP_CLOSED, QN_MSG_HTTP_DRAINED
    Sends     QN_MSG_HTTP_RESPONSE to "sink_acceptor"
    Owns      answers held while sink_acceptor is at its high-water mark
              (qn_door_out_t, actors/door/door.h: sent in order when it
              drains, never dropped)
    Failure   a malformed request body is dropped (the acceptor's deadline
              closes the connection)
*/
#include "actors/sink/sink.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actors/actors.h"
#include "actors/door/door.h"
#include "base/buf.h"
#include "wire/json.h"
#include "wire/msg_http.h"

typedef struct {
    qn_kernel_t *kernel;
    qn_door_out_t *out;         //  Owned: answers to sink_acceptor, held (in
                                //  order) while it is full
} self_t;

typedef struct {
    qn_buf_t *out;
    bool json;
    qn_jw_t *jw;
    int64_t failing;
} walk_t;

static void
s_each (void *arg, const char *name, int64_t value)
{
    walk_t *w = arg;
    if (strncmp (name, "sink_", 5))
        return;
    if (!strcmp (name, "sink_failing"))
        w->failing = value;
    if (w->json) {
        qn_jw_kint (w->jw, name, value);
        return;
    }
    qn_buf_printf (w->out, "queen_%s %lld\n", name, (long long) value);
}

static int
s_on_request (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_http_request_t req;
    if (qn_msg_http_request_decode (env->body.ptr, env->body.len, &holder, &req)) {
        msgpack_unpacked_destroy (&holder);
        return QN_EPROTO;
    }
    qn_buf_t body = QN_BUF_INIT, resp = QN_BUF_INIT;
    int status = 200;
    const char *type = "application/json";
    size_t tl = req.target_len;
    for (size_t i = 0; i < req.target_len; i++)
        if (req.target [i] == '?') {
            tl = i;
            break;
        }
    bool get = req.method_len == 3 && !memcmp (req.method, "GET", 3);
    if (get && tl == 7 && !memcmp (req.target, "/health", 7)) {
        qn_jw_t jw;
        walk_t w = { &body, true, &jw, 0 };
        qn_buf_t inner = QN_BUF_INIT;
        qn_jw_init (&jw, &inner);
        qn_jw_obj (&jw);
        qn_counters_each (self->kernel, s_each, &w);
        qn_jw_obj_end (&jw);
        status = w.failing ? 503 : 200;
        qn_buf_printf (&body, "{\"status\":\"%s\",\"sink\":%s}", w.failing ? "failing" : "ok", inner.data);
        qn_buf_free (&inner);
    }
    else
    if (get && tl == 8 && !memcmp (req.target, "/metrics", 8)) {
        walk_t w = { &body, false, NULL, 0 };
        qn_counters_each (self->kernel, s_each, &w);
        type = "text/plain; version=0.0.4";
    }
    else {
        status = 404;
        qn_buf_puts (&body, "{\"error\":\"not found\"}");
    }
    qn_buf_printf (&resp, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n",
                   status, status == 200 ? "OK" : status == 503 ? "Service Unavailable" : "Not Found",
                   type, body.len, req.keep_alive ? "" : "Connection: close\r\n");
    qn_buf_append (&resp, body.data, body.len);
    qn_buf_t head = QN_BUF_INIT;
    msgpack_packer pk;
    msgpack_packer_init (&pk, &head, qn_door_buf_write);
    qn_msg_http_response_encode (&pk, &(qn_msg_http_response_t) { req.conn_id, req.seq, !req.keep_alive });
    qn_frame_t frame;
    frame.data = qn_buf_detach (&resp, &frame.len);
    qn_door_out_send (self->out, head.data, head.len, &frame);
    qn_buf_free (&head);
    msgpack_unpacked_destroy (&holder);
    qn_buf_free (&body);
    return 0;
}

static int
s_on_ignore (void *self_, const qn_env_t *env)
{
    (void) self_;
    (void) env;
    return 0;
}

static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) self_;
    (void) env;
    return QN_DONE;
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    qn_door_out_destroy (&self->out);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_HTTP_REQUEST, s_on_request },
    { QN_MSG_HTTP_CLOSED, s_on_ignore },
    { QN_MSG_HTTP_DRAINED, s_on_ignore },
    { QN_MSG_STOP, s_on_stop },
    { 0, NULL }
};

qn_actor_t *
qn_sink_http_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    (void) config;
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->out = qn_door_out_new (kernel, "sink_acceptor", QN_MSG_HTTP_RESPONSE, "sink_http_responses_held");
    qn_actor_def_t def = {
        .name = "sink_http", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
