/*  wire/proxy_keys.c - queen-proxy's API keys (see the header)
*/
#include "wire/proxy_keys.h"
#include "wire/jwt.h"

#include <sodium.h>
#include <string.h>

static int
s_init (void)
{
    return sodium_init () < 0 ? -1 : 0;
}

int
qn_key_generate (qn_key_new_t *out)
{
    memset (out, 0, sizeof *out);
    if (s_init ())
        return -1;
    unsigned char id [QN_KEY_ID_LEN / 2], secret [32];
    randombytes_buf (id, sizeof id);
    randombytes_buf (secret, sizeof secret);
    sodium_bin2hex (out->id, sizeof out->id, id, sizeof id);
    qn_buf_t s = QN_BUF_INIT;
    qn_b64url_encode (&s, secret, sizeof secret);
    sodium_memzero (secret, sizeof secret);
    int rc = -1;
    if (s.len == QN_KEY_SECRET_LEN
    &&  crypto_pwhash_str_alg (out->hash, s.data, s.len, crypto_pwhash_argon2id_OPSLIMIT_MIN,
                               crypto_pwhash_argon2id_MEMLIMIT_MIN, crypto_pwhash_ALG_ARGON2ID13) == 0) {
        memcpy (out->key, "qk_", 3);
        memcpy (out->key + 3, out->id, QN_KEY_ID_LEN);
        out->key [3 + QN_KEY_ID_LEN] = '_';
        memcpy (out->key + 4 + QN_KEY_ID_LEN, s.data, s.len);
        out->key [QN_KEY_LEN] = 0;
        rc = 0;
    }
    sodium_memzero (s.data, s.len);
    qn_buf_free (&s);
    return rc;
}

int
qn_key_parse (const char *key, size_t len, char id [QN_KEY_ID_LEN + 1],
              const char **secret, size_t *secret_len)
{
    if (!key || len != QN_KEY_LEN || memcmp (key, "qk_", 3) || key [3 + QN_KEY_ID_LEN] != '_')
        return -1;
    for (size_t i = 0; i < QN_KEY_ID_LEN; i++) {
        char c = key [3 + i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return -1;
    }
    const char *s = key + 4 + QN_KEY_ID_LEN;
    for (size_t i = 0; i < QN_KEY_SECRET_LEN; i++) {
        char c = s [i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || c == '-' || c == '_'))
            return -1;
    }
    memcpy (id, key + 3, QN_KEY_ID_LEN);
    id [QN_KEY_ID_LEN] = 0;
    *secret = s;
    *secret_len = QN_KEY_SECRET_LEN;
    return 0;
}

bool
qn_key_verify (const char *hash, const char *secret, size_t secret_len)
{
    if (s_init () || !hash || strncmp (hash, "$argon2id$", 10))
        return false;
    return crypto_pwhash_str_verify (hash, secret, secret_len) == 0;
}

int
qn_password_hash (char hash [QN_KEY_HASH_MAX], const char *password, size_t len)
{
    if (s_init () || !len)
        return -1;
    return crypto_pwhash_str_alg (hash, password, len, crypto_pwhash_argon2id_OPSLIMIT_INTERACTIVE,
                                  crypto_pwhash_argon2id_MEMLIMIT_INTERACTIVE,
                                  crypto_pwhash_ALG_ARGON2ID13) == 0 ? 0 : -1;
}

bool
qn_password_verify (const char *hash, const char *password, size_t len)
{
    return qn_key_verify (hash, password, len);
}

int
qn_cookie_get (const char *header, size_t len, const char *name, const char **value,
               size_t *value_len)
{
    size_t nlen = strlen (name);
    size_t i = 0;
    while (i < len) {
        while (i < len && (header [i] == ' ' || header [i] == '\t' || header [i] == ';'))
            i++;
        size_t start = i;
        while (i < len && header [i] != ';')
            i++;
        size_t n = i - start;
        while (n && (header [start + n - 1] == ' ' || header [start + n - 1] == '\t'))
            n--;
        if (n > nlen && header [start + nlen] == '=' && !memcmp (header + start, name, nlen)) {
            *value = header + start + nlen + 1;
            *value_len = n - nlen - 1;
            return 0;
        }
    }
    return -1;
}
