/*  wire/mesh_keys.c - CURVE keys from the cell secret (see mesh_keys.h). */
#include "wire/mesh_keys.h"

#include <sodium.h>
#include <string.h>

static void
s_pair (const char *secret, size_t len, const char *label, uint8_t pub [32], uint8_t sec [32])
{
    crypto_generichash (sec, 32, (const unsigned char *) secret, len,
                        (const unsigned char *) label, strlen (label));
    //  CURVE (libzmq) clamps the scalar as X25519 does: the public key is
    //  the base point times the clamped secret.
    crypto_scalarmult_base (pub, sec);
}

int
qn_mesh_keys_derive (const char *secret, size_t len, qn_mesh_keys_t *out)
{
    memset (out, 0, sizeof *out);
    if (!secret || len < 16 || sodium_init () < 0)
        return -1;
    s_pair (secret, len, "queen-mesh-server-v1", out->server_public, out->server_secret);
    s_pair (secret, len, "queen-mesh-client-v1", out->client_public, out->client_secret);
    return 0;
}
