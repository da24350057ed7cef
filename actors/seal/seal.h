/*  actors/seal/seal.h - payload sealing shared by the front doors' codecs
    Payloads of queues with encryptionEnabled (docs/security.md) are sealed
    in the codec that receives them, before the statement that stores them,
    so nothing downstream holds their plaintext. The SQS door (sends) and
    the Kafka door (Produce) use these two functions; the rows they store
    carry is_encrypted, and every reader (HTTP pop, SQS receive, Kafka
    Fetch) opens them with the same key ring. A library used inside a
    codec's thread, not an actor: it owns nothing, the caller keeps the ring.
*/
#ifndef QN_ACTORS_SEAL_H
#define QN_ACTORS_SEAL_H

#include "kernel/config.h"
#include "wire/crypto.h"
#include "wire/msg_pg.h"

//  The key ring of QUEEN_ENCRYPTION_KEY / QUEEN_ENCRYPTION_OLD_KEYS, built
//  into *ring on first use (the settings were checked at start: the load
//  cannot fail). Empty without a key: it seals and opens nothing.
qn_crypto_keys_t *qn_seal_ring (qn_crypto_keys_t **ring, const qn_config_t *config);

//  True when payloads of encrypted queues get sealed (a current key).
bool qn_seal_can (qn_crypto_keys_t **ring, const qn_config_t *config);

//  Appends one bytea parameter (or array element) to a: the payload as
//  given, or, with `ring`, its sealed envelope (scratch is reused between
//  calls and freed by the caller). Returns 0, or -1 when sealing failed
//  (nothing appended: the caller answers an internal error).
int qn_seal_arg (qn_pg_args_t *a, const qn_crypto_keys_t *ring, const void *payload, size_t len,
                 qn_buf_t *scratch);

#endif
