/*  wire/jwt.h - JSON Web Tokens: base64url, keys, signatures and claims
    Verifies compact JWS tokens (RFC 7515/7519) signed with HS256, RS256 or
    EdDSA (Ed25519), using OpenSSL EVP. Keys come from a shared secret, a
    PEM public key, or a JWKS document (RFC 7517: RSA n/e, OKP Ed25519 x).

    A key's type fixes the one algorithm it verifies: a secret only HS256,
    an RSA key only RS256, an Ed25519 key only EdDSA. So an RS256 public
    key can never be (mis)used as an HS256 secret ("algorithm confusion"),
    and `alg: none` has no key at all. HMAC tags are compared in constant
    time (CRYPTO_memcmp).

    Pure: no I/O, no globals, no logging. Owns the key sets it creates
    (qn_jwt_keys_destroy) and the subject of a result (qn_jwt_result_free).
    Fails by returning a negative QN_JWT_E* with a message for the client in
    result->err (never containing token bytes).
*/
#ifndef QN_WIRE_JWT_H
#define QN_WIRE_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

//  Longest token accepted (bytes); request heads are smaller anyway.
#define QN_JWT_MAX_LEN      16384
//  Longest `sub` kept as the producer identity.
#define QN_JWT_MAX_SUBJECT  1024
//  Largest JWKS document parsed.
#define QN_JWT_MAX_JWKS     (1024 * 1024)

typedef enum {
    QN_JWT_AUTO = 0,            //  Setting only: whatever the token says, if a key fits
    QN_JWT_HS256 = 1,
    QN_JWT_RS256 = 2,
    QN_JWT_EDDSA = 3
} qn_jwt_alg_t;

//  Verification outcomes. The message in result->err is what the client
//  gets in {"error": ...} with 401.
#define QN_JWT_OK            0
#define QN_JWT_EMALFORMED   -1  //  "Token verification failed: malformed token (...)"
#define QN_JWT_EALG         -2  //  "Token verification failed: algorithm ... not allowed"
#define QN_JWT_ENOKEY       -3  //  "Token verification failed: no key for this token"
#define QN_JWT_ESIGNATURE   -4  //  "Invalid token signature"
#define QN_JWT_EEXPIRED     -5  //  "Token has expired"
#define QN_JWT_ENOTYET      -6  //  "Token is not yet valid"
#define QN_JWT_EISSUER      -7  //  "Invalid token issuer"
#define QN_JWT_EAUDIENCE    -8  //  "Invalid token audience"
#define QN_JWT_ECLAIMS      -9  //  "Token verification failed: invalid claim ..."

//  Access levels a token's roles grant (same numbers as qn_auth_level_t).
#define QN_JWT_LEVEL_NONE        0
#define QN_JWT_LEVEL_READ_ONLY   1
#define QN_JWT_LEVEL_READ_WRITE  2
#define QN_JWT_LEVEL_ADMIN       3

typedef struct qn_jwt_keys qn_jwt_keys_t;

typedef struct {
    qn_jwt_alg_t algorithm;     //  QN_JWT_AUTO accepts any of the three
    const char *issuer;         //  NULL or "": `iss` not checked
    const char *audience;       //  NULL or "": `aud` not checked
    int64_t clock_skew_s;       //  Leeway on exp, nbf and iat
    int64_t now_s;              //  Unix seconds
    const char *role_claim;     //  String claim naming one role ("role")
    const char *roles_claim;    //  Array claim naming several ("roles")
    const char *role_admin;     //  Role values (exact match)
    const char *role_read_write;
    const char *role_read_only;
    const char *tenant_claim;   //  NULL or "": no tenant taken from tokens
} qn_jwt_policy_t;

typedef struct {
    qn_jwt_alg_t alg;           //  The token's algorithm
    int level;                  //  QN_JWT_LEVEL_*: the highest its roles grant
    char *subject;              //  Owned: `sub` when a non-empty string, else NULL
    char tenant [65];           //  The tenant claim (a valid tenant name), or ""
    char err [192];             //  Client-facing reason when verification failed
} qn_jwt_result_t;

// ------------------------------------------------------------------ base64url
//  Appends the unpadded base64url form of data to out.
void qn_b64url_encode (qn_buf_t *out, const void *data, size_t len);
//  Appends the decoded bytes of unpadded, canonical base64url text to out.
//  Returns the decoded length, or -1 (out unchanged) for a character outside
//  the alphabet, '=' padding, a length of 4n+1, or non-zero unused bits.
int64_t qn_b64url_decode (qn_buf_t *out, const char *text, size_t len);

// ------------------------------------------------------------------ keys
qn_jwt_keys_t *qn_jwt_keys_new (void);
void qn_jwt_keys_destroy (qn_jwt_keys_t **self_p);
size_t qn_jwt_keys_count (const qn_jwt_keys_t *self);
//  An HS256 secret (raw bytes, at least 1). kid may be NULL.
int qn_jwt_keys_add_secret (qn_jwt_keys_t *self, const void *secret, size_t len, const char *kid);
//  A PEM public key (SubjectPublicKeyInfo "PUBLIC KEY", PKCS#1 "RSA PUBLIC
//  KEY" or an X.509 certificate): RSA of at least 2048 bits or Ed25519.
//  Literal "\n" sequences count as newlines (keys pasted into one-line
//  environment variables). Returns 0, or -1 with a reason in err.
int qn_jwt_keys_add_pem (qn_jwt_keys_t *self, const char *pem, size_t len, const char *kid,
                         char *err, size_t err_len);
//  Adds the usable keys of a JWKS document {"keys": [...]}: kty RSA (n, e;
//  alg RS256 or none) and kty OKP crv Ed25519 (x; alg EdDSA or none); keys
//  with "use" other than "sig", other types and broken keys are skipped.
//  Returns the number added, or -1 with a reason in err when the document
//  is not a JWKS at all.
int qn_jwt_keys_add_jwks (qn_jwt_keys_t *self, const char *json, size_t len,
                          char *err, size_t err_len);

// ------------------------------------------------------------------ tokens
//  Verifies `token` against the keys of every set in `sets` (NULL entries
//  skipped) and `policy`: structure, algorithm, signature, then exp / nbf /
//  iat with clock skew, iss, aud. On success fills result (alg, level,
//  subject) and returns QN_JWT_OK; otherwise returns a QN_JWT_E* with the
//  reason in result->err and no subject. Always call qn_jwt_result_free.
int qn_jwt_verify (const char *token, size_t len, const qn_jwt_keys_t *const *sets,
                   size_t set_count, const qn_jwt_policy_t *policy, qn_jwt_result_t *result);
void qn_jwt_result_free (qn_jwt_result_t *result);

//  "HS256", "RS256", "EdDSA" or "auto".
const char *qn_jwt_alg_name (qn_jwt_alg_t alg);
//  Parses a JWT_ALGORITHM value (case-insensitive). Returns 0 or -1.
int qn_jwt_alg_parse (const char *name, qn_jwt_alg_t *alg);

#endif
