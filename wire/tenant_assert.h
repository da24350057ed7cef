/*  wire/tenant_assert.h - the proxy's signed tenant assertion
    The proxy (queen-proxy) tells a broker who a request is for with one
    header, X-Queen-Assertion, whose value is

        v1.<b64url(payload)>.<b64url(tag)>

    payload = tenant LF role LF unix-seconds LF subject (the subject is the
    last field and may be empty); tag = HMAC-SHA256 over the ASCII bytes
    "v1.<b64url(payload)>" under a key derived from the shared secret
    TENANT_ASSERTION_SECRET: HMAC-SHA256 (secret, "queen-tenant-assertion-v1"),
    so the same secret reused as a JWT_SECRET never makes a JWT an
    assertion or the other way round.

    Tenant names: 1 to 64 bytes of [A-Za-z0-9._-]. Roles: admin, read-write,
    read-only, producer, consumer. Subject: at most 1024 bytes, no NUL, CR
    or LF. Timestamps: decimal, no sign, no leading zero; fresh when within
    max_age_s of now (either way).

    Pure: no I/O, no globals, no logging. The tag is compared in constant
    time (CRYPTO_memcmp) after every structural check, and the payload is
    only parsed after the tag verified, so a forged assertion is refused as
    a bad signature whatever its payload says.
*/
#ifndef QN_WIRE_TENANT_ASSERT_H
#define QN_WIRE_TENANT_ASSERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define QN_TENANT_MAX           64      //  Longest tenant name
#define QN_TASSERT_MAX_SUBJECT  1024
#define QN_TASSERT_MAX_LEN      2048    //  Longest header value accepted
#define QN_TASSERT_HEADER       "x-queen-assertion"
//  Headers a client may never set through the proxy (the proxy strips them).
#define QN_TENANT_HEADER        "x-queen-tenant"

//  Outcomes (the message in result->err is the client's 401 reason).
#define QN_TASSERT_OK          0
#define QN_TASSERT_EMALFORMED -1    //  "Invalid tenant assertion (malformed)"
#define QN_TASSERT_ESIGNATURE -2    //  "Invalid tenant assertion signature"
#define QN_TASSERT_ECONTENT   -3    //  "Invalid tenant assertion (content)"
#define QN_TASSERT_ESTALE     -4    //  "Tenant assertion expired"

typedef enum {
    QN_ROLE_NONE = 0,
    QN_ROLE_ADMIN,
    QN_ROLE_READ_WRITE,
    QN_ROLE_READ_ONLY,
    QN_ROLE_PRODUCER,
    QN_ROLE_CONSUMER
} qn_role_t;

typedef struct {
    char tenant [QN_TENANT_MAX + 1];
    qn_role_t role;
    int level;                  //  Broker access level the role reaches (QN_JWT_LEVEL_*)
    int64_t ts_s;
    char *subject;              //  Owned; NULL when empty
    char err [64];
} qn_tassert_t;

//  True when name[0..len) is a valid tenant name.
bool qn_tenant_name_ok (const char *name, size_t len);
//  "admin", "read-write", ... or NULL for QN_ROLE_NONE.
const char *qn_role_name (qn_role_t role);
//  The role named by name[0..len), or QN_ROLE_NONE.
qn_role_t qn_role_parse (const char *name, size_t len);
//  The broker access level (1 read-only, 2 read-write, 3 admin) a role reaches:
//  producer and consumer reach read-write (the proxy narrows them further).
int qn_role_level (qn_role_t role);

//  Appends the header value to out. Returns 0, or -1 (out unchanged) when
//  the tenant, role or subject is invalid or the secret empty.
int qn_tassert_encode (qn_buf_t *out, const void *secret, size_t secret_len,
                       const char *tenant, qn_role_t role, const char *subject, int64_t ts_s);
//  Verifies a header value. Returns QN_TASSERT_OK with out filled, or a
//  negative QN_TASSERT_E* with out->err set and no subject. Always call
//  qn_tassert_free.
int qn_tassert_verify (const char *text, size_t len, const void *secret, size_t secret_len,
                       int64_t now_s, int64_t max_age_s, qn_tassert_t *out);
void qn_tassert_free (qn_tassert_t *a);

#endif
