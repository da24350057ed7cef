/*  wire/msg_jwks.h - the JWKS fetcher's messages
    event "jwks"  QN_MSG_JWKS_KEYS     jwks -> subscribers (codec_http)
        [generation, jwks json (bin)]  a fetched JWKS with at least one
                                       usable key
    QN_MSG_JWKS_REFRESH                codec_http -> jwks
        []                             a token named an unknown key
    Decoders return 0, or -1 when malformed; the JSON slice points into
    the decoded buffer. Pure.
*/
#ifndef QN_WIRE_MSG_JWKS_H
#define QN_WIRE_MSG_JWKS_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t generation;        //  Grows with every fetch that changed the keys
    const char *json;           //  The JWKS document, not NUL-terminated
    size_t json_len;
} qn_msg_jwks_keys_t;

void qn_msg_jwks_keys_encode (msgpack_packer *pk, const qn_msg_jwks_keys_t *m);
int qn_msg_jwks_keys_decode (const char *buf, size_t len, qn_msg_jwks_keys_t *out);

void qn_msg_jwks_refresh_encode (msgpack_packer *pk);
int qn_msg_jwks_refresh_decode (const char *buf, size_t len);

#endif
