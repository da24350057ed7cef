/*  wire/tenant_assert.c - the proxy's signed tenant assertion (see the header)
*/
#include "wire/tenant_assert.h"
#include "wire/jwt.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_LABEL "queen-tenant-assertion-v1"
#define S_TAG_LEN 32

static const struct {
    qn_role_t role;
    const char *name;
} s_roles [] = {
    { QN_ROLE_ADMIN, "admin" },
    { QN_ROLE_READ_WRITE, "read-write" },
    { QN_ROLE_READ_ONLY, "read-only" },
    { QN_ROLE_PRODUCER, "producer" },
    { QN_ROLE_CONSUMER, "consumer" }
};

bool
qn_tenant_name_ok (const char *name, size_t len)
{
    if (!name || !len || len > QN_TENANT_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name [i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
           || c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

const char *
qn_role_name (qn_role_t role)
{
    for (size_t i = 0; i < sizeof s_roles / sizeof s_roles [0]; i++)
        if (s_roles [i].role == role)
            return s_roles [i].name;
    return NULL;
}

qn_role_t
qn_role_parse (const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof s_roles / sizeof s_roles [0]; i++)
        if (strlen (s_roles [i].name) == len && !memcmp (s_roles [i].name, name, len))
            return s_roles [i].role;
    return QN_ROLE_NONE;
}

int
qn_role_level (qn_role_t role)
{
    switch (role) {
        case QN_ROLE_ADMIN:      return QN_JWT_LEVEL_ADMIN;
        case QN_ROLE_READ_WRITE:
        case QN_ROLE_PRODUCER:
        case QN_ROLE_CONSUMER:   return QN_JWT_LEVEL_READ_WRITE;
        case QN_ROLE_READ_ONLY:  return QN_JWT_LEVEL_READ_ONLY;
        default:                 return QN_JWT_LEVEL_NONE;
    }
}

static bool
s_subject_ok (const char *s, size_t len)
{
    if (len > QN_TASSERT_MAX_SUBJECT)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s [i] == 0 || s [i] == '\r' || s [i] == '\n')
            return false;
    return true;
}

//  tag = HMAC (HMAC (secret, label), signed bytes)
static int
s_tag (const void *secret, size_t secret_len, const char *data, size_t len,
       unsigned char tag [S_TAG_LEN])
{
    unsigned char key [S_TAG_LEN];
    unsigned int n = 0;
    if (!HMAC (EVP_sha256 (), secret, (int) secret_len, (const unsigned char *) S_LABEL,
               sizeof S_LABEL - 1, key, &n) || n != S_TAG_LEN)
        return -1;
    int rc = HMAC (EVP_sha256 (), key, S_TAG_LEN, (const unsigned char *) data, len, tag, &n)
             && n == S_TAG_LEN ? 0 : -1;
    OPENSSL_cleanse (key, sizeof key);
    return rc;
}

int
qn_tassert_encode (qn_buf_t *out, const void *secret, size_t secret_len,
                   const char *tenant, qn_role_t role, const char *subject, int64_t ts_s)
{
    const char *rname = qn_role_name (role);
    size_t slen = subject ? strlen (subject) : 0;
    if (!secret || !secret_len || !tenant || !qn_tenant_name_ok (tenant, strlen (tenant))
    ||  !rname || ts_s < 0 || !s_subject_ok (subject, slen))
        return -1;
    qn_buf_t payload = QN_BUF_INIT, text = QN_BUF_INIT;
    qn_buf_printf (&payload, "%s\n%s\n%lld\n", tenant, rname, (long long) ts_s);
    if (slen)
        qn_buf_append (&payload, subject, slen);
    qn_buf_puts (&text, "v1.");
    qn_b64url_encode (&text, payload.data, payload.len);
    unsigned char tag [S_TAG_LEN];
    int rc = s_tag (secret, secret_len, text.data, text.len, tag);
    if (rc == 0) {
        qn_buf_putc (&text, '.');
        qn_b64url_encode (&text, tag, sizeof tag);
        qn_buf_append (out, text.data, text.len);
    }
    qn_buf_free (&payload);
    qn_buf_free (&text);
    return rc;
}

static int
s_fail (qn_tassert_t *a, int rc, const char *msg)
{
    free (a->subject);
    a->subject = NULL;
    a->tenant [0] = 0;
    a->role = QN_ROLE_NONE;
    a->level = 0;
    snprintf (a->err, sizeof a->err, "%s", msg);
    return rc;
}

//  Decimal without sign or leading zero, at most 18 digits.
static int
s_parse_ts (const char *s, size_t len, int64_t *v)
{
    if (!len || len > 18 || (len > 1 && s [0] == '0'))
        return -1;
    int64_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s [i] < '0' || s [i] > '9')
            return -1;
        n = n * 10 + (s [i] - '0');
    }
    *v = n;
    return 0;
}

int
qn_tassert_verify (const char *text, size_t len, const void *secret, size_t secret_len,
                   int64_t now_s, int64_t max_age_s, qn_tassert_t *a)
{
    memset (a, 0, sizeof *a);
    if (!secret || !secret_len)
        return s_fail (a, QN_TASSERT_ESIGNATURE, "Invalid tenant assertion signature");
    if (!text || len < 4 || len > QN_TASSERT_MAX_LEN || memcmp (text, "v1.", 3))
        return s_fail (a, QN_TASSERT_EMALFORMED, "Invalid tenant assertion (malformed)");
    const char *dot = memchr (text + 3, '.', len - 3);
    if (!dot || dot == text + 3 || memchr (dot + 1, '.', len - (size_t) (dot + 1 - text)))
        return s_fail (a, QN_TASSERT_EMALFORMED, "Invalid tenant assertion (malformed)");
    qn_buf_t tag = QN_BUF_INIT, payload = QN_BUF_INIT;
    int rc;
    if (qn_b64url_decode (&tag, dot + 1, len - (size_t) (dot + 1 - text)) != S_TAG_LEN
    ||  qn_b64url_decode (&payload, text + 3, (size_t) (dot - text - 3)) < 0) {
        rc = s_fail (a, QN_TASSERT_EMALFORMED, "Invalid tenant assertion (malformed)");
        goto done;
    }
    unsigned char want [S_TAG_LEN];
    if (s_tag (secret, secret_len, text, (size_t) (dot - text), want)
    ||  CRYPTO_memcmp (want, tag.data, S_TAG_LEN) != 0) {
        rc = s_fail (a, QN_TASSERT_ESIGNATURE, "Invalid tenant assertion signature");
        goto done;
    }
    //  Authentic: tenant LF role LF ts LF subject
    const char *p = payload.data, *end = payload.data + payload.len;
    const char *f [4];
    size_t fl [4];
    for (int i = 0; i < 3; i++) {
        const char *lf = p < end ? memchr (p, '\n', (size_t) (end - p)) : NULL;
        if (!lf) {
            rc = s_fail (a, QN_TASSERT_ECONTENT, "Invalid tenant assertion (content)");
            goto done;
        }
        f [i] = p;
        fl [i] = (size_t) (lf - p);
        p = lf + 1;
    }
    f [3] = p;
    fl [3] = (size_t) (end - p);
    int64_t ts = 0;
    qn_role_t role = qn_role_parse (f [1], fl [1]);
    if (!qn_tenant_name_ok (f [0], fl [0]) || role == QN_ROLE_NONE
    ||  s_parse_ts (f [2], fl [2], &ts) || !s_subject_ok (f [3], fl [3])) {
        rc = s_fail (a, QN_TASSERT_ECONTENT, "Invalid tenant assertion (content)");
        goto done;
    }
    if (ts > now_s + max_age_s || ts < now_s - max_age_s) {
        rc = s_fail (a, QN_TASSERT_ESTALE, "Tenant assertion expired");
        goto done;
    }
    memcpy (a->tenant, f [0], fl [0]);
    a->tenant [fl [0]] = 0;
    a->role = role;
    a->level = qn_role_level (role);
    a->ts_s = ts;
    a->subject = fl [3] ? qn_strndup (f [3], fl [3]) : NULL;
    rc = QN_TASSERT_OK;
done:
    qn_buf_free (&tag);
    qn_buf_free (&payload);
    return rc;
}

void
qn_tassert_free (qn_tassert_t *a)
{
    free (a->subject);
    a->subject = NULL;
}
