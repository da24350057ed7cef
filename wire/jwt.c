/*  wire/jwt.c - JSON Web Tokens: base64url, keys, signatures and claims
    See jwt.h. Parsing order is chosen so that nothing from an unverified
    payload is looked at: split the token, read the header (alg, kid,
    crit), check the signature with a key whose type matches the
    algorithm, and only then parse and check the claims. JSON goes through
    wire/json.h (strict RFC 8259, UTF-8 checked); a member the checks rely
    on that appears twice in an object makes the token malformed, so no
    two parsers can read different claims out of one token.
    Pure: no I/O, no globals besides constant tables.
*/
#include "wire/jwt.h"
#include "wire/tenant_assert.h"
#include "wire/json.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  Bounds on what a key set holds and what a key may cost to verify.
#define S_MAX_KEYS      64
#define S_MAX_KID       256
#define S_RSA_MIN_BITS  2048
#define S_RSA_MAX_BITS  16384

typedef struct {
    qn_jwt_alg_t alg;           //  The one algorithm this key verifies
    char *kid;                  //  Owned, or NULL
    EVP_PKEY *pkey;             //  Owned: RSA or Ed25519 public key
    unsigned char *secret;      //  Owned: HS256 secret (wiped when freed)
    size_t secret_len;
} s_key_t;

struct qn_jwt_keys {
    s_key_t keys [S_MAX_KEYS];
    size_t count;
};

// ------------------------------------------------------------------ base64url
static const char s_b64url [] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void
qn_b64url_encode (qn_buf_t *out, const void *data, size_t len)
{
    const uint8_t *p = data;
    qn_buf_reserve (out, (len + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t) p [i] << 16 | (uint32_t) p [i + 1] << 8 | p [i + 2];
        char q [4] = { s_b64url [v >> 18], s_b64url [(v >> 12) & 63],
                       s_b64url [(v >> 6) & 63], s_b64url [v & 63] };
        qn_buf_append (out, q, 4);
    }
    if (len - i == 1) {
        uint32_t v = (uint32_t) p [i] << 16;
        char q [2] = { s_b64url [v >> 18], s_b64url [(v >> 12) & 63] };
        qn_buf_append (out, q, 2);
    }
    else
    if (len - i == 2) {
        uint32_t v = (uint32_t) p [i] << 16 | (uint32_t) p [i + 1] << 8;
        char q [3] = { s_b64url [v >> 18], s_b64url [(v >> 12) & 63], s_b64url [(v >> 6) & 63] };
        qn_buf_append (out, q, 3);
    }
    if (out->data)
        out->data [out->len] = 0;
}

//  Value of a base64url character, or -1.
static int
s_b64_value (unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

int64_t
qn_b64url_decode (qn_buf_t *out, const char *text, size_t len)
{
    if (len % 4 == 1)
        return -1;
    size_t start = out->len;
    qn_buf_reserve (out, len / 4 * 3 + 3);
    uint8_t *dst = (uint8_t *) out->data + start;
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = s_b64_value ((unsigned char) text [i]);
        if (v < 0)
            return -1;
        acc = acc << 6 | (uint32_t) v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            dst [n++] = (uint8_t) (acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    //  Canonical form only: the bits left over must be zero.
    if (acc != 0)
        return -1;
    out->len = start + n;
    out->data [out->len] = 0;
    return (int64_t) n;
}

// ------------------------------------------------------------------ keys
qn_jwt_keys_t *
qn_jwt_keys_new (void)
{
    return qn_zalloc (sizeof (qn_jwt_keys_t));
}

void
qn_jwt_keys_destroy (qn_jwt_keys_t **self_p)
{
    qn_jwt_keys_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->count; i++) {
        s_key_t *k = &self->keys [i];
        free (k->kid);
        EVP_PKEY_free (k->pkey);
        if (k->secret) {
            OPENSSL_cleanse (k->secret, k->secret_len);
            free (k->secret);
        }
    }
    free (self);
    *self_p = NULL;
}

size_t
qn_jwt_keys_count (const qn_jwt_keys_t *self)
{
    return self ? self->count : 0;
}

static void
s_err (char *err, size_t err_len, const char *msg)
{
    if (err && err_len)
        snprintf (err, err_len, "%s", msg);
}

//  Appends a key; takes pkey (freed on failure).
static int
s_add (qn_jwt_keys_t *self, qn_jwt_alg_t alg, EVP_PKEY *pkey, const char *kid,
       char *err, size_t err_len)
{
    if (self->count == S_MAX_KEYS) {
        EVP_PKEY_free (pkey);
        s_err (err, err_len, "too many keys");
        return -1;
    }
    s_key_t *k = &self->keys [self->count++];
    memset (k, 0, sizeof *k);
    k->alg = alg;
    k->pkey = pkey;
    k->kid = kid ? qn_strdup (kid) : NULL;
    return 0;
}

int
qn_jwt_keys_add_secret (qn_jwt_keys_t *self, const void *secret, size_t len, const char *kid)
{
    if (!len || len > 4096 || self->count == S_MAX_KEYS)
        return -1;
    s_key_t *k = &self->keys [self->count++];
    memset (k, 0, sizeof *k);
    k->alg = QN_JWT_HS256;
    k->secret = qn_malloc (len);
    memcpy (k->secret, secret, len);
    k->secret_len = len;
    k->kid = kid ? qn_strdup (kid) : NULL;
    return 0;
}

//  RSA within bounds -> RS256, Ed25519 -> EdDSA; anything else refused.
//  Takes pkey.
static int
s_add_pkey (qn_jwt_keys_t *self, EVP_PKEY *pkey, const char *kid, char *err, size_t err_len)
{
    if (EVP_PKEY_is_a (pkey, "RSA")) {
        int bits = EVP_PKEY_get_bits (pkey);
        if (bits < S_RSA_MIN_BITS || bits > S_RSA_MAX_BITS) {
            EVP_PKEY_free (pkey);
            s_err (err, err_len, "RSA key size must be 2048 to 16384 bits");
            return -1;
        }
        return s_add (self, QN_JWT_RS256, pkey, kid, err, err_len);
    }
    if (EVP_PKEY_is_a (pkey, "ED25519"))
        return s_add (self, QN_JWT_EDDSA, pkey, kid, err, err_len);
    EVP_PKEY_free (pkey);
    s_err (err, err_len, "unsupported key type (RSA or Ed25519 expected)");
    return -1;
}

int
qn_jwt_keys_add_pem (qn_jwt_keys_t *self, const char *pem, size_t len, const char *kid,
                     char *err, size_t err_len)
{
    //  One-line environment values often carry "\n" as two characters.
    qn_buf_t text = QN_BUF_INIT;
    bool escaped = !memchr (pem, '\n', len);
    for (size_t i = 0; i < len; i++) {
        if (escaped && pem [i] == '\\' && i + 1 < len && pem [i + 1] == 'n') {
            qn_buf_putc (&text, '\n');
            i++;
        }
        else
            qn_buf_putc (&text, pem [i]);
    }
    EVP_PKEY *pkey = NULL;
    OSSL_DECODER_CTX *dctx = OSSL_DECODER_CTX_new_for_pkey (&pkey, "PEM", NULL, NULL,
                                                           EVP_PKEY_PUBLIC_KEY, NULL, NULL);
    const unsigned char *data = (const unsigned char *) text.data;
    size_t data_len = text.len;
    if (dctx && text.len)
        OSSL_DECODER_from_data (dctx, &data, &data_len);
    OSSL_DECODER_CTX_free (dctx);
    if (!pkey && text.len) {
        BIO *bio = BIO_new_mem_buf (text.data, (int) text.len);
        X509 *cert = bio ? PEM_read_bio_X509 (bio, NULL, NULL, NULL) : NULL;
        if (cert)
            pkey = X509_get_pubkey (cert);
        X509_free (cert);
        BIO_free (bio);
    }
    qn_buf_free (&text);
    ERR_clear_error ();
    if (!pkey) {
        s_err (err, err_len, "not a PEM public key or certificate");
        return -1;
    }
    return s_add_pkey (self, pkey, kid, err, err_len);
}

//  String member `key` of object `obj` into out: 0, 1 if absent, -1 if not
//  a string (or holding NUL).
static int
s_member_str (const qn_json_doc_t *doc, int obj, const char *key, qn_buf_t *out)
{
    int t = qn_json_get (doc, obj, key);
    if (t < 0)
        return 1;
    qn_buf_reset (out);
    return qn_json_str (doc, t, out) == 0 ? 0 : -1;
}

//  Decodes base64url member `key` into out; -1 when absent or broken.
static int
s_member_b64 (const qn_json_doc_t *doc, int obj, const char *key, qn_buf_t *text, qn_buf_t *out)
{
    if (s_member_str (doc, obj, key, text))
        return -1;
    qn_buf_reset (out);
    return qn_b64url_decode (out, text->data, text->len) > 0 ? 0 : -1;
}

static EVP_PKEY *
s_rsa_from_jwk (const qn_buf_t *n, const qn_buf_t *e)
{
    BIGNUM *bn_n = BN_bin2bn ((const unsigned char *) n->data, (int) n->len, NULL);
    BIGNUM *bn_e = BN_bin2bn ((const unsigned char *) e->data, (int) e->len, NULL);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new ();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    EVP_PKEY *pkey = NULL;
    if (bn_n && bn_e && bld && BN_num_bits (bn_n) <= S_RSA_MAX_BITS && BN_is_odd (bn_e)
    &&  OSSL_PARAM_BLD_push_BN (bld, OSSL_PKEY_PARAM_RSA_N, bn_n)
    &&  OSSL_PARAM_BLD_push_BN (bld, OSSL_PKEY_PARAM_RSA_E, bn_e)
    &&  (params = OSSL_PARAM_BLD_to_param (bld))
    &&  (ctx = EVP_PKEY_CTX_new_from_name (NULL, "RSA", NULL))
    &&  EVP_PKEY_fromdata_init (ctx) == 1)
        EVP_PKEY_fromdata (ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params);
    EVP_PKEY_CTX_free (ctx);
    OSSL_PARAM_free (params);
    OSSL_PARAM_BLD_free (bld);
    BN_free (bn_n);
    BN_free (bn_e);
    return pkey;
}

//  One JWK into the set; 1 if added, 0 if skipped.
static int
s_add_jwk (qn_jwt_keys_t *self, const qn_json_doc_t *doc, int jwk, qn_buf_t *a, qn_buf_t *b, qn_buf_t *c)
{
    if (qn_json_type (doc, jwk) != QN_JSON_OBJECT)
        return 0;
    //  "use" other than signatures, or an algorithm we do not verify.
    int rc = s_member_str (doc, jwk, "use", a);
    if (rc < 0 || (rc == 0 && strcmp (a->data, "sig")))
        return 0;
    char kid [S_MAX_KID + 1] = "";
    rc = s_member_str (doc, jwk, "kid", a);
    if (rc < 0 || (rc == 0 && a->len > S_MAX_KID))
        return 0;
    bool has_kid = rc == 0;
    if (has_kid)
        memcpy (kid, a->data, a->len + 1);
    int alg_rc = s_member_str (doc, jwk, "alg", c);
    if (alg_rc < 0 || s_member_str (doc, jwk, "kty", a))
        return 0;
    EVP_PKEY *pkey = NULL;
    if (!strcmp (a->data, "RSA")) {
        if (alg_rc == 0 && strcmp (c->data, "RS256"))
            return 0;
        if (s_member_b64 (doc, jwk, "n", a, b) || s_member_b64 (doc, jwk, "e", a, c))
            return 0;
        pkey = s_rsa_from_jwk (b, c);
    }
    else
    if (!strcmp (a->data, "OKP")) {
        if (alg_rc == 0 && strcmp (c->data, "EdDSA"))
            return 0;
        if (s_member_str (doc, jwk, "crv", a) || strcmp (a->data, "Ed25519"))
            return 0;
        if (s_member_b64 (doc, jwk, "x", a, b) || b->len != 32)
            return 0;
        pkey = EVP_PKEY_new_raw_public_key (EVP_PKEY_ED25519, NULL,
                                            (const unsigned char *) b->data, b->len);
    }
    ERR_clear_error ();
    if (!pkey)
        return 0;
    return s_add_pkey (self, pkey, has_kid ? kid : NULL, NULL, 0) == 0 ? 1 : 0;
}

int
qn_jwt_keys_add_jwks (qn_jwt_keys_t *self, const char *json, size_t len, char *err, size_t err_len)
{
    if (len > QN_JWT_MAX_JWKS) {
        s_err (err, err_len, "JWKS document too large");
        return -1;
    }
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (qn_json_parse (&doc, json, len, 16)) {
        s_err (err, err_len, "JWKS is not valid JSON");
        qn_json_doc_free (&doc);
        return -1;
    }
    int keys = qn_json_get (&doc, 0, "keys");
    if (qn_json_type (&doc, 0) != QN_JSON_OBJECT || qn_json_type (&doc, keys) != QN_JSON_ARRAY) {
        s_err (err, err_len, "JWKS has no \"keys\" array");
        qn_json_doc_free (&doc);
        return -1;
    }
    qn_buf_t a = QN_BUF_INIT, b = QN_BUF_INIT, c = QN_BUF_INIT;
    int added = 0;
    for (int t = qn_json_first (&doc, keys); t >= 0; t = qn_json_next_sibling (&doc, keys, t))
        added += s_add_jwk (self, &doc, t, &a, &b, &c);
    qn_buf_free (&a);
    qn_buf_free (&b);
    qn_buf_free (&c);
    qn_json_doc_free (&doc);
    return added;
}

// ------------------------------------------------------------------ signatures
static bool
s_verify_hmac (const s_key_t *k, const char *input, size_t len, const qn_buf_t *sig)
{
    unsigned char mac [EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    if (!HMAC (EVP_sha256 (), k->secret, (int) k->secret_len,
               (const unsigned char *) input, len, mac, &mac_len))
        return false;
    //  Length is public (always 32); the bytes are compared in constant time.
    bool ok = sig->len == mac_len && CRYPTO_memcmp (mac, sig->data, mac_len) == 0;
    OPENSSL_cleanse (mac, sizeof mac);
    return ok;
}

static bool
s_verify_pkey (const s_key_t *k, const char *input, size_t len, const qn_buf_t *sig)
{
    if (k->alg == QN_JWT_EDDSA && sig->len != 64)
        return false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new ();
    const EVP_MD *md = k->alg == QN_JWT_RS256 ? EVP_sha256 () : NULL;
    bool ok = ctx
           && EVP_DigestVerifyInit (ctx, NULL, md, NULL, k->pkey) == 1
           && EVP_DigestVerify (ctx, (const unsigned char *) sig->data, sig->len,
                                (const unsigned char *) input, len) == 1;
    EVP_MD_CTX_free (ctx);
    ERR_clear_error ();
    return ok;
}

//  Tries every key of the token's algorithm (and kid, when both name one).
//  Returns 1 verified, 0 not verified, -1 no candidate key.
static int
s_verify_sig (const qn_jwt_keys_t *const *sets, size_t set_count, qn_jwt_alg_t alg,
              const char *kid, const char *input, size_t len, const qn_buf_t *sig)
{
    int candidates = 0;
    for (size_t s = 0; s < set_count; s++) {
        const qn_jwt_keys_t *set = sets [s];
        for (size_t i = 0; set && i < set->count; i++) {
            const s_key_t *k = &set->keys [i];
            if (k->alg != alg || (kid && k->kid && strcmp (kid, k->kid)))
                continue;
            candidates++;
            if (alg == QN_JWT_HS256 ? s_verify_hmac (k, input, len, sig)
                                    : s_verify_pkey (k, input, len, sig))
                return 1;
        }
    }
    return candidates ? 0 : -1;
}

// ------------------------------------------------------------------ tokens
const char *
qn_jwt_alg_name (qn_jwt_alg_t alg)
{
    switch (alg) {
        case QN_JWT_HS256: return "HS256";
        case QN_JWT_RS256: return "RS256";
        case QN_JWT_EDDSA: return "EdDSA";
        default: return "auto";
    }
}

int
qn_jwt_alg_parse (const char *name, qn_jwt_alg_t *alg)
{
    static const qn_jwt_alg_t all [] = { QN_JWT_AUTO, QN_JWT_HS256, QN_JWT_RS256, QN_JWT_EDDSA };
    for (size_t i = 0; i < sizeof all / sizeof all [0]; i++)
        if (!strcasecmp (name, qn_jwt_alg_name (all [i]))) {
            *alg = all [i];
            return 0;
        }
    return -1;
}

static int
s_fail (qn_jwt_result_t *r, int rc, const char *msg)
{
    snprintf (r->err, sizeof r->err, "%s", msg);
    free (r->subject);
    r->subject = NULL;
    r->level = QN_JWT_LEVEL_NONE;
    r->tenant [0] = 0;
    return rc;
}

//  Value token of `key` in object `obj`: -1 if absent, -2 if it occurs
//  more than once (parsers disagree on duplicates: refuse them).
static int
s_get_once (const qn_json_doc_t *doc, int obj, const char *key)
{
    int found = -1;
    for (int k = qn_json_first (doc, obj); k >= 0; k = qn_json_next_sibling (doc, obj, k))
        if (qn_json_str_eq (doc, k, key)) {
            if (found >= 0)
                return -2;
            found = k + 1;
        }
    return found;
}

//  Decodes a base64url segment and parses it as a JSON object into doc.
static int
s_segment_json (qn_json_doc_t *doc, qn_buf_t *bytes, const char *text, size_t len)
{
    qn_buf_reset (bytes);
    if (!len || qn_b64url_decode (bytes, text, len) <= 0)
        return -1;
    if (qn_json_parse (doc, bytes->data, bytes->len, 16) || qn_json_type (doc, 0) != QN_JSON_OBJECT)
        return -1;
    return 0;
}

static qn_jwt_alg_t
s_alg_of (const qn_json_doc_t *doc, int tok)
{
    if (qn_json_str_eq (doc, tok, "HS256"))
        return QN_JWT_HS256;
    if (qn_json_str_eq (doc, tok, "RS256"))
        return QN_JWT_RS256;
    if (qn_json_str_eq (doc, tok, "EdDSA"))
        return QN_JWT_EDDSA;
    return QN_JWT_AUTO;
}

//  Reads the header: algorithm and kid. Returns 0 or a QN_JWT_E*.
static int
s_check_header (const qn_json_doc_t *doc, const qn_jwt_policy_t *policy, qn_jwt_result_t *r,
                char kid [S_MAX_KID + 1], bool *has_kid)
{
    int alg = s_get_once (doc, 0, "alg");
    if (alg < 0 || qn_json_type (doc, alg) != QN_JSON_STRING)
        return s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: malformed token (alg)");
    r->alg = s_alg_of (doc, alg);
    if (r->alg == QN_JWT_AUTO) {
        qn_buf_t name = QN_BUF_INIT;
        qn_json_str (doc, alg, &name);
        bool none = name.len == 4 && !strncasecmp (name.data, "none", 4);
        qn_buf_free (&name);
        return s_fail (r, QN_JWT_EALG, none
            ? "Token verification failed: algorithm none is not allowed"
            : "Token verification failed: unsupported algorithm");
    }
    if (policy->algorithm != QN_JWT_AUTO && policy->algorithm != r->alg)
        return s_fail (r, QN_JWT_EALG, "Token verification failed: algorithm not allowed");
    //  No critical extension is understood (RFC 7515 §4.1.11).
    if (qn_json_get (doc, 0, "crit") >= 0)
        return s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: unsupported critical header");
    int k = s_get_once (doc, 0, "kid");
    *has_kid = false;
    if (k == -2 || (k >= 0 && qn_json_type (doc, k) != QN_JSON_STRING))
        return s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: malformed token (kid)");
    if (k >= 0) {
        qn_buf_t b = QN_BUF_INIT;
        int rc = qn_json_str (doc, k, &b);
        if (rc || b.len > S_MAX_KID) {
            qn_buf_free (&b);
            return s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: malformed token (kid)");
        }
        memcpy (kid, b.data, b.len + 1);
        *has_kid = true;
        qn_buf_free (&b);
    }
    return 0;
}

//  A NumericDate claim: 0 and *out set, 1 absent, -1 malformed.
static int
s_time_claim (const qn_json_doc_t *doc, const char *name, double *out)
{
    int t = s_get_once (doc, 0, name);
    if (t == -1)
        return 1;
    if (t < 0 || qn_json_type (doc, t) != QN_JSON_NUMBER || qn_json_number (doc, t, out))
        return -1;
    return 0;
}

static bool
s_audience_ok (const qn_json_doc_t *doc, int aud, const char *want)
{
    if (qn_json_type (doc, aud) == QN_JSON_STRING)
        return qn_json_str_eq (doc, aud, want);
    if (qn_json_type (doc, aud) != QN_JSON_ARRAY)
        return false;
    for (int t = qn_json_first (doc, aud); t >= 0; t = qn_json_next_sibling (doc, aud, t))
        if (qn_json_str_eq (doc, t, want))
            return true;
    return false;
}

//  Level granted by one role value (string token).
static int
s_role_level (const qn_json_doc_t *doc, int tok, const qn_jwt_policy_t *p)
{
    if (p->role_admin && p->role_admin [0] && qn_json_str_eq (doc, tok, p->role_admin))
        return QN_JWT_LEVEL_ADMIN;
    if (p->role_read_write && p->role_read_write [0] && qn_json_str_eq (doc, tok, p->role_read_write))
        return QN_JWT_LEVEL_READ_WRITE;
    if (p->role_read_only && p->role_read_only [0] && qn_json_str_eq (doc, tok, p->role_read_only))
        return QN_JWT_LEVEL_READ_ONLY;
    return QN_JWT_LEVEL_NONE;
}

static int
s_roles (const qn_json_doc_t *doc, const qn_jwt_policy_t *p)
{
    int level = QN_JWT_LEVEL_NONE;
    int t = p->role_claim && p->role_claim [0] ? s_get_once (doc, 0, p->role_claim) : -1;
    if (t >= 0 && qn_json_type (doc, t) == QN_JSON_STRING)
        level = s_role_level (doc, t, p);
    t = p->roles_claim && p->roles_claim [0] ? s_get_once (doc, 0, p->roles_claim) : -1;
    if (t >= 0 && qn_json_type (doc, t) == QN_JSON_ARRAY)
        for (int e = qn_json_first (doc, t); e >= 0; e = qn_json_next_sibling (doc, t, e)) {
            int l = s_role_level (doc, e, p);
            level = l > level ? l : level;
        }
    return level;
}

//  The registered claims, in the order the client's messages suggest:
//  time first, then issuer, then audience; then subject and roles.
static int
s_check_claims (const qn_json_doc_t *doc, const qn_jwt_policy_t *p, qn_jwt_result_t *r)
{
    double now = (double) p->now_s, skew = (double) p->clock_skew_s, v;
    int rc = s_time_claim (doc, "exp", &v);
    if (rc < 0)
        return s_fail (r, QN_JWT_ECLAIMS, "Token verification failed: invalid claim exp");
    if (rc == 0 && now >= v + skew)
        return s_fail (r, QN_JWT_EEXPIRED, "Token has expired");
    rc = s_time_claim (doc, "nbf", &v);
    if (rc < 0)
        return s_fail (r, QN_JWT_ECLAIMS, "Token verification failed: invalid claim nbf");
    if (rc == 0 && now + skew < v)
        return s_fail (r, QN_JWT_ENOTYET, "Token is not yet valid");
    rc = s_time_claim (doc, "iat", &v);
    if (rc < 0)
        return s_fail (r, QN_JWT_ECLAIMS, "Token verification failed: invalid claim iat");
    if (rc == 0 && now + skew < v)
        return s_fail (r, QN_JWT_ENOTYET, "Token is not yet valid");
    if (p->issuer && p->issuer [0]) {
        int t = s_get_once (doc, 0, "iss");
        if (t < 0 || !qn_json_str_eq (doc, t, p->issuer))
            return s_fail (r, QN_JWT_EISSUER, "Invalid token issuer");
    }
    if (p->audience && p->audience [0]) {
        int t = s_get_once (doc, 0, "aud");
        if (t < 0 || !s_audience_ok (doc, t, p->audience))
            return s_fail (r, QN_JWT_EAUDIENCE, "Invalid token audience");
    }
    int t = s_get_once (doc, 0, "sub");
    if (t == -2)
        return s_fail (r, QN_JWT_ECLAIMS, "Token verification failed: invalid claim sub");
    if (t >= 0 && qn_json_type (doc, t) == QN_JSON_STRING) {
        qn_buf_t sub = QN_BUF_INIT;
        int src = qn_json_str (doc, t, &sub);
        if (src || sub.len > QN_JWT_MAX_SUBJECT) {
            qn_buf_free (&sub);
            return s_fail (r, QN_JWT_ECLAIMS, "Token verification failed: invalid claim sub");
        }
        if (sub.len) {
            size_t n;
            r->subject = qn_buf_detach (&sub, &n);
        }
        qn_buf_free (&sub);
    }
    if (p->tenant_claim && p->tenant_claim [0]) {
        //  A tenant claim, when present, must be one valid tenant name.
        t = s_get_once (doc, 0, p->tenant_claim);
        if (t == -2)
            return s_fail (r, QN_JWT_ECLAIMS, "Token verification failed: invalid claim tenant");
        if (t >= 0) {
            qn_buf_t ten = QN_BUF_INIT;
            bool ok = qn_json_type (doc, t) == QN_JSON_STRING && qn_json_str (doc, t, &ten) == 0
                   && qn_tenant_name_ok (ten.data, ten.len);
            if (ok)
                memcpy (r->tenant, ten.data, ten.len), r->tenant [ten.len] = 0;
            qn_buf_free (&ten);
            if (!ok)
                return s_fail (r, QN_JWT_ECLAIMS, "Token verification failed: invalid claim tenant");
        }
    }
    r->level = s_roles (doc, p);
    return QN_JWT_OK;
}

int
qn_jwt_verify (const char *token, size_t len, const qn_jwt_keys_t *const *sets,
               size_t set_count, const qn_jwt_policy_t *policy, qn_jwt_result_t *r)
{
    memset (r, 0, sizeof *r);
    if (!token || !len)
        return s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: empty token");
    if (len > QN_JWT_MAX_LEN)
        return s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: token too large");
    const char *dot1 = memchr (token, '.', len);
    const char *dot2 = dot1 ? memchr (dot1 + 1, '.', len - (size_t) (dot1 + 1 - token)) : NULL;
    if (!dot2 || memchr (dot2 + 1, '.', len - (size_t) (dot2 + 1 - token)))
        return s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: malformed token (expected 3 parts)");
    if (dot1 == token)
        return s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: malformed token (header)");
    if (dot2 == dot1 + 1)
        return s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: malformed token (payload)");
    const char *end = token + len;
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    qn_buf_t bytes = QN_BUF_INIT, sig = QN_BUF_INIT;
    char kid [S_MAX_KID + 1] = "";
    bool has_kid = false;
    int rc;
    if (s_segment_json (&doc, &bytes, token, (size_t) (dot1 - token))) {
        rc = s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: malformed token (header)");
        goto done;
    }
    if ((rc = s_check_header (&doc, policy, r, kid, &has_kid)))
        goto done;
    if (qn_b64url_decode (&sig, dot2 + 1, (size_t) (end - dot2 - 1)) < 0) {
        rc = s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: malformed token (signature)");
        goto done;
    }
    int verified = s_verify_sig (sets, set_count, r->alg, has_kid ? kid : NULL,
                                 token, (size_t) (dot2 - token), &sig);
    if (verified < 0) {
        rc = s_fail (r, QN_JWT_ENOKEY, "Token verification failed: no key for this token");
        goto done;
    }
    if (verified == 0) {
        rc = s_fail (r, QN_JWT_ESIGNATURE, "Invalid token signature");
        goto done;
    }
    if (s_segment_json (&doc, &bytes, dot1 + 1, (size_t) (dot2 - dot1 - 1))) {
        rc = s_fail (r, QN_JWT_EMALFORMED, "Token verification failed: malformed token (payload)");
        goto done;
    }
    rc = s_check_claims (&doc, policy, r);
done:
    qn_json_doc_free (&doc);
    qn_buf_free (&bytes);
    qn_buf_free (&sig);
    return rc;
}

void
qn_jwt_result_free (qn_jwt_result_t *r)
{
    free (r->subject);
    r->subject = NULL;
}
