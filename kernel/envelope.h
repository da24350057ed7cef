/*  kernel/envelope.h - the envelope between actors
    Frame 0 is the header, a positional msgpack array
        [version, type, corr, from, reply_to, ttl_ms, flags]
    (append fields, never move them; readers ignore fields they don't know
    and tolerate missing trailing ones). Frame 1 is the body (msgpack, only
    the handler decodes it). Frames 2.. are opaque payload bytes passed by
    reference (zero-copy).
    Pure functions: no sockets, no threads.
*/
#ifndef QN_KERNEL_ENVELOPE_H
#define QN_KERNEL_ENVELOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define QN_ENV_VERSION   1
#define QN_ENV_MAX_NAME  64
#define QN_ENV_FLAG_REPLY 0x01  //  Answer to a request: routed by corr
#define QN_ENV_FLAG_ERROR 0x02  //  Reply that carries an error code body

typedef struct {
    const char *ptr;
    size_t len;
} qn_slice_t;

typedef struct {
    uint8_t version;            //  Readers ignore fields they don't know
    uint16_t type;              //  QN_MSG_*
    uint64_t corr;              //  Correlation id, echoed in every reply
    qn_slice_t from;            //  Sender name, e.g. "codec_http"
    qn_slice_t reply_to;        //  Where replies go; empty means nowhere
    uint32_t ttl_ms;            //  Relative deadline; 0 means none
    uint32_t flags;             //  QN_ENV_FLAG_*
    qn_slice_t body;            //  Msgpack; only the handler decodes it
    qn_slice_t frames [8];      //  Payload frames (zero-copy views)
    uint32_t frame_count;
    int64_t received_ms;        //  Monotonic time the kernel received it
} qn_env_t;

//  Appends the msgpack header for `env` to `out`. Returns 0.
int qn_env_encode_header (const qn_env_t *env, qn_buf_t *out);
//  Decodes a header frame into env (slices point into buf). Returns 0, or
//  QN_EPROTO for a malformed header (not an array, wrong types, names
//  longer than QN_ENV_MAX_NAME, fewer than 3 fields).
int qn_env_decode_header (const char *buf, size_t len, qn_env_t *env);

#endif
