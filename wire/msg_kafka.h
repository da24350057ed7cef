/*  wire/msg_kafka.h - the kafka_acceptor <-> kafka codec conversation
    QN_MSG_KAFKA_REQUEST   kafka_acceptor -> kafka
        [conn_id, seq] + frame: one request payload (the bytes after the
        INT32 size prefix)
    QN_MSG_KAFKA_RESPONSE  kafka -> kafka_acceptor
        [conn_id, seq, close] + frame: the response payload without its
        size prefix, or no frame when the request gets no answer
        (Produce acks=0); close = close the connection after it (a
        request the spec answers by closing)
    QN_MSG_KAFKA_CLOSED    kafka_acceptor -> kafka: the client went away
        [conn_id]
    Decoders return 0, or -1 when the body is not of that shape.
    Pure: no sockets, threads or logging.
*/
#ifndef QN_WIRE_MSG_KAFKA_H
#define QN_WIRE_MSG_KAFKA_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    uint64_t conn_id;
    uint32_t seq;               //  Per connection, from 0
    bool close;                 //  Response only
} qn_msg_kafka_t;

void qn_msg_kafka_request_encode (msgpack_sbuffer *out, uint64_t conn_id, uint32_t seq);
int qn_msg_kafka_request_decode (const char *buf, size_t len, qn_msg_kafka_t *out);
void qn_msg_kafka_response_encode (msgpack_sbuffer *out, uint64_t conn_id, uint32_t seq, bool close);
int qn_msg_kafka_response_decode (const char *buf, size_t len, qn_msg_kafka_t *out);
void qn_msg_kafka_closed_encode (msgpack_sbuffer *out, uint64_t conn_id);
int qn_msg_kafka_closed_decode (const char *buf, size_t len, qn_msg_kafka_t *out);

#endif
