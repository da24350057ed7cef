/*  test/unit/test_wire_tenant_assert.c - the proxy's signed tenant
    assertion (wire/tenant_assert.c): a known answer computed outside C
    (Python hmac), round trips for every role, every bit of every byte
    flipped is refused, wrong secret, stale and future timestamps, every
    strict prefix, malformed structure, authentic payloads with bad content
    (signed here with OpenSSL), tenant name and role rules. Verified from
    exact-size heap copies so ASan catches over-reads.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>

#include "wire/jwt.h"
#include "wire/tenant_assert.h"

static const char s_secret [] = "s3cret";
#define NOW 1700000000

static int
s_verify (const char *text, size_t len, const char *secret, int64_t now, qn_tassert_t *a)
{
    char *copy = malloc (len ? len : 1);
    memcpy (copy, text, len);
    int rc = qn_tassert_verify (copy, len, secret, strlen (secret), now, 60, a);
    free (copy);
    if (rc != QN_TASSERT_OK) {
        assert_null (a->subject);
        assert_string_equal (a->tenant, "");
        assert_true (a->err [0] != 0);
    }
    return rc;
}

//  Signs raw payload bytes the way the proxy does, bypassing the encoder's
//  checks, so authentic-but-bad content reaches the parser.
static char *
s_sign_raw (const char *payload, size_t len)
{
    unsigned char key [32], tag [32];
    unsigned int n;
    HMAC (EVP_sha256 (), s_secret, sizeof s_secret - 1,
          (const unsigned char *) "queen-tenant-assertion-v1", 25, key, &n);
    qn_buf_t t = QN_BUF_INIT;
    qn_buf_puts (&t, "v1.");
    qn_b64url_encode (&t, payload, len);
    HMAC (EVP_sha256 (), key, 32, (const unsigned char *) t.data, t.len, tag, &n);
    qn_buf_putc (&t, '.');
    qn_b64url_encode (&t, tag, 32);
    qn_buf_putc (&t, 0);
    size_t l;
    return qn_buf_detach (&t, &l);
}

static void
test_known_answer (void **state)
{
    (void) state;
    const char *want = "v1.YWNtZQpyZWFkLXdyaXRlCjE3MDAwMDAwMDAKYWxpY2U.m-x62TVSV1RvXvucm-bTnhmv0xKte7NMsrrUEeb---c";
    qn_buf_t b = QN_BUF_INIT;
    assert_int_equal (qn_tassert_encode (&b, s_secret, 6, "acme", QN_ROLE_READ_WRITE, "alice", NOW), 0);
    assert_int_equal (b.len, strlen (want));
    assert_memory_equal (b.data, want, b.len);
    qn_tassert_t a;
    assert_int_equal (s_verify (want, strlen (want), s_secret, NOW, &a), QN_TASSERT_OK);
    assert_string_equal (a.tenant, "acme");
    assert_int_equal (a.role, QN_ROLE_READ_WRITE);
    assert_int_equal (a.level, QN_JWT_LEVEL_READ_WRITE);
    assert_int_equal (a.ts_s, NOW);
    assert_string_equal (a.subject, "alice");
    qn_tassert_free (&a);
    qn_buf_free (&b);
}

static void
test_round_trip_roles (void **state)
{
    (void) state;
    const qn_role_t roles [] = { QN_ROLE_ADMIN, QN_ROLE_READ_WRITE, QN_ROLE_READ_ONLY,
                                 QN_ROLE_PRODUCER, QN_ROLE_CONSUMER };
    const int levels [] = { 3, 2, 1, 2, 2 };
    for (size_t i = 0; i < 5; i++) {
        for (int with_sub = 0; with_sub < 2; with_sub++) {
            qn_buf_t b = QN_BUF_INIT;
            assert_int_equal (qn_tassert_encode (&b, s_secret, 6, "t-1.x_Y", roles [i],
                                                 with_sub ? "user@example.com" : NULL, NOW + 5), 0);
            qn_tassert_t a;
            assert_int_equal (s_verify (b.data, b.len, s_secret, NOW, &a), QN_TASSERT_OK);
            assert_string_equal (a.tenant, "t-1.x_Y");
            assert_int_equal (a.role, roles [i]);
            assert_int_equal (a.level, levels [i]);
            if (with_sub)
                assert_string_equal (a.subject, "user@example.com");
            else
                assert_null (a.subject);
            static const char *const names [] = { "admin", "read-write", "read-only", "producer", "consumer" };
            assert_string_equal (qn_role_name (roles [i]), names [i]);
            qn_tassert_free (&a);
            qn_buf_free (&b);
        }
    }
}

static void
test_every_flip_refused (void **state)
{
    (void) state;
    qn_buf_t b = QN_BUF_INIT;
    assert_int_equal (qn_tassert_encode (&b, s_secret, 6, "acme", QN_ROLE_ADMIN, "root", NOW), 0);
    size_t tried = 0;
    for (size_t i = 0; i < b.len; i++)
        for (int bit = 0; bit < 8; bit++) {
            char *t = malloc (b.len);
            memcpy (t, b.data, b.len);
            t [i] ^= (char) (1 << bit);
            qn_tassert_t a;
            assert_int_not_equal (s_verify (t, b.len, s_secret, NOW, &a), QN_TASSERT_OK);
            qn_tassert_free (&a);
            free (t);
            tried++;
        }
    assert_int_equal (tried, b.len * 8);
    //  Every strict prefix, and one byte more.
    for (size_t cut = 0; cut < b.len; cut++) {
        qn_tassert_t a;
        assert_int_not_equal (s_verify (b.data, cut, s_secret, NOW, &a), QN_TASSERT_OK);
    }
    qn_buf_t more = QN_BUF_INIT;
    qn_buf_append (&more, b.data, b.len);
    qn_buf_putc (&more, 'A');
    qn_tassert_t a;
    assert_int_not_equal (s_verify (more.data, more.len, s_secret, NOW, &a), QN_TASSERT_OK);
    qn_buf_free (&more);
    qn_buf_free (&b);
}

static void
test_secret_and_time (void **state)
{
    (void) state;
    qn_buf_t b = QN_BUF_INIT;
    assert_int_equal (qn_tassert_encode (&b, s_secret, 6, "acme", QN_ROLE_ADMIN, NULL, NOW), 0);
    qn_tassert_t a;
    assert_int_equal (s_verify (b.data, b.len, "s3creT", NOW, &a), QN_TASSERT_ESIGNATURE);
    assert_string_equal (a.err, "Invalid tenant assertion signature");
    assert_int_equal (s_verify (b.data, b.len, "s3cret-longer", NOW, &a), QN_TASSERT_ESIGNATURE);
    assert_int_equal (qn_tassert_verify (b.data, b.len, "", 0, NOW, 60, &a), QN_TASSERT_ESIGNATURE);
    assert_int_equal (s_verify (b.data, b.len, s_secret, NOW + 60, &a), QN_TASSERT_OK);
    assert_int_equal (s_verify (b.data, b.len, s_secret, NOW - 60, &a), QN_TASSERT_OK);
    assert_int_equal (s_verify (b.data, b.len, s_secret, NOW + 61, &a), QN_TASSERT_ESTALE);
    assert_string_equal (a.err, "Tenant assertion expired");
    assert_int_equal (s_verify (b.data, b.len, s_secret, NOW - 61, &a), QN_TASSERT_ESTALE);
    qn_buf_free (&b);
    //  A JWT signed HS256 with the same secret is not an assertion.
    unsigned char tag [32];
    unsigned int n;
    const char *si = "v1.YWNtZQphZG1pbgoxNzAwMDAwMDAwCg";
    HMAC (EVP_sha256 (), s_secret, 6, (const unsigned char *) si, strlen (si), tag, &n);
    qn_buf_t t = QN_BUF_INIT;
    qn_buf_puts (&t, si);
    qn_buf_putc (&t, '.');
    qn_b64url_encode (&t, tag, 32);
    assert_int_equal (s_verify (t.data, t.len, s_secret, NOW, &a), QN_TASSERT_ESIGNATURE);
    qn_buf_free (&t);
}

static void
test_malformed (void **state)
{
    (void) state;
    const char *bad [] = {
        "", "v1", "v1.", "v1..", "v2.YWNtZQ.AAAA", "v1.YWNtZQ", "v1.YWNtZQ.",
        "v1..m-x62TVSV1RvXvucm-bTnhmv0xKte7NMsrrUEeb---c",
        "v1.YWNtZQ.m-x62TVSV1RvXvucm-bTnhmv0xKte7NMsrrUEeb---c.x",
        "v1.YWNtZQ=.m-x62TVSV1RvXvucm-bTnhmv0xKte7NMsrrUEeb---c",
        "v1.YWN*ZQ.m-x62TVSV1RvXvucm-bTnhmv0xKte7NMsrrUEeb---c",
        "v1.YWNtZQ.m-x62TVSV1RvXvucm-bTnhmv0xKte7NMsrrUEeb---",   //  31 bytes of tag
        "V1.YWNtZQ.m-x62TVSV1RvXvucm-bTnhmv0xKte7NMsrrUEeb---c",
        " v1.YWNtZQ.m-x62TVSV1RvXvucm-bTnhmv0xKte7NMsrrUEeb---c",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        qn_tassert_t a;
        int rc = s_verify (bad [i], strlen (bad [i]), s_secret, NOW, &a);
        assert_true (rc == QN_TASSERT_EMALFORMED || rc == QN_TASSERT_ESIGNATURE);
    }
    //  Too long, even when otherwise well formed.
    qn_buf_t big = QN_BUF_INIT;
    qn_buf_puts (&big, "v1.");
    for (int i = 0; i < QN_TASSERT_MAX_LEN; i++)
        qn_buf_putc (&big, 'A');
    qn_buf_puts (&big, ".m-x62TVSV1RvXvucm-bTnhmv0xKte7NMsrrUEeb---c");
    qn_tassert_t a;
    assert_int_equal (s_verify (big.data, big.len, s_secret, NOW, &a), QN_TASSERT_EMALFORMED);
    qn_buf_free (&big);
}

static void
test_authentic_bad_content (void **state)
{
    (void) state;
    struct { const char *p; size_t len; int rc; } cases [] = {
        { "acme\nadmin\n1700000000\n", 0, QN_TASSERT_OK },
        { "acme\nadmin\n1700000000", 0, QN_TASSERT_ECONTENT },          //  3 fields
        { "acme\nadmin", 0, QN_TASSERT_ECONTENT },
        { "", 0, QN_TASSERT_EMALFORMED },                               //  v1..tag
        { "\nadmin\n1700000000\n", 0, QN_TASSERT_ECONTENT },            //  empty tenant
        { "ac me\nadmin\n1700000000\n", 0, QN_TASSERT_ECONTENT },
        { "acme/x\nadmin\n1700000000\n", 0, QN_TASSERT_ECONTENT },
        { "acme\nAdmin\n1700000000\n", 0, QN_TASSERT_ECONTENT },
        { "acme\nroot\n1700000000\n", 0, QN_TASSERT_ECONTENT },
        { "acme\n\n1700000000\n", 0, QN_TASSERT_ECONTENT },
        { "acme\nadmin\n01700000000\n", 0, QN_TASSERT_ECONTENT },
        { "acme\nadmin\n-1\n", 0, QN_TASSERT_ECONTENT },
        { "acme\nadmin\n+1700000000\n", 0, QN_TASSERT_ECONTENT },
        { "acme\nadmin\n\n", 0, QN_TASSERT_ECONTENT },
        { "acme\nadmin\n9999999999999999999\n", 0, QN_TASSERT_ECONTENT },
        { "acme\nadmin\n1700000000\nbob\nx", 0, QN_TASSERT_ECONTENT },  //  LF in subject
        { "acme\nadmin\n1700000000\nbob\rx", 0, QN_TASSERT_ECONTENT },
        { "acme\nadmin\n1700000000\nb\0b", 26, QN_TASSERT_ECONTENT },   //  NUL in subject
        { "acme\nadmin\n1\n", 0, QN_TASSERT_ESTALE },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        size_t len = cases [i].len ? cases [i].len : strlen (cases [i].p);
        char *t = s_sign_raw (cases [i].p, len);
        qn_tassert_t a;
        int rc = s_verify (t, strlen (t), s_secret, NOW, &a);
        if (rc != cases [i].rc)
            fail_msg ("case %zu: rc %d, want %d", i, rc, cases [i].rc);
        qn_tassert_free (&a);
        free (t);
    }
    //  65-byte tenant, 1025-byte subject
    char p [1200];
    memset (p, 'a', 65);
    strcpy (p + 65, "\nadmin\n1700000000\n");
    char *t = s_sign_raw (p, strlen (p));
    qn_tassert_t a;
    assert_int_equal (s_verify (t, strlen (t), s_secret, NOW, &a), QN_TASSERT_ECONTENT);
    free (t);
    strcpy (p, "acme\nadmin\n1700000000\n");
    size_t at = strlen (p);
    memset (p + at, 's', 1025);
    t = s_sign_raw (p, at + 1025);
    assert_int_equal (s_verify (t, strlen (t), s_secret, NOW, &a), QN_TASSERT_ECONTENT);
    free (t);
    t = s_sign_raw (p, at + 1024);
    assert_int_equal (s_verify (t, strlen (t), s_secret, NOW, &a), QN_TASSERT_OK);
    assert_int_equal (strlen (a.subject), 1024);
    qn_tassert_free (&a);
    free (t);
}

static void
test_names_and_encoder_refusals (void **state)
{
    (void) state;
    assert_true (qn_tenant_name_ok ("a", 1));
    assert_true (qn_tenant_name_ok ("Team_1.prod-eu", 14));
    assert_false (qn_tenant_name_ok ("", 0));
    assert_false (qn_tenant_name_ok (NULL, 0));
    assert_false (qn_tenant_name_ok ("a b", 3));
    assert_false (qn_tenant_name_ok ("a\nb", 3));
    assert_false (qn_tenant_name_ok ("é", 2));
    char long_name [66];
    memset (long_name, 'x', 65);
    long_name [65] = 0;
    assert_true (qn_tenant_name_ok (long_name, 64));
    assert_false (qn_tenant_name_ok (long_name, 65));
    assert_int_equal (qn_role_parse ("consumer", 8), QN_ROLE_CONSUMER);
    assert_int_equal (qn_role_parse ("consume", 7), QN_ROLE_NONE);
    assert_int_equal (qn_role_parse ("ADMIN", 5), QN_ROLE_NONE);
    assert_int_equal (qn_role_level (QN_ROLE_NONE), 0);
    qn_buf_t b = QN_BUF_INIT;
    assert_int_equal (qn_tassert_encode (&b, s_secret, 6, "", QN_ROLE_ADMIN, NULL, NOW), -1);
    assert_int_equal (qn_tassert_encode (&b, s_secret, 6, long_name, QN_ROLE_ADMIN, NULL, NOW), -1);
    assert_int_equal (qn_tassert_encode (&b, s_secret, 6, "a", QN_ROLE_NONE, NULL, NOW), -1);
    assert_int_equal (qn_tassert_encode (&b, s_secret, 0, "a", QN_ROLE_ADMIN, NULL, NOW), -1);
    assert_int_equal (qn_tassert_encode (&b, s_secret, 6, "a", QN_ROLE_ADMIN, "x\ny", NOW), -1);
    assert_int_equal (qn_tassert_encode (&b, s_secret, 6, "a", QN_ROLE_ADMIN, NULL, -1), -1);
    assert_int_equal (b.len, 0);
    qn_buf_free (&b);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_known_answer),
        cmocka_unit_test (test_round_trip_roles),
        cmocka_unit_test (test_every_flip_refused),
        cmocka_unit_test (test_secret_and_time),
        cmocka_unit_test (test_malformed),
        cmocka_unit_test (test_authentic_bad_content),
        cmocka_unit_test (test_names_and_encoder_refusals),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
