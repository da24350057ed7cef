/*  test/fuzz/fuzz_tenant_assert.c - the proxy's tenant assertion
    (wire/tenant_assert.c). The first input byte picks the target:
      0  the rest is a header value, verified with a fixed secret: it must
         never verify (the fuzzer cannot sign) and a refusal carries no
         tenant or subject;
      1  the rest is a payload, signed here with the secret, so the content
         parser runs past the tag check: a verified payload must re-encode
         to exactly the same header value.
*/
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/jwt.h"
#include "wire/tenant_assert.h"

static const char s_secret [] = "fuzzing-secret";
#define NOW 1700000000

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *) data + 1;
    size_t len = size - 1;
    qn_tassert_t a;
    if (data [0] == 0) {
        int rc = qn_tassert_verify (text, len, s_secret, sizeof s_secret - 1, NOW, 60, &a);
        if (rc == QN_TASSERT_OK || a.subject || a.tenant [0])
            abort ();
        qn_tassert_free (&a);
        return 0;
    }
    unsigned char key [32], tag [32];
    unsigned int n;
    HMAC (EVP_sha256 (), s_secret, sizeof s_secret - 1,
          (const unsigned char *) "queen-tenant-assertion-v1", 25, key, &n);
    qn_buf_t t = QN_BUF_INIT;
    qn_buf_puts (&t, "v1.");
    qn_b64url_encode (&t, text, len);
    HMAC (EVP_sha256 (), key, 32, (const unsigned char *) t.data, t.len, tag, &n);
    qn_buf_putc (&t, '.');
    qn_b64url_encode (&t, tag, 32);
    int rc = qn_tassert_verify (t.data, t.len, s_secret, sizeof s_secret - 1, NOW, 60, &a);
    if (rc == QN_TASSERT_OK) {
        qn_buf_t again = QN_BUF_INIT;
        if (qn_tassert_encode (&again, s_secret, sizeof s_secret - 1, a.tenant, a.role,
                               a.subject, a.ts_s)
        ||  again.len != t.len || memcmp (again.data, t.data, t.len))
            abort ();
        qn_buf_free (&again);
    }
    qn_tassert_free (&a);
    qn_buf_free (&t);
    return 0;
}
