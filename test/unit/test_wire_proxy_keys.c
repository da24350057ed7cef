/*  test/unit/test_wire_proxy_keys.c - queen-proxy's API keys
    (wire/proxy_keys.c): generated keys parse and verify against their
    Argon2id hash; every byte of the secret changed, another key's secret,
    a truncated or extended secret are refused; two keys differ (id, secret,
    salt); malformed keys do not parse; a non-Argon2id hash is refused;
    passwords hash at the interactive cost and verify.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "wire/proxy_keys.h"

static void
test_generate_parse_verify (void **state)
{
    (void) state;
    qn_key_new_t a, b;
    assert_int_equal (qn_key_generate (&a), 0);
    assert_int_equal (qn_key_generate (&b), 0);
    assert_int_equal (strlen (a.key), QN_KEY_LEN);
    assert_memory_equal (a.key, "qk_", 3);
    assert_string_not_equal (a.key, b.key);
    assert_string_not_equal (a.id, b.id);
    assert_string_not_equal (a.hash, b.hash);
    assert_memory_equal (a.hash, "$argon2id$", 10);
    assert_null (strstr (a.hash, a.key + 4 + QN_KEY_ID_LEN));     //  no secret in the hash
    char id [QN_KEY_ID_LEN + 1];
    const char *secret;
    size_t slen;
    assert_int_equal (qn_key_parse (a.key, strlen (a.key), id, &secret, &slen), 0);
    assert_string_equal (id, a.id);
    assert_int_equal (slen, QN_KEY_SECRET_LEN);
    assert_true (qn_key_verify (a.hash, secret, slen));
    assert_false (qn_key_verify (b.hash, secret, slen));
    assert_false (qn_key_verify (a.hash, secret, slen - 1));
    char longer [QN_KEY_SECRET_LEN + 2];
    memcpy (longer, secret, slen);
    longer [slen] = 'A';
    assert_false (qn_key_verify (a.hash, longer, slen + 1));
    for (size_t i = 0; i < slen; i++) {
        char s [QN_KEY_SECRET_LEN];
        memcpy (s, secret, slen);
        s [i] = s [i] == 'A' ? 'B' : 'A';
        assert_false (qn_key_verify (a.hash, s, slen));
    }
    assert_false (qn_key_verify ("$argon2i$v=19$m=8,t=1,p=1$x$y", secret, slen));
    assert_false (qn_key_verify ("", secret, slen));
    assert_false (qn_key_verify (NULL, secret, slen));
}

static void
test_malformed_keys (void **state)
{
    (void) state;
    qn_key_new_t a;
    assert_int_equal (qn_key_generate (&a), 0);
    char id [QN_KEY_ID_LEN + 1];
    const char *secret;
    size_t slen;
    char k [QN_KEY_LEN + 2];
    const size_t at [] = { 0, 1, 2, 3, 10, 3 + QN_KEY_ID_LEN, 4 + QN_KEY_ID_LEN, QN_KEY_LEN - 1 };
    const char bad [] = { 'Q', 'x', '-', 'G', 'Z', '-', '=', '+' };
    for (size_t i = 0; i < sizeof at / sizeof at [0]; i++) {
        memcpy (k, a.key, QN_KEY_LEN + 1);
        k [at [i]] = bad [i];
        assert_int_equal (qn_key_parse (k, QN_KEY_LEN, id, &secret, &slen), -1);
    }
    assert_int_equal (qn_key_parse (a.key, QN_KEY_LEN - 1, id, &secret, &slen), -1);
    memcpy (k, a.key, QN_KEY_LEN);
    k [QN_KEY_LEN] = 'A';
    assert_int_equal (qn_key_parse (k, QN_KEY_LEN + 1, id, &secret, &slen), -1);
    assert_int_equal (qn_key_parse ("", 0, id, &secret, &slen), -1);
    assert_int_equal (qn_key_parse (NULL, 0, id, &secret, &slen), -1);
}

static void
test_passwords (void **state)
{
    (void) state;
    char h [QN_KEY_HASH_MAX];
    assert_int_equal (qn_password_hash (h, "correct horse", 13), 0);
    assert_memory_equal (h, "$argon2id$", 10);
    assert_true (qn_password_verify (h, "correct horse", 13));
    assert_false (qn_password_verify (h, "correct horsE", 13));
    assert_false (qn_password_verify (h, "correct hors", 12));
    assert_int_equal (qn_password_hash (h, "", 0), -1);
}

static void
test_cookies (void **state)
{
    (void) state;
    const char *v;
    size_t n;
    const char *h = "theme=dark;  queen_session=qs_abc ; x=1";
    assert_int_equal (qn_cookie_get (h, strlen (h), "queen_session", &v, &n), 0);
    assert_int_equal (n, 6);
    assert_memory_equal (v, "qs_abc", 6);
    assert_int_equal (qn_cookie_get (h, strlen (h), "theme", &v, &n), 0);
    assert_memory_equal (v, "dark", 4);
    assert_int_equal (qn_cookie_get (h, strlen (h), "x", &v, &n), 0);
    assert_int_equal (n, 1);
    //  Names match whole: no prefix, no suffix, no value-only match.
    const char *k = "xqueen_session=a; queen_sessionx=b; y=queen_session=c";
    assert_int_equal (qn_cookie_get (k, strlen (k), "queen_session", &v, &n), -1);
    assert_int_equal (qn_cookie_get ("", 0, "a", &v, &n), -1);
    assert_int_equal (qn_cookie_get (";;; ", 4, "a", &v, &n), -1);
    assert_int_equal (qn_cookie_get ("a", 1, "a", &v, &n), -1);
    assert_int_equal (qn_cookie_get ("a=", 2, "a", &v, &n), 0);
    assert_int_equal (n, 0);
    //  The first pair wins; the length bounds the search.
    const char *d = "a=1; a=2";
    assert_int_equal (qn_cookie_get (d, strlen (d), "a", &v, &n), 0);
    assert_memory_equal (v, "1", 1);
    assert_int_equal (qn_cookie_get (d, 1, "a", &v, &n), -1);
    const char *e = "b=1; a=2";
    assert_int_equal (qn_cookie_get (e, 4, "a", &v, &n), -1);
    assert_int_equal (qn_cookie_get (e, 7, "a", &v, &n), 0);
    assert_int_equal (n, 0);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_generate_parse_verify),
        cmocka_unit_test (test_malformed_keys),
        cmocka_unit_test (test_passwords),
        cmocka_unit_test (test_cookies),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
