/*  actors/seal/seal.c - payload sealing shared by the front doors' codecs
    See seal.h. Receives and sends nothing; owns nothing; a payload that
    cannot be sealed is reported to the caller (-1), never stored in clear.
*/
#include "actors/seal/seal.h"

qn_crypto_keys_t *
qn_seal_ring (qn_crypto_keys_t **ring, const qn_config_t *config)
{
    if (!*ring) {
        *ring = qn_crypto_keys_new ();
        qn_crypto_keys_load (*ring, config->queen_encryption_key, config->queen_encryption_old_keys,
                             NULL, 0);
    }
    return *ring;
}

bool
qn_seal_can (qn_crypto_keys_t **ring, const qn_config_t *config)
{
    return qn_crypto_keys_can_seal (qn_seal_ring (ring, config));
}

int
qn_seal_arg (qn_pg_args_t *a, const qn_crypto_keys_t *ring, const void *payload, size_t len,
             qn_buf_t *scratch)
{
    if (!ring) {
        qn_pg_args_bin (a, len? payload: "", len);
        return 0;
    }
    qn_buf_reset (scratch);
    if (qn_crypto_seal (ring, len? payload: "", len, scratch) != 0)
        return -1;
    qn_pg_args_bin (a, scratch->data, scratch->len);
    return 0;
}
