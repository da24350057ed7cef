/*  wire/proxy_keys.h - queen-proxy's API keys
    A key is "qk_<id>_<secret>": id 16 lowercase hex (public: it names the
    key's row and appears in listings and logs), secret 43 base64url
    characters (32 random bytes from libsodium). Only an Argon2id hash of
    the secret is stored (libsodium's crypto_pwhash_str, self-describing
    "$argon2id$v=19$m=..,t=..,p=..$salt$hash"); the key is shown once, at
    creation.

    Cost: the secret has 256 bits of entropy, so no hash cost makes guessing
    it easier or harder; the hash only has to be one-way and salted. Keys
    therefore use Argon2id at libsodium's minimum cost (t=1, m=8 KiB: tens
    of microseconds), cheap enough to verify on a cold cache; human
    passwords, which are guessable, use the interactive cost.
    Pure apart from libsodium's randomness; no I/O, no logging.
*/
#ifndef QN_WIRE_PROXY_KEYS_H
#define QN_WIRE_PROXY_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#define QN_KEY_ID_LEN      16                       //  hex characters
#define QN_KEY_SECRET_LEN  43                       //  base64url characters (32 bytes)
#define QN_KEY_LEN         (3 + QN_KEY_ID_LEN + 1 + QN_KEY_SECRET_LEN)
#define QN_KEY_HASH_MAX    128                      //  crypto_pwhash_STRBYTES

typedef struct {
    char key [QN_KEY_LEN + 1];          //  The whole key: shown once
    char id [QN_KEY_ID_LEN + 1];
    char hash [QN_KEY_HASH_MAX];        //  What is stored
} qn_key_new_t;

//  Makes a fresh key and its hash. Returns 0, or -1 (libsodium failed).
int qn_key_generate (qn_key_new_t *out);
//  Splits a presented key into its id and secret (pointers into key).
//  Returns 0, or -1 when it is not of the form above.
int qn_key_parse (const char *key, size_t len, char id [QN_KEY_ID_LEN + 1],
                  const char **secret, size_t *secret_len);
//  True when secret matches the stored hash (constant time in libsodium).
bool qn_key_verify (const char *hash, const char *secret, size_t secret_len);
//  Argon2id hash of a password at the interactive cost, and its check.
int qn_password_hash (char hash [QN_KEY_HASH_MAX], const char *password, size_t len);
bool qn_password_verify (const char *hash, const char *password, size_t len);
//  The value of cookie `name` in a Cookie header ("a=1; name=v; b=2"): 0 and
//  a slice into header, or -1 when absent. Pairs are split on ';', blanks
//  around them skipped; the first pair of that name wins.
int qn_cookie_get (const char *header, size_t len, const char *name, const char **value,
                   size_t *value_len);

#endif
