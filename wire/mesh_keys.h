/*  wire/mesh_keys.h - the cell's CURVE keys, derived from its secret
    Every broker of a cell derives the same two key pairs from MESH_SECRET
    (BLAKE2b keyed by a purpose label, then X25519 base-point
    multiplication): the server pair that every mesh port presents, and
    the client pair that every broker dials with. The allow-list is the
    one client public key: a peer that does not know the secret can
    neither complete the handshake with our server key nor present our
    client key. Rotation: docs/mesh.md. Pure (libsodium only).
*/
#ifndef QN_WIRE_MESH_KEYS_H
#define QN_WIRE_MESH_KEYS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t server_public [32], server_secret [32];
    uint8_t client_public [32], client_secret [32];
    uint8_t notify_mac [32];    //  crypto_auth key of the LISTEN/NOTIFY fallback
} qn_mesh_keys_t;

//  The LISTEN/NOTIFY fallback (docs/mesh.md) carries the same frames as
//  text: base64 (frame) "." base64 (HMAC-SHA512-256 of the frame under
//  notify_mac), so a database user who does not know the secret cannot
//  inject hints. Encodes into out (appended); -1 when the text would be
//  longer than max_text (PostgreSQL's NOTIFY payload limit is 8000 bytes).
int qn_mesh_notify_encode (const qn_mesh_keys_t *keys, const char *frame, size_t len,
                           size_t max_text, char *out, size_t out_len, size_t *text_len);
//  Checks and decodes a payload into frame (room for frame_cap bytes).
//  0 with *frame_len set, or -1 when malformed or not authentic.
int qn_mesh_notify_decode (const qn_mesh_keys_t *keys, const char *text, size_t len,
                           char *frame, size_t frame_cap, size_t *frame_len);

//  Derives the keys from secret (any bytes; at least 16 are required).
//  0, or -1 when the secret is too short.
int qn_mesh_keys_derive (const char *secret, size_t len, qn_mesh_keys_t *out);

#endif
