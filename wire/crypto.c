/*  wire/crypto.c - payload encryption at rest (see crypto.h)
    AES-256-GCM, SHA-256 and HMAC-SHA256 from OpenSSL, hex and base64 from libsodium,
    the envelope read with the strict JSON tokenizer.
*/
#include "wire/crypto.h"
#include "wire/json.h"

#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_IV_MIN     12
#define S_IV_MAX     16
#define S_MAX_LEN    ((size_t) INT_MAX - 64)    //  EVP lengths are ints

typedef struct {
    uint8_t key [QN_CRYPTO_KEY_LEN];
    char kid [QN_CRYPTO_KID_LEN + 1];
} s_key_t;

struct qn_crypto_keys {
    s_key_t keys [QN_CRYPTO_MAX_KEYS];
    size_t count;
    int current;                //  Index of the sealing key, or -1
};

//  snprintf into why when there is room; NULL/0 means "not wanted".
static void
s_why (char *why, size_t why_len, const char *fmt, ...)
{
    if (!why || !why_len)
        return;
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (why, why_len, fmt, ap);
    va_end (ap);
}

// ------------------------------------------------------------------ the primitive
int
qn_aes256gcm_seal (const uint8_t key [QN_CRYPTO_KEY_LEN], const uint8_t *iv, size_t iv_len,
                   const uint8_t *plain, size_t len, uint8_t *ct, uint8_t tag [QN_CRYPTO_TAG_LEN])
{
    if (iv_len < 1 || iv_len > 64 || len > S_MAX_LEN)
        return -1;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new ();
    uint8_t none [1];
    int n = 0, fin = 0;
    int rc = !c
          || EVP_EncryptInit_ex (c, EVP_aes_256_gcm (), NULL, NULL, NULL) != 1
          || EVP_CIPHER_CTX_ctrl (c, EVP_CTRL_GCM_SET_IVLEN, (int) iv_len, NULL) != 1
          || EVP_EncryptInit_ex (c, NULL, NULL, key, iv) != 1
          || (len && EVP_EncryptUpdate (c, ct, &n, plain, (int) len) != 1)
          || EVP_EncryptFinal_ex (c, len ? ct + n : none, &fin) != 1
          || (size_t) (n + fin) != len
          || EVP_CIPHER_CTX_ctrl (c, EVP_CTRL_GCM_GET_TAG, QN_CRYPTO_TAG_LEN, tag) != 1 ? -1 : 0;
    EVP_CIPHER_CTX_free (c);
    return rc;
}

int
qn_aes256gcm_open (const uint8_t key [QN_CRYPTO_KEY_LEN], const uint8_t *iv, size_t iv_len,
                   const uint8_t *ct, size_t len, const uint8_t tag [QN_CRYPTO_TAG_LEN],
                   uint8_t *plain)
{
    if (iv_len < 1 || iv_len > 64 || len > S_MAX_LEN)
        return -1;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new ();
    uint8_t none [1], tag_copy [QN_CRYPTO_TAG_LEN];
    memcpy (tag_copy, tag, sizeof tag_copy);     //  The ctrl takes a non-const pointer
    int n = 0, fin = 0;
    int rc = !c
          || EVP_DecryptInit_ex (c, EVP_aes_256_gcm (), NULL, NULL, NULL) != 1
          || EVP_CIPHER_CTX_ctrl (c, EVP_CTRL_GCM_SET_IVLEN, (int) iv_len, NULL) != 1
          || EVP_DecryptInit_ex (c, NULL, NULL, key, iv) != 1
          || (len && EVP_DecryptUpdate (c, plain, &n, ct, (int) len) != 1)
          || EVP_CIPHER_CTX_ctrl (c, EVP_CTRL_GCM_SET_TAG, QN_CRYPTO_TAG_LEN, tag_copy) != 1
          //  The tag is checked here: until then `plain` is unauthenticated.
          || EVP_DecryptFinal_ex (c, len ? plain + n : none, &fin) != 1
          || (size_t) (n + fin) != len ? -1 : 0;
    EVP_CIPHER_CTX_free (c);
    if (rc && len)
        OPENSSL_cleanse (plain, len);
    return rc;
}

// ------------------------------------------------------------------ the key ring
qn_crypto_keys_t *
qn_crypto_keys_new (void)
{
    qn_crypto_keys_t *self = qn_zalloc (sizeof *self);
    self->current = -1;
    return self;
}

void
qn_crypto_keys_destroy (qn_crypto_keys_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    OPENSSL_cleanse (*self_p, sizeof **self_p);
    free (*self_p);
    *self_p = NULL;
}

void
qn_crypto_kid (const uint8_t key [QN_CRYPTO_KEY_LEN], char out [QN_CRYPTO_KID_LEN + 1])
{
    uint8_t digest [EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    if (EVP_Digest (key, QN_CRYPTO_KEY_LEN, digest, &dlen, EVP_sha256 (), NULL) != 1 || dlen < 4)
        memset (digest, 0, 4);
    sodium_bin2hex (out, QN_CRYPTO_KID_LEN + 1, digest, QN_CRYPTO_KID_LEN / 2);
}

int
qn_crypto_keys_add (qn_crypto_keys_t *self, const uint8_t key [QN_CRYPTO_KEY_LEN], bool current)
{
    size_t at = self->count;
    for (size_t i = 0; i < self->count; i++)
        if (sodium_memcmp (self->keys [i].key, key, QN_CRYPTO_KEY_LEN) == 0)
            at = i;                 //  Known: at most promote it
    if (at == self->count) {
        if (self->count == QN_CRYPTO_MAX_KEYS)
            return -1;
        memcpy (self->keys [at].key, key, QN_CRYPTO_KEY_LEN);
        qn_crypto_kid (key, self->keys [at].kid);
        self->count++;
    }
    if (current)
        self->current = (int) at;
    return 0;
}

//  Parses 64 hex digits in [p, p+len) into key. Returns 0 or -1.
static int
s_parse_hex_key (const char *p, size_t len, uint8_t key [QN_CRYPTO_KEY_LEN])
{
    size_t got = 0;
    const char *end = NULL;
    if (len != 2 * QN_CRYPTO_KEY_LEN
    ||  sodium_hex2bin (key, QN_CRYPTO_KEY_LEN, p, len, NULL, &got, &end)
    ||  got != QN_CRYPTO_KEY_LEN || end != p + len)
        return -1;
    return 0;
}

int
qn_crypto_keys_load (qn_crypto_keys_t *self, const char *current, const char *old,
                     char *err, size_t err_len)
{
    uint8_t key [QN_CRYPTO_KEY_LEN];
    int rc = 0;
    if (current && current [0]) {
        if (s_parse_hex_key (current, strlen (current), key)) {
            s_why (err, err_len, "QUEEN_ENCRYPTION_KEY: expected 64 hex characters (32 bytes)");
            rc = -1;
        }
        else
            qn_crypto_keys_add (self, key, true);
    }
    int entry = 0;
    for (const char *p = old ? old : ""; *p && !rc; ) {
        const char *comma = strchr (p, ',');
        const char *stop = comma ? comma : p + strlen (p);
        const char *a = p, *b = stop;
        while (a < b && (*a == ' ' || *a == '\t' || *a == '\n' || *a == '\r'))
            a++;
        while (b > a && (b [-1] == ' ' || b [-1] == '\t' || b [-1] == '\n' || b [-1] == '\r'))
            b--;
        if (a < b) {
            entry++;
            if (s_parse_hex_key (a, (size_t) (b - a), key)) {
                s_why (err, err_len, "QUEEN_ENCRYPTION_OLD_KEYS: entry %d: expected 64 hex "
                       "characters (32 bytes)", entry);
                rc = -1;
            }
            else
            if (qn_crypto_keys_add (self, key, false)) {
                s_why (err, err_len, "QUEEN_ENCRYPTION_OLD_KEYS: at most %d keys in all",
                       QN_CRYPTO_MAX_KEYS);
                rc = -1;
            }
        }
        p = comma ? comma + 1 : stop;
    }
    OPENSSL_cleanse (key, sizeof key);
    return rc;
}

bool
qn_crypto_keys_can_seal (const qn_crypto_keys_t *self)
{
    return self && self->current >= 0;
}

size_t
qn_crypto_keys_count (const qn_crypto_keys_t *self)
{
    return self ? self->count : 0;
}

const char *
qn_crypto_keys_current_kid (const qn_crypto_keys_t *self)
{
    return qn_crypto_keys_can_seal (self) ? self->keys [self->current].kid : NULL;
}

// ------------------------------------------------------------------ envelopes
static void
s_put_b64 (qn_buf_t *out, const char *name, const uint8_t *bin, size_t len)
{
    size_t cap = sodium_base64_ENCODED_LEN (len, sodium_base64_VARIANT_ORIGINAL);
    qn_buf_printf (out, "\"%s\":\"", name);
    qn_buf_reserve (out, cap);
    sodium_bin2base64 (out->data + out->len, cap, bin, len, sodium_base64_VARIANT_ORIGINAL);
    out->len += strlen (out->data + out->len);
    qn_buf_putc (out, '"');
}

int
qn_crypto_seal_iv (const qn_crypto_keys_t *self, const void *plain, size_t len,
                   const uint8_t *iv, size_t iv_len, qn_buf_t *out)
{
    if (!qn_crypto_keys_can_seal (self))
        return QN_CRYPTO_ENOKEY;
    if (iv_len < S_IV_MIN || iv_len > S_IV_MAX || len > S_MAX_LEN)
        return QN_CRYPTO_EINTERNAL;
    const s_key_t *k = &self->keys [self->current];
    uint8_t *ct = qn_malloc (len ? len : 1);
    uint8_t tag [QN_CRYPTO_TAG_LEN];
    int rc = QN_CRYPTO_EINTERNAL;
    if (qn_aes256gcm_seal (k->key, iv, iv_len, plain, len, ct, tag) == 0) {
        qn_buf_putc (out, '{');
        s_put_b64 (out, "encrypted", ct, len);
        qn_buf_putc (out, ',');
        s_put_b64 (out, "iv", iv, iv_len);
        qn_buf_putc (out, ',');
        s_put_b64 (out, "authTag", tag, sizeof tag);
        qn_buf_printf (out, ",\"kid\":\"%s\"}", k->kid);
        rc = 0;
    }
    free (ct);
    return rc;
}

int
qn_crypto_seal (const qn_crypto_keys_t *self, const void *plain, size_t len, qn_buf_t *out)
{
    uint8_t iv [QN_CRYPTO_IV_LEN];
    if (!qn_crypto_keys_can_seal (self))
        return QN_CRYPTO_ENOKEY;
    if (RAND_bytes (iv, sizeof iv) != 1)
        return QN_CRYPTO_EINTERNAL;
    return qn_crypto_seal_iv (self, plain, len, iv, sizeof iv, out);
}

// ------------------------------------------------------------------ keyed digests
int
qn_crypto_digest (const qn_crypto_keys_t *self, const char *label, const void *data,
                  size_t len, uint8_t out [QN_CRYPTO_DIGEST_LEN])
{
    if (!qn_crypto_keys_can_seal (self))
        return QN_CRYPTO_ENOKEY;
    if (len > S_MAX_LEN)
        return QN_CRYPTO_EINTERNAL;
    const s_key_t *k = &self->keys [self->current];
    //  The label's key first (domain separation), then the digest under it.
    char info [128];
    int n = snprintf (info, sizeof info, "queen-digest-v1:%s", label ? label : "");
    if (n < 0 || (size_t) n >= sizeof info)
        return QN_CRYPTO_EINTERNAL;
    uint8_t sub [EVP_MAX_MD_SIZE];
    unsigned int sub_len = 0, out_len = 0;
    static const uint8_t none [1] = { 0 };
    int rc = HMAC (EVP_sha256 (), k->key, QN_CRYPTO_KEY_LEN, (const uint8_t *) info,
                   (size_t) n, sub, &sub_len) == NULL
          || sub_len != QN_CRYPTO_DIGEST_LEN
          || HMAC (EVP_sha256 (), sub, (int) sub_len, len ? data : none, len,
                   out, &out_len) == NULL
          || out_len != QN_CRYPTO_DIGEST_LEN ? QN_CRYPTO_EINTERNAL : 0;
    OPENSSL_cleanse (sub, sizeof sub);
    if (rc)
        memset (out, 0, QN_CRYPTO_DIGEST_LEN);
    return rc;
}

//  The parsed envelope: decoded binary fields, kid text.
typedef struct {
    uint8_t *ct;                //  Owned
    size_t ct_len;
    uint8_t iv [S_IV_MAX];
    size_t iv_len;
    uint8_t tag [QN_CRYPTO_TAG_LEN];
    char kid [QN_CRYPTO_KID_LEN + 1];
    bool has_kid;
} s_env_t;

//  Decodes the base64 string member `name` of the envelope into at most
//  `cap` bytes of out. Returns 0 or -1 with the reason.
static int
s_get_b64 (const qn_json_doc_t *doc, const char *name, uint8_t *out, size_t cap,
           size_t *out_len, qn_buf_t *scratch, char *why, size_t why_len)
{
    int tok = qn_json_get (doc, 0, name);
    qn_buf_reset (scratch);
    if (tok < 0 || qn_json_str (doc, tok, scratch) != 0) {
        s_why (why, why_len, "malformed envelope: \"%s\" must be a base64 string", name);
        return -1;
    }
    const char *end = NULL;
    if (sodium_base642bin (out, cap, scratch->data ? scratch->data : "", scratch->len, NULL,
                           out_len, &end, sodium_base64_VARIANT_ORIGINAL)
    ||  end != (scratch->data ? scratch->data : "") + scratch->len) {
        s_why (why, why_len, "malformed envelope: \"%s\" is not valid base64 or too long", name);
        return -1;
    }
    return 0;
}

static int
s_env_parse (const char *stored, size_t len, s_env_t *e, char *why, size_t why_len)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    qn_buf_t scratch = QN_BUF_INIT;
    int rc = QN_CRYPTO_EMALFORMED;
    if (!stored || qn_json_parse (&doc, stored, len, 2) || qn_json_type (&doc, 0) != QN_JSON_OBJECT) {
        s_why (why, why_len, "malformed envelope: not a JSON object");
        goto done;
    }
    size_t tag_len = 0;
    int ct = qn_json_get (&doc, 0, "encrypted");
    size_t ct_cap = ct >= 0 ? doc.toks [ct].len : 0;   //  >= the decoded length
    e->ct = qn_malloc (ct_cap + 1);
    if (s_get_b64 (&doc, "encrypted", e->ct, ct_cap + 1, &e->ct_len, &scratch, why, why_len)
    ||  s_get_b64 (&doc, "iv", e->iv, sizeof e->iv, &e->iv_len, &scratch, why, why_len)
    ||  s_get_b64 (&doc, "authTag", e->tag, sizeof e->tag, &tag_len, &scratch, why, why_len))
        goto done;
    if (e->iv_len < S_IV_MIN) {
        s_why (why, why_len, "malformed envelope: \"iv\" must be %d to %d bytes", S_IV_MIN, S_IV_MAX);
        goto done;
    }
    if (tag_len != QN_CRYPTO_TAG_LEN) {
        s_why (why, why_len, "malformed envelope: \"authTag\" must be %d bytes", QN_CRYPTO_TAG_LEN);
        goto done;
    }
    int kid = qn_json_get (&doc, 0, "kid");
    if (kid >= 0) {
        qn_buf_reset (&scratch);
        if (qn_json_str (&doc, kid, &scratch) || scratch.len != QN_CRYPTO_KID_LEN
        ||  strspn (scratch.data, "0123456789abcdef") != QN_CRYPTO_KID_LEN) {
            s_why (why, why_len, "malformed envelope: \"kid\" must be %d lowercase hex digits",
                   QN_CRYPTO_KID_LEN);
            goto done;
        }
        memcpy (e->kid, scratch.data, sizeof e->kid);
        e->has_kid = true;
    }
    rc = 0;
done:
    qn_buf_free (&scratch);
    qn_json_doc_free (&doc);
    return rc;
}

int
qn_crypto_open (const qn_crypto_keys_t *self, const char *stored, size_t len,
                qn_buf_t *out, char *why, size_t why_len, char kid [QN_CRYPTO_KID_LEN + 1])
{
    s_env_t e;
    memset (&e, 0, sizeof e);
    qn_buf_reset (out);
    int rc = s_env_parse (stored, len, &e, why, why_len);
    if (rc)
        goto done;
    if (!qn_crypto_keys_count (self)) {
        s_why (why, why_len, "no encryption key is configured (QUEEN_ENCRYPTION_KEY)");
        rc = QN_CRYPTO_ENOKEY;
        goto done;
    }
    qn_buf_reserve (out, e.ct_len + 1);
    bool tried = false;
    rc = QN_CRYPTO_EAUTH;
    //  The current key first: it wrote most envelopes without a kid too.
    for (size_t n = 0; n < self->count && rc; n++) {
        size_t i = self->current < 0 ? n
                 : n == 0 ? (size_t) self->current
                 : n <= (size_t) self->current ? n - 1 : n;
        const s_key_t *k = &self->keys [i];
        if (e.has_kid && strcmp (k->kid, e.kid))
            continue;
        tried = true;
        if (qn_aes256gcm_open (k->key, e.iv, e.iv_len, e.ct, e.ct_len, e.tag,
                               (uint8_t *) out->data) == 0) {
            out->len = e.ct_len;
            out->data [out->len] = 0;
            if (kid)
                memcpy (kid, k->kid, QN_CRYPTO_KID_LEN + 1);
            rc = 0;
        }
    }
    if (!tried) {
        s_why (why, why_len, "encrypted with key %s, which is not configured "
               "(QUEEN_ENCRYPTION_KEY or QUEEN_ENCRYPTION_OLD_KEYS)", e.kid);
        rc = QN_CRYPTO_ENOKEY;
    }
    else
    if (rc && e.has_kid)
        s_why (why, why_len, "authentication failed with key %s: the stored payload was altered",
               e.kid);
    else
    if (rc)
        s_why (why, why_len, "authentication failed: no configured key opens it, or it was altered");
done:
    if (rc)
        qn_buf_reset (out);
    free (e.ct);
    return rc;
}

int
qn_crypto_open_json (const qn_crypto_keys_t *self, const char *stored, size_t len,
                     qn_buf_t *out, char *why, size_t why_len)
{
    int rc = qn_crypto_open (self, stored, len, out, why, why_len, NULL);
    if (rc)
        return rc;
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (qn_json_parse (&doc, out->data, out->len, 0)) {
        s_why (why, why_len, "decrypted payload is not JSON");
        OPENSSL_cleanse (out->data, out->len);
        qn_buf_reset (out);
        rc = QN_CRYPTO_ENOTJSON;
    }
    qn_json_doc_free (&doc);
    return rc;
}

const char *
qn_crypto_strerror (int rc)
{
    switch (rc) {
        case 0:                     return "ok";
        case QN_CRYPTO_EMALFORMED:  return "malformed envelope";
        case QN_CRYPTO_ENOKEY:      return "key not configured";
        case QN_CRYPTO_EAUTH:       return "authentication failed";
        case QN_CRYPTO_ENOTJSON:    return "plaintext is not JSON";
        default:                    return "internal error";
    }
}
