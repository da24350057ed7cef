/*  wire/crypto.h - payload encryption at rest (contract §2.10)
    AES-256-GCM through OpenSSL EVP. A sealed payload is stored as the
    contract's JSON envelope plus a key id:
        {"encrypted":"<b64>","iv":"<b64>","authTag":"<b64>","kid":"<8 hex>"}
    base64 is the standard alphabet with padding; the IV is 16 random bytes
    per message (12 to 16 are read), the tag 16 bytes; no associated data,
    so an envelope without "kid" (the reference's form) reads the same way.
    "kid" is the first 8 hex digits of SHA-256 of the raw 32-byte key: it
    picks the key of a ring without trial decryption (an envelope without
    one is tried against every key; the tag rejects the wrong ones).
    A key ring holds the current key (seals and reads) and old keys (read
    only), for rotation. The current key also keys digests (HMAC-SHA256
    under a per-label derived key): fingerprints of sealed payloads that
    do not reveal them. Pure: no I/O, no globals, no logging; randomness
    from OpenSSL's CSPRNG. Key bytes are wiped when the ring is destroyed.
    Fails by returning a negative QN_CRYPTO_E* with a one-line reason that
    never contains key material; decryption never returns unauthenticated
    bytes.
*/
#ifndef QN_WIRE_CRYPTO_H
#define QN_WIRE_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define QN_CRYPTO_KEY_LEN   32      //  AES-256
#define QN_CRYPTO_IV_LEN    16      //  Written; 12 to 16 are read
#define QN_CRYPTO_TAG_LEN   16
#define QN_CRYPTO_KID_LEN   8       //  Hex digits of the key id
#define QN_CRYPTO_MAX_KEYS  16      //  Current + old keys in one ring
#define QN_CRYPTO_DIGEST_LEN 32     //  Bytes of a keyed digest (HMAC-SHA256)

typedef enum {
    QN_CRYPTO_EMALFORMED = -1,      //  Not an envelope (or a broken one)
    QN_CRYPTO_ENOKEY = -2,          //  No key configured, or not the envelope's key
    QN_CRYPTO_EAUTH = -3,           //  Tag mismatch: altered, or a wrong key
    QN_CRYPTO_ENOTJSON = -4,        //  Authentic plaintext that is not JSON (open_json)
    QN_CRYPTO_EINTERNAL = -5        //  OpenSSL failure, or a payload over 2 GiB
} qn_crypto_err_t;

typedef struct qn_crypto_keys qn_crypto_keys_t;

// ------------------------------------------------------------------ the key ring
//  An empty ring: it seals nothing and opens nothing.
qn_crypto_keys_t *
    qn_crypto_keys_new (void);
//  Wipes the keys and frees the ring; takes NULL.
void
    qn_crypto_keys_destroy (qn_crypto_keys_t **self_p);
//  Adds the settings' keys: `current` (64 hex digits, or "" / NULL for
//  none) becomes the sealing key; `old` is a comma-separated list of 64-hex
//  keys kept for reading (blanks around entries and empty entries are
//  ignored; a key listed twice is kept once). Returns 0, or -1 with a
//  reason naming the setting in err (never the key).
int
    qn_crypto_keys_load (qn_crypto_keys_t *self, const char *current, const char *old,
                         char *err, size_t err_len);
//  Adds one raw key, as the sealing key when `current`. Returns 0, or -1
//  when the ring is full.
int
    qn_crypto_keys_add (qn_crypto_keys_t *self, const uint8_t key [QN_CRYPTO_KEY_LEN],
                        bool current);
//  True when the ring has a current key (pushes get encrypted).
bool
    qn_crypto_keys_can_seal (const qn_crypto_keys_t *self);
//  Number of keys (current and old).
size_t
    qn_crypto_keys_count (const qn_crypto_keys_t *self);
//  Key id of the current key, or NULL.
const char *
    qn_crypto_keys_current_kid (const qn_crypto_keys_t *self);
//  The key id of a raw key: 8 lowercase hex digits and a NUL.
void
    qn_crypto_kid (const uint8_t key [QN_CRYPTO_KEY_LEN], char out [QN_CRYPTO_KID_LEN + 1]);

// ------------------------------------------------------------------ envelopes
//  Encrypts `len` bytes with the current key and a fresh random IV and
//  appends the envelope (JSON text) to out. Returns 0, QN_CRYPTO_ENOKEY
//  without a current key, or QN_CRYPTO_EINTERNAL (out unchanged).
int
    qn_crypto_seal (const qn_crypto_keys_t *self, const void *plain, size_t len, qn_buf_t *out);
//  Same with a caller-chosen IV (12 to 16 bytes): known-answer tests only;
//  an IV must never be used twice with one key.
int
    qn_crypto_seal_iv (const qn_crypto_keys_t *self, const void *plain, size_t len,
                       const uint8_t *iv, size_t iv_len, qn_buf_t *out);
//  Decrypts envelope `stored` into out (replacing its contents). Returns 0,
//  or a negative QN_CRYPTO_E* with a one-line reason in why (when why_len
//  > 0); out is then empty. On success `kid` (when not NULL) gets the id of
//  the key that opened it.
int
    qn_crypto_open (const qn_crypto_keys_t *self, const char *stored, size_t len,
                    qn_buf_t *out, char *why, size_t why_len, char kid [QN_CRYPTO_KID_LEN + 1]);
//  qn_crypto_open, then checks that the plaintext is one JSON value (it is
//  inserted verbatim into responses): QN_CRYPTO_ENOTJSON otherwise.
int
    qn_crypto_open_json (const qn_crypto_keys_t *self, const char *stored, size_t len,
                         qn_buf_t *out, char *why, size_t why_len);
// ------------------------------------------------------------------ keyed digests
//  A keyed digest of `len` bytes under the current key: HMAC-SHA256 keyed
//  with HMAC-SHA256 (current key, "queen-digest-v1:" + label), so each
//  label (a use, e.g. "timer-payload") has its own key and the digest is
//  not an unkeyed hash anyone could recompute from a guessed input. The
//  same input, key and label give the same digest; another current key
//  gives another one. Returns 0, QN_CRYPTO_ENOKEY without a current key,
//  or QN_CRYPTO_EINTERNAL.
int
    qn_crypto_digest (const qn_crypto_keys_t *self, const char *label, const void *data,
                      size_t len, uint8_t out [QN_CRYPTO_DIGEST_LEN]);

//  A short name of an error code ("malformed envelope", ...).
const char *
    qn_crypto_strerror (int rc);

// ------------------------------------------------------------------ the primitive
//  AES-256-GCM without associated data: ct gets len bytes, tag 16. Returns
//  0 or -1.
int
    qn_aes256gcm_seal (const uint8_t key [QN_CRYPTO_KEY_LEN], const uint8_t *iv, size_t iv_len,
                       const uint8_t *plain, size_t len, uint8_t *ct,
                       uint8_t tag [QN_CRYPTO_TAG_LEN]);
//  Decrypts and verifies: plain gets len bytes only when the tag matches.
//  Returns 0, or -1 (authentication failure or bad arguments; plain is
//  wiped).
int
    qn_aes256gcm_open (const uint8_t key [QN_CRYPTO_KEY_LEN], const uint8_t *iv, size_t iv_len,
                       const uint8_t *ct, size_t len, const uint8_t tag [QN_CRYPTO_TAG_LEN],
                       uint8_t *plain);

#endif
