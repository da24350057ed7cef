/*  actors/kafka/acceptor.c - Kafka on the door engine ("kafka_acceptor")
    The protocol table of the Kafka door on KAFKA_PORT (actors/door/door.h:
    the engine owns sockets, the connection table, ordering,
    back-pressure, cancel-on-close and limits). Framing: an INT32 size
    prefix (wire/kafka_proto.h); a size below 8 or above
    KAFKA_MAX_REQUEST_BYTES closes the connection, as does any other
    framing error (Kafka has no error answer for it). Each frame goes to the
    codec as KAFKA_REQUEST with its sequence number; answers get their
    size prefix back here. No idle timeout: Kafka clients keep quiet
    connections open.
    Receives  QN_MSG_KAFKA_RESPONSE from the codec; STOP
    Sends     QN_MSG_KAFKA_REQUEST, QN_MSG_KAFKA_CLOSED to "kafka"
    Owns      nothing beyond the engine's connection
    Failure   a framing error or a socket error closes that client only; an
              answer out of sequence closes its client
*/
#include "actors/actors.h"
#include "actors/door/door.h"
#include "wire/kafka_proto.h"
#include "wire/msg_kafka.h"

#include <stdlib.h>
#include <string.h>

//  Adds a wire encoding's bytes to body.
static void
s_take_sbuffer (qn_buf_t *body, msgpack_sbuffer *sb)
{
    qn_buf_append (body, sb->data, sb->size);
    msgpack_sbuffer_destroy (sb);
}

static qn_door_rc_t
s_feed (void *state, const qn_config_t *config, const char *data, size_t len, size_t *used,
        qn_door_req_t *out)
{
    (void) state;
    size_t payload = 0;
    int64_t n = qn_kafka_frame (data, len, (size_t) config->kafka_max_request_bytes, &payload);
    *used = 0;
    if (n == QN_KAFKA_WIRE_INCOMPLETE)
        return QN_DOOR_MORE;
    if (n == QN_KAFKA_WIRE_MALFORMED) {
        out->error = "frame size out of bounds";
        return QN_DOOR_ERROR;
    }
    out->frame.data = qn_malloc (payload);
    memcpy (out->frame.data, data + 4, payload);
    out->frame.len = payload;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_kafka_request_encode (&sb, out->conn_id, out->seq);
    s_take_sbuffer (out->body, &sb);
    *used = (size_t) n;
    return QN_DOOR_REQUEST;
}

//  An answer with no frame: the request gets none (Produce acks=0).
static int
s_response_decode (const qn_env_t *env, qn_door_resp_t *out)
{
    qn_msg_kafka_t m;
    if (env->frame_count > 1 || qn_msg_kafka_response_decode (env->body.ptr, env->body.len, &m))
        return -1;
    *out = (qn_door_resp_t) { m.conn_id, m.seq, m.close, NULL, 0 };
    if (env->frame_count == 1) {
        out->data = env->frames [0].ptr ? env->frames [0].ptr : "";
        out->len = env->frames [0].len;
    }
    return 0;
}

static void
s_response_write (qn_buf_t *out, const char *data, size_t len)
{
    size_t at = qn_kafka_frame_begin (out);
    qn_buf_append (out, data, len);
    qn_kafka_frame_end (out, at);
}

static void
s_closed_encode (qn_buf_t *body, uint64_t conn_id)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_kafka_closed_encode (&sb, conn_id);
    s_take_sbuffer (body, &sb);
}

static const qn_door_proto_t s_kafka = {
    .name = "kafka",
    .request_type = QN_MSG_KAFKA_REQUEST, .response_type = QN_MSG_KAFKA_RESPONSE,
    .closed_type = QN_MSG_KAFKA_CLOSED,
    .max_in_flight = 64,                //  Frames of one connection at the codec
    .out_soft_limit = 4 * 1024 * 1024,
    .feed = s_feed, .response_decode = s_response_decode,
    .response_write = s_response_write, .closed_encode = s_closed_encode
};

qn_actor_t *
qn_kafka_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    qn_door_def_t def = { "kafka_acceptor", "kafka", config->kafka_port, &s_kafka };
    return qn_door_new (kernel, config, &def);
}
