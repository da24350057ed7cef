/*  wire/msg_http.h - the acceptor <-> codec conversation
    One encode/decode pair per message body; the bodies are msgpack
    arrays, extra payload travels as a zero-copy frame.

    QN_MSG_HTTP_REQUEST   acceptor -> codec_http
        [conn_id, seq, method, target, keep_alive, [[name, value]...]]
        + frame: the request body
    QN_MSG_HTTP_RESPONSE  codec_http -> acceptor
        [conn_id, seq, close] + frame: the serialised HTTP response
    QN_MSG_HTTP_CLOSED    acceptor -> codec_http: the client went away
        [conn_id]
    QN_MSG_HTTP_DRAINED   acceptor -> codec_http
                          stopping: answer parked requests
        []

    Encoders pack with any msgpack_packer. Decoders return 0, or -1 when
    the body is not of that shape; slices point into the decoded buffer
    (or the caller's holder) and live as long as it does.
    Pure: no sockets, threads or logging.
*/
#ifndef QN_WIRE_MSG_HTTP_H
#define QN_WIRE_MSG_HTTP_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/http_api.h"

typedef struct {
    uint64_t conn_id;
    uint32_t seq;               //  Per connection, from 0: answers go out in seq order
    const char *method;         //  Not NUL-terminated
    size_t method_len;
    const char *target;         //  Not NUL-terminated
    size_t target_len;
    bool keep_alive;
    const qn_http_header_t *headers;    //  Encode: header_count headers
    uint32_t header_count;
    const msgpack_object *header_objs;  //  Decode: header_count [name, value]
} qn_msg_http_request_t;

void qn_msg_http_request_encode (msgpack_packer *pk, const qn_msg_http_request_t *m);
//  holder is initialised by the caller and destroyed after the last use of
//  out. Every header must be a [string, string] pair.
int qn_msg_http_request_decode (const char *buf, size_t len, msgpack_unpacked *holder,
                                qn_msg_http_request_t *out);
//  Header i of a decoded request (i < header_count).
void qn_msg_http_request_header (const qn_msg_http_request_t *m, uint32_t i, qn_http_header_t *out);

typedef struct {
    uint64_t conn_id;
    uint32_t seq;
    bool close;                 //  Close the connection after this answer
} qn_msg_http_response_t;

void qn_msg_http_response_encode (msgpack_packer *pk, const qn_msg_http_response_t *m);
int qn_msg_http_response_decode (const char *buf, size_t len, qn_msg_http_response_t *out);

void qn_msg_http_closed_encode (msgpack_packer *pk, uint64_t conn_id);
int qn_msg_http_closed_decode (const char *buf, size_t len, uint64_t *conn_id);

void qn_msg_http_drained_encode (msgpack_packer *pk);
int qn_msg_http_drained_decode (const char *buf, size_t len);

#endif
