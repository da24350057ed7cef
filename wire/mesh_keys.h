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
} qn_mesh_keys_t;

//  Derives the keys from secret (any bytes; at least 16 are required).
//  0, or -1 when the secret is too short.
int qn_mesh_keys_derive (const char *secret, size_t len, qn_mesh_keys_t *out);

#endif
