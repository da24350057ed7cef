/*  test/fuzz/fuzz_jwt.c - JSON Web Tokens (wire/jwt.c): base64url, token
    verification, JWKS documents, and the claims of correctly signed tokens.
    The first input byte picks the target:
      0  the rest is a compact token, verified against an HS256 secret and
         an Ed25519 key; it must never verify (the fuzzer cannot sign);
      1  the rest is a JWKS document;
      2  the rest is base64url text: what decodes must re-encode to itself
         (the decoder accepts only canonical text);
      3  the rest is "<header JSON>\n<claims JSON>", signed here with the
         HS256 secret, so header and claims parsing run past the signature
         check; a verified token's level must be one of the four levels.
*/
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/jwt.h"

static const char s_secret [] = "fuzzing-secret";
//  An Ed25519 public key (RFC 8037 A.2's test key).
static const char s_pem [] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n"
    "-----END PUBLIC KEY-----\n";

static qn_jwt_keys_t *s_keys;

static void
s_setup (void)
{
    if (s_keys)
        return;
    s_keys = qn_jwt_keys_new ();
    char err [160];
    if (qn_jwt_keys_add_secret (s_keys, s_secret, sizeof s_secret - 1, NULL)
    ||  qn_jwt_keys_add_pem (s_keys, s_pem, sizeof s_pem - 1, NULL, err, sizeof err))
        abort ();
}

static int
s_verify (const char *token, size_t len, qn_jwt_result_t *result)
{
    const qn_jwt_keys_t *sets [1] = { s_keys };
    qn_jwt_policy_t policy = {
        .algorithm = QN_JWT_AUTO, .issuer = "iss", .audience = "aud", .clock_skew_s = 30,
        .now_s = 1700000000, .role_claim = "role", .roles_claim = "roles",
        .role_admin = "admin", .role_read_write = "read-write", .role_read_only = "read-only"
    };
    memset (result, 0, sizeof *result);
    int rc = qn_jwt_verify (token, len, sets, 1, &policy, result);
    if (rc == QN_JWT_OK && (result->level < QN_JWT_LEVEL_NONE || result->level > QN_JWT_LEVEL_ADMIN))
        abort ();
    if (rc != QN_JWT_OK && (result->subject || !memchr (result->err, 0, sizeof result->err)))
        abort ();
    return rc;
}

static void
s_signed (const char *data, size_t size)
{
    const char *nl = memchr (data, '\n', size);
    if (!nl)
        return;
    qn_buf_t token = QN_BUF_INIT;
    qn_b64url_encode (&token, data, (size_t) (nl - data));
    qn_buf_putc (&token, '.');
    qn_b64url_encode (&token, nl + 1, size - (size_t) (nl - data) - 1);
    unsigned char mac [EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    if (!HMAC (EVP_sha256 (), s_secret, (int) sizeof s_secret - 1,
               (const unsigned char *) token.data, token.len, mac, &mac_len))
        abort ();
    qn_buf_putc (&token, '.');
    qn_b64url_encode (&token, mac, mac_len);
    qn_jwt_result_t result;
    s_verify (token.data, token.len, &result);
    qn_jwt_result_free (&result);
    qn_buf_free (&token);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    s_setup ();
    if (size < 1)
        return 0;
    const char *rest = (const char *) data + 1;
    size_t len = size - 1;
    switch (data [0] % 4) {
        case 0: {
            qn_jwt_result_t result;
            if (s_verify (rest, len, &result) == QN_JWT_OK)
                abort ();           //  Signed without the key
            qn_jwt_result_free (&result);
            break;
        }
        case 1: {
            qn_jwt_keys_t *keys = qn_jwt_keys_new ();
            char err [160];
            int n = qn_jwt_keys_add_jwks (keys, rest, len, err, sizeof err);
            if (n >= 0 && (size_t) n != qn_jwt_keys_count (keys))
                abort ();
            qn_jwt_keys_destroy (&keys);
            break;
        }
        case 2: {
            qn_buf_t out = QN_BUF_INIT, again = QN_BUF_INIT;
            int64_t n = qn_b64url_decode (&out, rest, len);
            if (n >= 0) {
                if ((size_t) n != out.len)
                    abort ();
                qn_b64url_encode (&again, out.data, out.len);
                if (again.len != len || (len && memcmp (again.data, rest, len)))
                    abort ();
            }
            else
            if (out.len)
                abort ();
            qn_buf_free (&out);
            qn_buf_free (&again);
            break;
        }
        default:
            s_signed (rest, len);
    }
    return 0;
}
