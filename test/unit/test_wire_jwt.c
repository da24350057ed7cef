/*  test/unit/test_wire_jwt.c - JWT verification (wire/jwt.h)
    Golden tokens are made here with OpenSSL (HMAC, RSA and Ed25519 keys
    generated per run) and checked for what must pass and what must not:
    expiry and not-before with clock skew, signatures from the wrong key,
    issuer and audience, `alg: none`, algorithm confusion (an RS256 public
    key used as an HS256 secret), key ids, malformed base64url and JSON,
    and huge inputs. Every token is verified from an exact-size heap copy
    so ASan catches a read past its end.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/jwt.h"

#define NOW 1800000000LL
#define SECRET "correct horse battery staple, 32+"

enum { SIGN_NONE, SIGN_HS256, SIGN_PKEY };

typedef struct {
    EVP_PKEY *rsa;              //  RS256 signer
    EVP_PKEY *rsa_other;        //  Another RS256 key (wrong signatures)
    EVP_PKEY *ed;               //  EdDSA signer
    EVP_PKEY *ed_other;
    char *rsa_pem;              //  Public PEM of rsa
    char *ed_pem;
} s_keys_t;

static s_keys_t K;

// ------------------------------------------------------------------ helpers
static char *
s_pem_of (EVP_PKEY *pkey)
{
    BIO *bio = BIO_new (BIO_s_mem ());
    assert_int_equal (PEM_write_bio_PUBKEY (bio, pkey), 1);
    char *data;
    long n = BIO_get_mem_data (bio, &data);
    char *pem = qn_strndup (data, (size_t) n);
    BIO_free (bio);
    return pem;
}

static void
s_b64 (qn_buf_t *out, const char *text)
{
    qn_b64url_encode (out, text, strlen (text));
}

//  header.payload.signature, signed as `how` with `secret` or `pkey`.
static char *
s_make (const char *header, const char *payload, int how, const char *secret, EVP_PKEY *pkey)
{
    qn_buf_t t = QN_BUF_INIT;
    s_b64 (&t, header);
    qn_buf_putc (&t, '.');
    s_b64 (&t, payload);
    unsigned char sig [1024];
    size_t sig_len = 0;
    if (how == SIGN_HS256) {
        unsigned int n = 0;
        HMAC (EVP_sha256 (), secret, (int) strlen (secret), (unsigned char *) t.data, t.len, sig, &n);
        sig_len = n;
    }
    else
    if (how == SIGN_PKEY) {
        EVP_MD_CTX *ctx = EVP_MD_CTX_new ();
        const EVP_MD *md = EVP_PKEY_is_a (pkey, "RSA") ? EVP_sha256 () : NULL;
        sig_len = sizeof sig;
        assert_int_equal (EVP_DigestSignInit (ctx, NULL, md, NULL, pkey), 1);
        assert_int_equal (EVP_DigestSign (ctx, sig, &sig_len, (unsigned char *) t.data, t.len), 1);
        EVP_MD_CTX_free (ctx);
    }
    qn_buf_putc (&t, '.');
    qn_b64url_encode (&t, sig, sig_len);
    size_t n;
    return qn_buf_detach (&t, &n);
}

static qn_jwt_policy_t
s_policy (void)
{
    return (qn_jwt_policy_t) {
        .algorithm = QN_JWT_AUTO, .issuer = "queen-test", .audience = "queen",
        .clock_skew_s = 30, .now_s = NOW, .role_claim = "role", .roles_claim = "roles",
        .role_admin = "admin", .role_read_write = "read-write", .role_read_only = "read-only"
    };
}

//  Verifies from an exact-size copy; result in *r (caller frees).
static int
s_verify_p (const char *token, const qn_jwt_keys_t *keys, const qn_jwt_policy_t *p, qn_jwt_result_t *r)
{
    size_t len = strlen (token);
    char *copy = qn_malloc (len ? len : 1);
    memcpy (copy, token, len);
    const qn_jwt_keys_t *sets [2] = { keys, NULL };
    int rc = qn_jwt_verify (copy, len, sets, 2, p, r);
    free (copy);
    return rc;
}

static int
s_verify (const char *token, const qn_jwt_keys_t *keys, qn_jwt_result_t *r)
{
    qn_jwt_policy_t p = s_policy ();
    return s_verify_p (token, keys, &p, r);
}

//  Verifies and frees token; returns rc, checks the message when given.
static int
s_check (char *token, const qn_jwt_keys_t *keys, const char *msg)
{
    qn_jwt_result_t r;
    int rc = s_verify (token, keys, &r);
    if (msg)
        assert_string_equal (r.err, msg);
    if (rc)
        assert_null (r.subject);
    qn_jwt_result_free (&r);
    free (token);
    return rc;
}

static qn_jwt_keys_t *
s_secret_keys (const char *secret)
{
    qn_jwt_keys_t *k = qn_jwt_keys_new ();
    assert_int_equal (qn_jwt_keys_add_secret (k, secret, strlen (secret), NULL), 0);
    return k;
}

static qn_jwt_keys_t *
s_pem_keys (const char *pem)
{
    qn_jwt_keys_t *k = qn_jwt_keys_new ();
    char err [128];
    assert_int_equal (qn_jwt_keys_add_pem (k, pem, strlen (pem), NULL, err, sizeof err), 0);
    return k;
}

//  A claims object with the right iss/aud plus `extra` members.
static char *
s_claims (const char *extra)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_buf_printf (&b, "{\"iss\":\"queen-test\",\"aud\":\"queen\",\"iat\":%lld,\"exp\":%lld%s%s}",
                   NOW - 10, NOW + 3600, extra && extra [0] ? "," : "", extra ? extra : "");
    size_t n;
    return qn_buf_detach (&b, &n);
}

static void
s_jwk_ed (qn_buf_t *out, EVP_PKEY *pkey, const char *kid)
{
    unsigned char raw [32];
    size_t n = sizeof raw;
    assert_int_equal (EVP_PKEY_get_raw_public_key (pkey, raw, &n), 1);
    qn_buf_printf (out, "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"use\":\"sig\",\"kid\":\"%s\",\"x\":\"", kid);
    qn_b64url_encode (out, raw, n);
    qn_buf_puts (out, "\"}");
}

static void
s_jwk_rsa (qn_buf_t *out, EVP_PKEY *pkey, const char *kid, const char *alg)
{
    BIGNUM *n = NULL, *e = NULL;
    assert_int_equal (EVP_PKEY_get_bn_param (pkey, OSSL_PKEY_PARAM_RSA_N, &n), 1);
    assert_int_equal (EVP_PKEY_get_bn_param (pkey, OSSL_PKEY_PARAM_RSA_E, &e), 1);
    unsigned char nb [2048], eb [16];
    int nl = BN_bn2bin (n, nb), el = BN_bn2bin (e, eb);
    qn_buf_printf (out, "{\"kty\":\"RSA\",\"kid\":\"%s\"%s%s%s,\"n\":\"", kid,
                   alg ? ",\"alg\":\"" : "", alg ? alg : "", alg ? "\"" : "");
    qn_b64url_encode (out, nb, (size_t) nl);
    qn_buf_puts (out, "\",\"e\":\"");
    qn_b64url_encode (out, eb, (size_t) el);
    qn_buf_puts (out, "\"}");
    BN_free (n);
    BN_free (e);
}

static int
s_setup (void **state)
{
    (void) state;
    K.rsa = EVP_RSA_gen (2048);
    K.rsa_other = EVP_RSA_gen (2048);
    K.ed = EVP_PKEY_Q_keygen (NULL, NULL, "ED25519");
    K.ed_other = EVP_PKEY_Q_keygen (NULL, NULL, "ED25519");
    if (!K.rsa || !K.rsa_other || !K.ed || !K.ed_other)
        return -1;
    K.rsa_pem = s_pem_of (K.rsa);
    K.ed_pem = s_pem_of (K.ed);
    return 0;
}

static int
s_teardown (void **state)
{
    (void) state;
    EVP_PKEY_free (K.rsa);
    EVP_PKEY_free (K.rsa_other);
    EVP_PKEY_free (K.ed);
    EVP_PKEY_free (K.ed_other);
    free (K.rsa_pem);
    free (K.ed_pem);
    return 0;
}

// ------------------------------------------------------------------ base64url
static void
test_b64url (void **state)
{
    (void) state;
    static const struct { const char *plain, *enc; } v [] = {
        { "", "" }, { "f", "Zg" }, { "fo", "Zm8" }, { "foo", "Zm9v" },
        { "foob", "Zm9vYg" }, { "\xfb\xff", "-_8" }
    };
    for (size_t i = 0; i < sizeof v / sizeof v [0]; i++) {
        qn_buf_t b = QN_BUF_INIT;
        qn_b64url_encode (&b, v [i].plain, strlen (v [i].plain));
        assert_string_equal (b.data ? b.data : "", v [i].enc);
        qn_buf_t d = QN_BUF_INIT;
        assert_int_equal (qn_b64url_decode (&d, v [i].enc, strlen (v [i].enc)), (int64_t) strlen (v [i].plain));
        assert_memory_equal (d.data, v [i].plain, strlen (v [i].plain));
        qn_buf_free (&b);
        qn_buf_free (&d);
    }
    //  Every length, every byte value
    unsigned char raw [300];
    for (size_t i = 0; i < sizeof raw; i++)
        raw [i] = (unsigned char) (i * 7 + 3);
    for (size_t len = 0; len <= sizeof raw; len += 1) {
        qn_buf_t b = QN_BUF_INIT, d = QN_BUF_INIT;
        qn_b64url_encode (&b, raw, len);
        assert_int_equal (qn_b64url_decode (&d, b.data ? b.data : "", b.len), (int64_t) len);
        if (len)
            assert_memory_equal (d.data, raw, len);
        qn_buf_free (&b);
        qn_buf_free (&d);
    }
    static const char *bad [] = { "Zg==", "Zg=", "Z", "Zh", "Zm9", "Zm9v+", "Zm9v/", "Zm 9", "Zm9\n", "Zm\x80v" };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        qn_buf_t d = QN_BUF_INIT;
        qn_buf_puts (&d, "keep");
        assert_int_equal (qn_b64url_decode (&d, bad [i], strlen (bad [i])), -1);
        assert_int_equal (d.len, 4);
        qn_buf_free (&d);
    }
}

// ------------------------------------------------------------------ valid tokens
static void
test_hs256_valid (void **state)
{
    (void) state;
    qn_jwt_keys_t *keys = s_secret_keys (SECRET);
    char *claims = s_claims ("\"sub\":\"alice\",\"role\":\"read-write\"");
    char *t = s_make ("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", claims, SIGN_HS256, SECRET, NULL);
    qn_jwt_result_t r;
    assert_int_equal (s_verify (t, keys, &r), QN_JWT_OK);
    assert_int_equal (r.alg, QN_JWT_HS256);
    assert_int_equal (r.level, QN_JWT_LEVEL_READ_WRITE);
    assert_string_equal (r.subject, "alice");
    qn_jwt_result_free (&r);
    assert_null (r.subject);
    free (t);
    free (claims);
    qn_jwt_keys_destroy (&keys);
    assert_null (keys);
}

static void
test_rs256_valid_pem (void **state)
{
    (void) state;
    qn_jwt_keys_t *keys = s_pem_keys (K.rsa_pem);
    char *claims = s_claims ("\"sub\":\"svc-1\",\"role\":\"admin\"");
    char *t = s_make ("{\"alg\":\"RS256\"}", claims, SIGN_PKEY, NULL, K.rsa);
    qn_jwt_result_t r;
    assert_int_equal (s_verify (t, keys, &r), QN_JWT_OK);
    assert_int_equal (r.alg, QN_JWT_RS256);
    assert_int_equal (r.level, QN_JWT_LEVEL_ADMIN);
    assert_string_equal (r.subject, "svc-1");
    qn_jwt_result_free (&r);
    free (t);
    free (claims);
    qn_jwt_keys_destroy (&keys);
}

static void
test_eddsa_valid (void **state)
{
    (void) state;
    //  From PEM, and from a JWKS with a matching kid
    qn_jwt_keys_t *pem = s_pem_keys (K.ed_pem);
    qn_buf_t jwks = QN_BUF_INIT;
    qn_buf_puts (&jwks, "{\"keys\":[");
    s_jwk_ed (&jwks, K.ed, "ed-1");
    qn_buf_puts (&jwks, "]}");
    qn_jwt_keys_t *set = qn_jwt_keys_new ();
    char err [128];
    assert_int_equal (qn_jwt_keys_add_jwks (set, jwks.data, jwks.len, err, sizeof err), 1);
    char *claims = s_claims ("\"sub\":\"bob\",\"roles\":[\"other\",\"read-only\"]");
    char *t = s_make ("{\"alg\":\"EdDSA\",\"kid\":\"ed-1\"}", claims, SIGN_PKEY, NULL, K.ed);
    qn_jwt_result_t r;
    assert_int_equal (s_verify (t, pem, &r), QN_JWT_OK);
    assert_int_equal (r.alg, QN_JWT_EDDSA);
    assert_int_equal (r.level, QN_JWT_LEVEL_READ_ONLY);
    qn_jwt_result_free (&r);
    assert_int_equal (s_verify (t, set, &r), QN_JWT_OK);
    assert_string_equal (r.subject, "bob");
    qn_jwt_result_free (&r);
    free (t);
    free (claims);
    qn_buf_free (&jwks);
    qn_jwt_keys_destroy (&pem);
    qn_jwt_keys_destroy (&set);
}

static void
test_roles (void **state)
{
    (void) state;
    qn_jwt_keys_t *keys = s_secret_keys (SECRET);
    static const struct { const char *extra; int level; } cases [] = {
        { "", QN_JWT_LEVEL_NONE },
        { "\"role\":\"superuser\"", QN_JWT_LEVEL_NONE },
        { "\"role\":\"read-only\"", QN_JWT_LEVEL_READ_ONLY },
        { "\"role\":\"ADMIN\"", QN_JWT_LEVEL_NONE },                //  Exact match
        { "\"role\":[\"admin\"]", QN_JWT_LEVEL_NONE },              //  Not a string
        { "\"roles\":\"admin\"", QN_JWT_LEVEL_NONE },               //  Not an array
        { "\"roles\":[\"read-only\",\"admin\",7]", QN_JWT_LEVEL_ADMIN },
        { "\"role\":\"read-only\",\"roles\":[\"read-write\"]", QN_JWT_LEVEL_READ_WRITE },
        { "\"role\":\"adm\\u0069n\"", QN_JWT_LEVEL_ADMIN },         //  Escapes read as text
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *claims = s_claims (cases [i].extra);
        char *t = s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, SECRET, NULL);
        qn_jwt_result_t r;
        assert_int_equal (s_verify (t, keys, &r), QN_JWT_OK);
        assert_int_equal (r.level, cases [i].level);
        assert_null (r.subject);
        qn_jwt_result_free (&r);
        free (t);
        free (claims);
    }
    //  Custom claim names and role values
    qn_jwt_policy_t p = s_policy ();
    p.role_claim = "queen_role";
    p.roles_claim = "groups";
    p.role_admin = "ops";
    p.role_read_write = "";                 //  Empty never matches
    char *claims = s_claims ("\"queen_role\":\"\",\"groups\":[\"ops\"],\"role\":\"admin\"");
    char *t = s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, SECRET, NULL);
    qn_jwt_result_t r;
    assert_int_equal (s_verify_p (t, keys, &p, &r), QN_JWT_OK);
    assert_int_equal (r.level, QN_JWT_LEVEL_ADMIN);
    qn_jwt_result_free (&r);
    free (t);
    free (claims);
    qn_jwt_keys_destroy (&keys);
}

static void
test_subject (void **state)
{
    (void) state;
    qn_jwt_keys_t *keys = s_secret_keys (SECRET);
    static const char *none [] = { "", "\"sub\":\"\"", "\"sub\":42", "\"sub\":null" };
    for (size_t i = 0; i < sizeof none / sizeof none [0]; i++) {
        char *claims = s_claims (none [i]);
        char *t = s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, SECRET, NULL);
        qn_jwt_result_t r;
        assert_int_equal (s_verify (t, keys, &r), QN_JWT_OK);
        assert_null (r.subject);
        qn_jwt_result_free (&r);
        free (t);
        free (claims);
    }
    //  Unicode escapes decode; NUL and oversize subjects are refused
    char *claims = s_claims ("\"sub\":\"caf\\u00e9\"");
    char *t = s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, SECRET, NULL);
    qn_jwt_result_t r;
    assert_int_equal (s_verify (t, keys, &r), QN_JWT_OK);
    assert_string_equal (r.subject, "caf\xc3\xa9");
    qn_jwt_result_free (&r);
    free (t);
    free (claims);
    claims = s_claims ("\"sub\":\"a\\u0000b\"");
    assert_int_equal (s_check (s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, SECRET, NULL), keys,
                               "Token verification failed: invalid claim sub"), QN_JWT_ECLAIMS);
    free (claims);
    qn_buf_t big = QN_BUF_INIT;
    qn_buf_puts (&big, "\"sub\":\"");
    for (int i = 0; i < QN_JWT_MAX_SUBJECT + 1; i++)
        qn_buf_putc (&big, 'x');
    qn_buf_putc (&big, '"');
    claims = s_claims (big.data);
    assert_int_equal (s_check (s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, SECRET, NULL), keys, NULL),
                      QN_JWT_ECLAIMS);
    free (claims);
    qn_buf_free (&big);
    qn_jwt_keys_destroy (&keys);
}

// ------------------------------------------------------------------ time claims
static char *
s_timed (const char *members)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_buf_printf (&b, "{\"iss\":\"queen-test\",\"aud\":\"queen\"%s%s}", members [0] ? "," : "", members);
    char *t = s_make ("{\"alg\":\"HS256\"}", b.data, SIGN_HS256, SECRET, NULL);
    qn_buf_free (&b);
    return t;
}

static void
test_time_claims (void **state)
{
    (void) state;
    qn_jwt_keys_t *keys = s_secret_keys (SECRET);
    char m [128];
    //  exp: expired beyond the skew; inside the skew still fine
    snprintf (m, sizeof m, "\"exp\":%lld", NOW - 31);
    assert_int_equal (s_check (s_timed (m), keys, "Token has expired"), QN_JWT_EEXPIRED);
    snprintf (m, sizeof m, "\"exp\":%lld", NOW - 10);
    assert_int_equal (s_check (s_timed (m), keys, NULL), QN_JWT_OK);
    snprintf (m, sizeof m, "\"exp\":%lld.5", NOW + 100);
    assert_int_equal (s_check (s_timed (m), keys, NULL), QN_JWT_OK);
    //  No exp at all is accepted (the contract does not require one)
    assert_int_equal (s_check (s_timed (""), keys, NULL), QN_JWT_OK);
    //  nbf and iat in the future
    snprintf (m, sizeof m, "\"nbf\":%lld", NOW + 100);
    assert_int_equal (s_check (s_timed (m), keys, "Token is not yet valid"), QN_JWT_ENOTYET);
    snprintf (m, sizeof m, "\"nbf\":%lld", NOW + 20);
    assert_int_equal (s_check (s_timed (m), keys, NULL), QN_JWT_OK);
    snprintf (m, sizeof m, "\"iat\":%lld", NOW + 100);
    assert_int_equal (s_check (s_timed (m), keys, "Token is not yet valid"), QN_JWT_ENOTYET);
    //  Broken time claims
    static const char *bad [] = {
        "\"exp\":\"tomorrow\"", "\"exp\":null", "\"nbf\":true", "\"iat\":[1]", "\"exp\":1e999",
        "\"exp\":9999999999,\"exp\":1"
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        assert_int_equal (s_check (s_timed (bad [i]), keys, NULL), QN_JWT_ECLAIMS);
    //  No skew: the second of expiry is already too late
    qn_jwt_policy_t p = s_policy ();
    p.clock_skew_s = 0;
    snprintf (m, sizeof m, "\"exp\":%lld", NOW);
    char *t = s_timed (m);
    qn_jwt_result_t r;
    assert_int_equal (s_verify_p (t, keys, &p, &r), QN_JWT_EEXPIRED);
    qn_jwt_result_free (&r);
    free (t);
    qn_jwt_keys_destroy (&keys);
}

// ------------------------------------------------------------------ refusals
static void
test_wrong_signature (void **state)
{
    (void) state;
    qn_jwt_keys_t *hs = s_secret_keys (SECRET);
    qn_jwt_keys_t *rs = s_pem_keys (K.rsa_pem);
    qn_jwt_keys_t *ed = s_pem_keys (K.ed_pem);
    char *claims = s_claims ("\"sub\":\"eve\",\"role\":\"admin\"");
    assert_int_equal (s_check (s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, "another secret", NULL),
                               hs, "Invalid token signature"), QN_JWT_ESIGNATURE);
    assert_int_equal (s_check (s_make ("{\"alg\":\"RS256\"}", claims, SIGN_PKEY, NULL, K.rsa_other),
                               rs, "Invalid token signature"), QN_JWT_ESIGNATURE);
    assert_int_equal (s_check (s_make ("{\"alg\":\"EdDSA\"}", claims, SIGN_PKEY, NULL, K.ed_other),
                               ed, "Invalid token signature"), QN_JWT_ESIGNATURE);
    //  RS256 header, Ed25519 signature (and the reverse)
    assert_int_equal (s_check (s_make ("{\"alg\":\"RS256\"}", claims, SIGN_PKEY, NULL, K.ed),
                               rs, NULL), QN_JWT_ESIGNATURE);
    assert_int_equal (s_check (s_make ("{\"alg\":\"EdDSA\"}", claims, SIGN_PKEY, NULL, K.rsa),
                               ed, NULL), QN_JWT_ESIGNATURE);
    //  A signature moved onto another payload
    char *good = s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, SECRET, NULL);
    char *other = s_claims ("\"sub\":\"eve\",\"role\":\"admin\",\"x\":1");
    qn_buf_t forged = QN_BUF_INIT;
    s_b64 (&forged, "{\"alg\":\"HS256\"}");
    qn_buf_putc (&forged, '.');
    s_b64 (&forged, other);
    qn_buf_puts (&forged, strrchr (good, '.'));
    size_t n;
    assert_int_equal (s_check (qn_buf_detach (&forged, &n), hs, "Invalid token signature"), QN_JWT_ESIGNATURE);
    //  Truncated and empty signatures
    char *cut = qn_strdup (good);
    cut [strlen (cut) - 3] = 0;            //  43 -> 40 characters: 30 bytes
    assert_int_equal (s_check (cut, hs, NULL), QN_JWT_ESIGNATURE);
    cut = qn_strdup (good);
    strrchr (cut, '.') [1] = 0;
    assert_int_equal (s_check (cut, hs, NULL), QN_JWT_ESIGNATURE);
    //  A signature that verifies is checked before any claim: an expired
    //  token with a bad signature is a bad signature
    char m [64];
    snprintf (m, sizeof m, "\"exp\":%lld", NOW - 1000);
    char *old = s_claims (m);
    assert_int_equal (s_check (s_make ("{\"alg\":\"HS256\"}", old, SIGN_HS256, "nope", NULL), hs,
                               "Invalid token signature"), QN_JWT_ESIGNATURE);
    free (old);
    free (good);
    free (other);
    free (claims);
    qn_jwt_keys_destroy (&hs);
    qn_jwt_keys_destroy (&rs);
    qn_jwt_keys_destroy (&ed);
}

static void
test_issuer_audience (void **state)
{
    (void) state;
    qn_jwt_keys_t *keys = s_secret_keys (SECRET);
    static const struct { const char *claims; int rc; } cases [] = {
        { "{\"iss\":\"queen-test\",\"aud\":\"queen\"}", QN_JWT_OK },
        { "{\"iss\":\"evil\",\"aud\":\"queen\"}", QN_JWT_EISSUER },
        { "{\"aud\":\"queen\"}", QN_JWT_EISSUER },
        { "{\"iss\":[\"queen-test\"],\"aud\":\"queen\"}", QN_JWT_EISSUER },
        { "{\"iss\":\"queen-test\",\"aud\":\"other\"}", QN_JWT_EAUDIENCE },
        { "{\"iss\":\"queen-test\"}", QN_JWT_EAUDIENCE },
        { "{\"iss\":\"queen-test\",\"aud\":[\"a\",\"queen\"]}", QN_JWT_OK },
        { "{\"iss\":\"queen-test\",\"aud\":[\"a\",\"b\"]}", QN_JWT_EAUDIENCE },
        { "{\"iss\":\"queen-test\",\"aud\":[]}", QN_JWT_EAUDIENCE },
        { "{\"iss\":\"queen-test\",\"aud\":\"queen \"}", QN_JWT_EAUDIENCE },
        { "{\"iss\":\"queen-test\",\"iss\":\"evil\",\"aud\":\"queen\"}", QN_JWT_EISSUER },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *t = s_make ("{\"alg\":\"HS256\"}", cases [i].claims, SIGN_HS256, SECRET, NULL);
        const char *msg = cases [i].rc == QN_JWT_EISSUER ? "Invalid token issuer"
                        : cases [i].rc == QN_JWT_EAUDIENCE ? "Invalid token audience" : NULL;
        assert_int_equal (s_check (t, keys, msg), cases [i].rc);
    }
    //  Unset issuer and audience are not checked
    qn_jwt_policy_t p = s_policy ();
    p.issuer = "";
    p.audience = NULL;
    char *t = s_make ("{\"alg\":\"HS256\"}", "{\"iss\":\"anyone\"}", SIGN_HS256, SECRET, NULL);
    qn_jwt_result_t r;
    assert_int_equal (s_verify_p (t, keys, &p, &r), QN_JWT_OK);
    qn_jwt_result_free (&r);
    free (t);
    qn_jwt_keys_destroy (&keys);
}

static void
test_alg_none (void **state)
{
    (void) state;
    qn_jwt_keys_t *keys = s_secret_keys (SECRET);
    char *claims = s_claims ("\"sub\":\"eve\",\"role\":\"admin\"");
    static const char *headers [] = {
        "{\"alg\":\"none\"}", "{\"alg\":\"None\"}", "{\"alg\":\"NONE\",\"typ\":\"JWT\"}"
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers [0]; i++) {
        assert_int_equal (s_check (s_make (headers [i], claims, SIGN_NONE, NULL, NULL), keys,
                                   "Token verification failed: algorithm none is not allowed"),
                          QN_JWT_EALG);
        //  ... even with a "signature" attached
        assert_int_equal (s_check (s_make (headers [i], claims, SIGN_HS256, SECRET, NULL), keys, NULL),
                          QN_JWT_EALG);
    }
    static const char *other [] = { "{\"alg\":\"HS512\"}", "{\"alg\":\"RS384\"}", "{\"alg\":\"ES256\"}",
                                    "{\"alg\":\"hs256\"}", "{\"alg\":\"\"}" };
    for (size_t i = 0; i < sizeof other / sizeof other [0]; i++)
        assert_int_equal (s_check (s_make (other [i], claims, SIGN_HS256, SECRET, NULL), keys,
                                   "Token verification failed: unsupported algorithm"), QN_JWT_EALG);
    free (claims);
    qn_jwt_keys_destroy (&keys);
}

static void
test_alg_confusion (void **state)
{
    (void) state;
    char *claims = s_claims ("\"sub\":\"eve\",\"role\":\"admin\"");
    //  The RSA public key (public knowledge) used as an HMAC secret: no
    //  HS256 key exists, so nothing can verify it
    qn_jwt_keys_t *rs = s_pem_keys (K.rsa_pem);
    assert_int_equal (s_check (s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, K.rsa_pem, NULL),
                               rs, "Token verification failed: no key for this token"), QN_JWT_ENOKEY);
    //  With a real secret next to it, the forged tag still fails
    assert_int_equal (qn_jwt_keys_add_secret (rs, SECRET, strlen (SECRET), NULL), 0);
    assert_int_equal (s_check (s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, K.rsa_pem, NULL),
                               rs, "Invalid token signature"), QN_JWT_ESIGNATURE);
    //  An algorithm pinned by the setting refuses the others outright
    qn_jwt_policy_t p = s_policy ();
    p.algorithm = QN_JWT_RS256;
    char *t = s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, SECRET, NULL);
    qn_jwt_result_t r;
    assert_int_equal (s_verify_p (t, rs, &p, &r), QN_JWT_EALG);
    assert_string_equal (r.err, "Token verification failed: algorithm not allowed");
    qn_jwt_result_free (&r);
    free (t);
    t = s_make ("{\"alg\":\"RS256\"}", claims, SIGN_PKEY, NULL, K.rsa);
    assert_int_equal (s_verify_p (t, rs, &p, &r), QN_JWT_OK);
    qn_jwt_result_free (&r);
    free (t);
    //  EdDSA token while only RSA and HMAC keys exist
    assert_int_equal (s_check (s_make ("{\"alg\":\"EdDSA\"}", claims, SIGN_PKEY, NULL, K.ed), rs, NULL),
                      QN_JWT_ENOKEY);
    //  The Ed25519 public key as an HMAC secret
    qn_jwt_keys_t *ed = s_pem_keys (K.ed_pem);
    assert_int_equal (s_check (s_make ("{\"alg\":\"HS256\"}", claims, SIGN_HS256, K.ed_pem, NULL), ed, NULL),
                      QN_JWT_ENOKEY);
    free (claims);
    qn_jwt_keys_destroy (&rs);
    qn_jwt_keys_destroy (&ed);
}

static void
test_kid_selection (void **state)
{
    (void) state;
    qn_buf_t jwks = QN_BUF_INIT;
    qn_buf_puts (&jwks, "{\"keys\":[");
    s_jwk_ed (&jwks, K.ed_other, "k1");
    qn_buf_putc (&jwks, ',');
    s_jwk_ed (&jwks, K.ed, "k2");
    qn_buf_putc (&jwks, ',');
    s_jwk_rsa (&jwks, K.rsa, "r1", "RS256");
    qn_buf_puts (&jwks, "]}");
    qn_jwt_keys_t *set = qn_jwt_keys_new ();
    char err [128];
    assert_int_equal (qn_jwt_keys_add_jwks (set, jwks.data, jwks.len, err, sizeof err), 3);
    assert_int_equal (qn_jwt_keys_count (set), 3);
    char *claims = s_claims ("\"role\":\"read-only\"");
    assert_int_equal (s_check (s_make ("{\"alg\":\"EdDSA\",\"kid\":\"k2\"}", claims, SIGN_PKEY, NULL, K.ed),
                               set, NULL), QN_JWT_OK);
    //  Named key is the wrong one: signature, not "no key"
    assert_int_equal (s_check (s_make ("{\"alg\":\"EdDSA\",\"kid\":\"k1\"}", claims, SIGN_PKEY, NULL, K.ed),
                               set, NULL), QN_JWT_ESIGNATURE);
    assert_int_equal (s_check (s_make ("{\"alg\":\"EdDSA\",\"kid\":\"k9\"}", claims, SIGN_PKEY, NULL, K.ed),
                               set, NULL), QN_JWT_ENOKEY);
    //  No kid: any key of the algorithm may verify
    assert_int_equal (s_check (s_make ("{\"alg\":\"EdDSA\"}", claims, SIGN_PKEY, NULL, K.ed), set, NULL),
                      QN_JWT_OK);
    assert_int_equal (s_check (s_make ("{\"alg\":\"RS256\",\"kid\":\"r1\"}", claims, SIGN_PKEY, NULL, K.rsa),
                               set, NULL), QN_JWT_OK);
    //  A kid on an RSA key does not make it usable for EdDSA
    assert_int_equal (s_check (s_make ("{\"alg\":\"EdDSA\",\"kid\":\"r1\"}", claims, SIGN_PKEY, NULL, K.ed),
                               set, NULL), QN_JWT_ENOKEY);
    //  Keys in a second set are found too; NULL sets are skipped
    qn_jwt_keys_t *empty = qn_jwt_keys_new ();
    const qn_jwt_keys_t *sets [3] = { empty, NULL, set };
    qn_jwt_policy_t p = s_policy ();
    char *t = s_make ("{\"alg\":\"EdDSA\",\"kid\":\"k2\"}", claims, SIGN_PKEY, NULL, K.ed);
    qn_jwt_result_t r;
    assert_int_equal (qn_jwt_verify (t, strlen (t), sets, 3, &p, &r), QN_JWT_OK);
    qn_jwt_result_free (&r);
    free (t);
    free (claims);
    qn_buf_free (&jwks);
    qn_jwt_keys_destroy (&set);
    qn_jwt_keys_destroy (&empty);
}

// ------------------------------------------------------------------ malformed
static char *
s_raw3 (const char *h, const char *p, const char *s)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_buf_printf (&b, "%s.%s.%s", h, p, s);
    size_t n;
    return qn_buf_detach (&b, &n);
}

static void
test_malformed (void **state)
{
    (void) state;
    qn_jwt_keys_t *keys = s_secret_keys (SECRET);
    //  Structure
    static const char *shapes [] = {
        "", "abc", "a.b", "a.b.c.d", "..", "...", ".eyJ9.sig", "eyJhbGciOiJIUzI1NiJ9..sig",
        "***.eyJ9.sig", "eyJhbGciOiJIUzI1NiJ9=.e30.", "eyJhbGciOiJIUzI1NiJ9.e30.sig$",
        "eyJhbGciOiJIUzI1NiJ9.e30.a"
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes [0]; i++)
        assert_int_equal (s_check (qn_strdup (shapes [i]), keys, NULL), QN_JWT_EMALFORMED);
    //  Headers that are not the JSON object they should be
    static const char *headers [] = {
        "not json", "[1]", "\"HS256\"", "{}", "{\"alg\":256}", "{\"alg\":null}",
        "{\"alg\":\"HS256\",\"alg\":\"HS256\"}", "{\"alg\":\"HS256\",\"crit\":[\"exp\"]}",
        "{\"alg\":\"HS256\",\"kid\":7}", "{\"alg\":\"HS256\",\"kid\":\"a\\u0000\"}",
        "{\"alg\":\"HS256\"", "{\"alg\":\"HS256\"}x", "{\"alg\":\"HS\xff\"}", ""
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers [0]; i++)
        assert_int_equal (s_check (s_make (headers [i], "{}", SIGN_HS256, SECRET, NULL), keys, NULL),
                          QN_JWT_EMALFORMED);
    //  Payloads that are not JSON objects, correctly signed
    static const char *payloads [] = { "nope", "[]", "42", "{\"a\":1", "{\"a\":\"\xc3\"}", "" };
    for (size_t i = 0; i < sizeof payloads / sizeof payloads [0]; i++)
        assert_int_equal (s_check (s_make ("{\"alg\":\"HS256\"}", payloads [i], SIGN_HS256, SECRET, NULL),
                                   keys, "Token verification failed: malformed token (payload)"),
                          QN_JWT_EMALFORMED);
    //  Deep nesting in the header
    qn_buf_t deep = QN_BUF_INIT;
    qn_buf_puts (&deep, "{\"alg\":\"HS256\",\"x\":");
    for (int i = 0; i < 5000; i++)
        qn_buf_putc (&deep, '[');
    for (int i = 0; i < 5000; i++)
        qn_buf_putc (&deep, ']');
    qn_buf_putc (&deep, '}');
    qn_buf_t h = QN_BUF_INIT;
    s_b64 (&h, deep.data);
    char *t = s_raw3 (h.data, "e30", "AAAA");
    assert_int_equal (s_check (t, keys, NULL), QN_JWT_EMALFORMED);
    qn_buf_free (&deep);
    qn_buf_free (&h);
    //  A NULL token
    qn_jwt_policy_t p = s_policy ();
    qn_jwt_result_t r;
    assert_int_equal (qn_jwt_verify (NULL, 0, NULL, 0, &p, &r), QN_JWT_EMALFORMED);
    qn_jwt_result_free (&r);
    qn_jwt_keys_destroy (&keys);
}

static void
test_huge (void **state)
{
    (void) state;
    qn_jwt_keys_t *keys = s_secret_keys (SECRET);
    //  1 MiB of base64url with dots: refused on size, before any decoding
    size_t len = 1 << 20;
    char *t = qn_malloc (len + 1);
    memset (t, 'A', len);
    t [100] = '.';
    t [len - 100] = '.';
    t [len] = 0;
    assert_int_equal (s_check (t, keys, "Token verification failed: token too large"), QN_JWT_EMALFORMED);
    //  Just under the limit, correctly signed, with a big claim: accepted
    qn_buf_t claims = QN_BUF_INIT;
    qn_buf_puts (&claims, "{\"iss\":\"queen-test\",\"aud\":\"queen\",\"pad\":\"");
    for (int i = 0; i < 11000; i++)
        qn_buf_putc (&claims, 'p');
    qn_buf_puts (&claims, "\"}");
    t = s_make ("{\"alg\":\"HS256\"}", claims.data, SIGN_HS256, SECRET, NULL);
    assert_true (strlen (t) <= QN_JWT_MAX_LEN);
    assert_int_equal (s_check (t, keys, NULL), QN_JWT_OK);
    //  Just over it: refused
    for (int i = 0; i < 2000; i++)
        qn_buf_putc (&claims, ' ');
    t = s_make ("{\"alg\":\"HS256\"}", claims.data, SIGN_HS256, SECRET, NULL);
    assert_true (strlen (t) > QN_JWT_MAX_LEN);
    assert_int_equal (s_check (t, keys, NULL), QN_JWT_EMALFORMED);
    qn_buf_free (&claims);
    qn_jwt_keys_destroy (&keys);
}

// ------------------------------------------------------------------ key loading
static void
test_jwks_parse (void **state)
{
    (void) state;
    EVP_PKEY *small = EVP_RSA_gen (1024);
    assert_non_null (small);
    qn_buf_t d = QN_BUF_INIT;
    qn_buf_puts (&d, "{\"keys\":[");
    s_jwk_rsa (&d, K.rsa, "rsa-ok", NULL);
    qn_buf_putc (&d, ',');
    s_jwk_ed (&d, K.ed, "ed-ok");
    qn_buf_putc (&d, ',');
    s_jwk_rsa (&d, K.rsa, "rs384", "RS384");                    //  Other algorithm
    qn_buf_putc (&d, ',');
    s_jwk_rsa (&d, small, "small", "RS256");                    //  Too small
    qn_buf_puts (&d, ",{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AA\",\"y\":\"AA\"}"
                     ",{\"kty\":\"OKP\",\"crv\":\"X25519\",\"x\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}"
                     ",{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AAAA\"}"
                     ",{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"use\":\"enc\",\"x\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}"
                     ",{\"kty\":\"RSA\",\"n\":\"!!!\",\"e\":\"AQAB\"}"
                     ",{\"kty\":\"RSA\",\"e\":\"AQAB\"}"
                     ",{\"kty\":7},{\"kid\":\"x\"},42,null,\"key\"]}");
    qn_jwt_keys_t *set = qn_jwt_keys_new ();
    char err [128];
    assert_int_equal (qn_jwt_keys_add_jwks (set, d.data, d.len, err, sizeof err), 2);
    qn_buf_free (&d);
    //  The RSA key from n/e verifies
    char *claims = s_claims ("");
    assert_int_equal (s_check (s_make ("{\"alg\":\"RS256\",\"kid\":\"rsa-ok\"}", claims, SIGN_PKEY, NULL, K.rsa),
                               set, NULL), QN_JWT_OK);
    free (claims);
    //  Not a JWKS at all
    static const char *bad [] = { "", "nope", "[]", "{}", "{\"keys\":{}}", "{\"keys\":\"x\"}", "{\"keys\":[" };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        assert_int_equal (qn_jwt_keys_add_jwks (set, bad [i], strlen (bad [i]), err, sizeof err), -1);
    //  Empty and all-unusable sets parse to zero keys
    assert_int_equal (qn_jwt_keys_add_jwks (set, "{\"keys\":[]}", 11, err, sizeof err), 0);
    //  Too large
    size_t big = QN_JWT_MAX_JWKS + 1;
    char *huge = qn_malloc (big);
    memset (huge, ' ', big);
    assert_int_equal (qn_jwt_keys_add_jwks (set, huge, big, err, sizeof err), -1);
    free (huge);
    assert_int_equal (qn_jwt_keys_count (set), 2);
    qn_jwt_keys_destroy (&set);
    EVP_PKEY_free (small);
}

static void
test_pem_loading (void **state)
{
    (void) state;
    qn_jwt_keys_t *set = qn_jwt_keys_new ();
    char err [128];
    assert_int_equal (qn_jwt_keys_add_pem (set, K.rsa_pem, strlen (K.rsa_pem), NULL, err, sizeof err), 0);
    assert_int_equal (qn_jwt_keys_add_pem (set, K.ed_pem, strlen (K.ed_pem), "kid", err, sizeof err), 0);
    //  One-line form with literal \n
    qn_buf_t oneline = QN_BUF_INIT;
    for (const char *c = K.ed_pem; *c; c++)
        if (*c == '\n')
            qn_buf_puts (&oneline, "\\n");
        else
            qn_buf_putc (&oneline, *c);
    assert_int_equal (qn_jwt_keys_add_pem (set, oneline.data, oneline.len, NULL, err, sizeof err), 0);
    qn_buf_free (&oneline);
    assert_int_equal (qn_jwt_keys_count (set), 3);
    //  Garbage, a truncated key, a small RSA key, an EC key
    static const char *bad [] = { "", "hello", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n" };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        assert_int_equal (qn_jwt_keys_add_pem (set, bad [i], strlen (bad [i]), NULL, err, sizeof err), -1);
    char *cut = qn_strndup (K.rsa_pem, strlen (K.rsa_pem) / 2);
    assert_int_equal (qn_jwt_keys_add_pem (set, cut, strlen (cut), NULL, err, sizeof err), -1);
    free (cut);
    EVP_PKEY *small = EVP_RSA_gen (1024);
    char *pem = s_pem_of (small);
    assert_int_equal (qn_jwt_keys_add_pem (set, pem, strlen (pem), NULL, err, sizeof err), -1);
    assert_string_equal (err, "RSA key size must be 2048 to 16384 bits");
    free (pem);
    EVP_PKEY_free (small);
    EVP_PKEY *ec = EVP_PKEY_Q_keygen (NULL, NULL, "EC", "P-256");
    pem = s_pem_of (ec);
    assert_int_equal (qn_jwt_keys_add_pem (set, pem, strlen (pem), NULL, err, sizeof err), -1);
    assert_string_equal (err, "unsupported key type (RSA or Ed25519 expected)");
    free (pem);
    EVP_PKEY_free (ec);
    //  Secrets: empty refused
    assert_int_equal (qn_jwt_keys_add_secret (set, "", 0, NULL), -1);
    assert_int_equal (qn_jwt_keys_count (set), 3);
    qn_jwt_keys_destroy (&set);
    qn_jwt_keys_destroy (&set);             //  Takes NULL
}

static void
test_alg_names (void **state)
{
    (void) state;
    qn_jwt_alg_t a;
    assert_int_equal (qn_jwt_alg_parse ("auto", &a), 0);
    assert_int_equal (a, QN_JWT_AUTO);
    assert_int_equal (qn_jwt_alg_parse ("hs256", &a), 0);
    assert_int_equal (a, QN_JWT_HS256);
    assert_int_equal (qn_jwt_alg_parse ("RS256", &a), 0);
    assert_int_equal (a, QN_JWT_RS256);
    assert_int_equal (qn_jwt_alg_parse ("EdDSA", &a), 0);
    assert_int_equal (a, QN_JWT_EDDSA);
    assert_int_equal (qn_jwt_alg_parse ("none", &a), -1);
    assert_int_equal (qn_jwt_alg_parse ("", &a), -1);
    assert_string_equal (qn_jwt_alg_name (QN_JWT_EDDSA), "EdDSA");
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_b64url),
        cmocka_unit_test (test_hs256_valid),
        cmocka_unit_test (test_rs256_valid_pem),
        cmocka_unit_test (test_eddsa_valid),
        cmocka_unit_test (test_roles),
        cmocka_unit_test (test_subject),
        cmocka_unit_test (test_time_claims),
        cmocka_unit_test (test_wrong_signature),
        cmocka_unit_test (test_issuer_audience),
        cmocka_unit_test (test_alg_none),
        cmocka_unit_test (test_alg_confusion),
        cmocka_unit_test (test_kid_selection),
        cmocka_unit_test (test_malformed),
        cmocka_unit_test (test_huge),
        cmocka_unit_test (test_jwks_parse),
        cmocka_unit_test (test_pem_loading),
        cmocka_unit_test (test_alg_names),
    };
    return cmocka_run_group_tests (tests, s_setup, s_teardown);
}
