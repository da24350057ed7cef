/*  actors/http/acceptor.c - HTTP/1.1 on the door engine (actors/door/door.h)
    The protocol table of every door on HTTP framing: the broker's own
    (qn_acceptor_new: "acceptor" on PORT, talking to codec_http) and any
    other (qn_http_acceptor_new: SQS, the proxy, the sink's port). The
    engine owns sockets, the connection table, ordering, back-pressure,
    cancel-on-close and limits; this file frames (wire/http_api.c over
    llhttp): pipelined requests, 100-continue, body 413, head 431, slow
    request 408 and idle keep-alive close (timeouts), the connection cap's
    503, and error answers followed by a lingering close.
    Receives  QN_MSG_HTTP_RESPONSE from its codec; STOP
    Sends     QN_MSG_HTTP_REQUEST, QN_MSG_HTTP_CLOSED, QN_MSG_HTTP_DRAINED
              to its codec
    Owns      one llhttp parser per connection (the engine owns the rest)
    Failure   a client error closes that client only; a full codec pauses
              reading (TCP pushes back on the client)
*/
#include "actors/actors.h"
#include "actors/door/door.h"
#include "wire/http_api.h"
#include "wire/json.h"
#include "wire/msg_http.h"

#include <msgpack.h>
#include <string.h>

static void *
s_conn_new (const qn_config_t *config)
{
    qn_http_limits_t limits = {
        .max_body_bytes = (size_t) config->max_body_bytes,
        .max_header_bytes = (size_t) config->max_header_bytes,
        .max_headers = 100
    };
    return qn_http_parser_new (&limits);
}

static void
s_conn_free (void *state)
{
    qn_http_parser_t *parser = state;
    qn_http_parser_destroy (&parser);
}

static bool
s_in_request (void *state)
{
    return qn_http_parser_in_request (state);
}

//  A complete request: [conn_id, seq, method, target, keep_alive, headers]
//  and its body as the frame.
static void
s_request (qn_http_parser_t *parser, qn_door_req_t *out)
{
    qn_http_request_t *req = qn_http_parser_request (parser);
    msgpack_packer pk;
    msgpack_packer_init (&pk, out->body, qn_door_buf_write);
    qn_msg_http_request_t m = {
        .conn_id = out->conn_id, .seq = out->seq,
        .method = req->method, .method_len = strlen (req->method),
        .target = req->target.data ? req->target.data : "/", .target_len = req->target.len,
        .keep_alive = req->keep_alive && !out->draining,
        .headers = req->headers, .header_count = req->header_count
    };
    qn_msg_http_request_encode (&pk, &m);
    qn_buf_t body = QN_BUF_INIT;
    qn_http_request_take_body (req, &body);
    out->frame.data = body.data;
    out->frame.len = body.len;
    out->last = !req->keep_alive;
    qn_http_parser_next (parser);
}

static qn_door_rc_t
s_feed (void *state, const qn_config_t *config, const char *data, size_t len, size_t *used,
        qn_door_req_t *out)
{
    (void) config;
    qn_http_parser_t *parser = state;
    qn_http_rc_t rc = qn_http_parser_feed (parser, data, len, used);
    if (rc == QN_HTTP_NEED_MORE)
        return QN_DOOR_MORE;
    if (rc == QN_HTTP_CONTINUE) {
        out->interim = QN_HTTP_100_CONTINUE;
        return QN_DOOR_INTERIM;
    }
    if (rc == QN_HTTP_ERROR) {
        out->error_status = qn_http_parser_error_status (parser);
        out->error = qn_http_parser_error (parser);
        return QN_DOOR_ERROR;
    }
    s_request (parser, out);
    return QN_DOOR_REQUEST;
}

static void
s_error_answer (qn_buf_t *out, int status, const char *msg)
{
    qn_buf_t body = QN_BUF_INIT;
    qn_json_error_body (&body, msg);
    qn_http_response (out, status, "application/json", NULL, body.data, body.len, false);
    qn_buf_free (&body);
}

static int
s_response_decode (const qn_env_t *env, qn_door_resp_t *out)
{
    qn_msg_http_response_t m;
    if (env->frame_count != 1 || qn_msg_http_response_decode (env->body.ptr, env->body.len, &m))
        return -1;
    *out = (qn_door_resp_t) { m.conn_id, m.seq, m.close, env->frames [0].ptr, env->frames [0].len };
    return 0;
}

static void
s_closed_encode (qn_buf_t *body, uint64_t conn_id)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, body, qn_door_buf_write);
    qn_msg_http_closed_encode (&pk, conn_id);
}

static void
s_drained_encode (qn_buf_t *body)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, body, qn_door_buf_write);
    qn_msg_http_drained_encode (&pk);
}

static const qn_door_proto_t s_http = {
    .name = "http",
    .request_type = QN_MSG_HTTP_REQUEST, .response_type = QN_MSG_HTTP_RESPONSE,
    .closed_type = QN_MSG_HTTP_CLOSED, .drained_type = QN_MSG_HTTP_DRAINED,
    .max_in_flight = 64,                //  Pipelined requests per connection
    .out_soft_limit = 1024 * 1024,
    .linger_ms = 2000,
    .timeouts = true,
    .busy = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            "Content-Length: 32\r\nConnection: close\r\n\r\n{\"error\":\"too many connections\"}",
    .conn_new = s_conn_new, .conn_free = s_conn_free, .feed = s_feed,
    .in_request = s_in_request, .error_answer = s_error_answer,
    .response_decode = s_response_decode,
    .closed_encode = s_closed_encode, .drained_encode = s_drained_encode
};

qn_actor_t *
qn_http_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config, const qn_http_door_t *door)
{
    qn_door_def_t def = { door->name, door->codec, door->port, &s_http };
    return qn_door_new (kernel, config, &def);
}

qn_actor_t *
qn_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    qn_http_door_t door = { .name = "acceptor", .codec = "codec_http", .port = config->port };
    return qn_http_acceptor_new (kernel, config, &door);
}
