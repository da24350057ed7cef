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
    crypto_generichash (out->notify_mac, 32, (const unsigned char *) secret, len,
                        (const unsigned char *) "queen-mesh-notify-v1", 20);
    return 0;
}

#define S_B64 sodium_base64_VARIANT_ORIGINAL

int
qn_mesh_notify_encode (const qn_mesh_keys_t *keys, const char *frame, size_t len,
                       size_t max_text, char *out, size_t out_len, size_t *text_len)
{
    size_t need = sodium_base64_ENCODED_LEN (len, S_B64) + 1
                + sodium_base64_ENCODED_LEN (crypto_auth_BYTES, S_B64);
    if (need > out_len || need - 2 > max_text)          //  ENCODED_LEN counts two NULs
        return -1;
    unsigned char tag [crypto_auth_BYTES];
    crypto_auth (tag, (const unsigned char *) frame, len, keys->notify_mac);
    sodium_bin2base64 (out, out_len, (const unsigned char *) frame, len, S_B64);
    size_t n = strlen (out);
    out [n++] = '.';
    sodium_bin2base64 (out + n, out_len - n, tag, sizeof tag, S_B64);
    *text_len = strlen (out);
    return 0;
}

int
qn_mesh_notify_decode (const qn_mesh_keys_t *keys, const char *text, size_t len,
                       char *frame, size_t frame_cap, size_t *frame_len)
{
    const char *dot = memchr (text, '.', len);
    if (!dot)
        return -1;
    unsigned char tag [crypto_auth_BYTES];
    size_t tag_len = 0;
    if (sodium_base642bin ((unsigned char *) frame, frame_cap, text, (size_t) (dot - text),
                           NULL, frame_len, NULL, S_B64)
    ||  sodium_base642bin (tag, sizeof tag, dot + 1, len - (size_t) (dot - text) - 1,
                           NULL, &tag_len, NULL, S_B64)
    ||  tag_len != sizeof tag)
        return -1;
    return crypto_auth_verify (tag, (const unsigned char *) frame, *frame_len, keys->notify_mac)
        ? -1 : 0;
}
