/*  test/unit/test_wire_url.c - request-target parsing
    Segments, percent-decoding, query parameters and their helpers, and the
    targets that must be refused. Every input sits at the end of an
    exact-size heap block so ASan catches a read past the target.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "wire/url.h"

//  Parses `len` bytes of `target` from an exact-size copy.
static int
s_parse_n (qn_url_t *url, const char *target, size_t len)
{
    char *copy = qn_malloc (len);
    memcpy (copy, target, len);
    int rc = qn_url_parse (url, copy, len);
    free (copy);
    return rc;
}

static int
s_parse (qn_url_t *url, const char *target)
{
    return s_parse_n (url, target, strlen (target));
}

static void
s_assert_segment (const qn_url_t *url, uint32_t index, const char *expected)
{
    assert_true (index < url->seg_count);
    assert_int_equal (url->seg_len [index], strlen (expected));
    assert_memory_equal (url->segments [index], expected, strlen (expected));
    assert_int_equal (url->segments [index][url->seg_len [index]], 0);
}

static void
test_url_segments (void **state)
{
    (void) state;
    qn_url_t url;
    assert_int_equal (s_parse (&url, "/api/v1/pop/queue/orders"), 0);
    assert_string_equal (url.path, "/api/v1/pop/queue/orders");
    assert_int_equal (url.seg_count, 5);
    s_assert_segment (&url, 0, "api");
    s_assert_segment (&url, 1, "v1");
    s_assert_segment (&url, 4, "orders");
    assert_int_equal (url.param_count, 0);
    qn_url_free (&url);

    assert_int_equal (s_parse (&url, "/"), 0);
    assert_string_equal (url.path, "/");
    assert_int_equal (url.seg_count, 0);
    qn_url_free (&url);
}

static void
test_url_trailing_slash (void **state)
{
    (void) state;
    qn_url_t url;
    assert_int_equal (s_parse (&url, "/api/v1/dlq/"), 0);
    assert_string_equal (url.path, "/api/v1/dlq");
    assert_int_equal (url.seg_count, 3);
    s_assert_segment (&url, 2, "dlq");
    qn_url_free (&url);

    assert_int_equal (s_parse (&url, "/api/v1/dlq/?limit=5"), 0);
    assert_string_equal (url.path, "/api/v1/dlq");
    assert_int_equal (url.seg_count, 3);
    assert_int_equal (url.param_count, 1);
    qn_url_free (&url);
}

static void
test_url_empty_segment_kept (void **state)
{
    (void) state;
    qn_url_t url;
    assert_int_equal (s_parse (&url, "/api//dlq"), 0);
    assert_int_equal (url.seg_count, 3);
    s_assert_segment (&url, 0, "api");
    s_assert_segment (&url, 1, "");
    s_assert_segment (&url, 2, "dlq");
    qn_url_free (&url);

    assert_int_equal (s_parse (&url, "/a//"), 0);
    assert_int_equal (url.seg_count, 2);
    s_assert_segment (&url, 1, "");
    qn_url_free (&url);
}

static void
test_url_percent_decoding (void **state)
{
    (void) state;
    qn_url_t url;
    assert_int_equal (s_parse (&url, "/q/my%20queue/a%2Fb/c+d/%e2%82%AC"), 0);
    assert_int_equal (url.seg_count, 5);
    s_assert_segment (&url, 1, "my queue");
    s_assert_segment (&url, 2, "a/b");         //  %2F stays inside its segment
    s_assert_segment (&url, 3, "c+d");         //  '+' is literal in a path
    s_assert_segment (&url, 4, "\xe2\x82\xac");
    assert_string_equal (url.path, "/q/my queue/a/b/c+d/\xe2\x82\xac");
    qn_url_free (&url);
}

static void
test_url_query_params (void **state)
{
    (void) state;
    qn_url_t url;
    assert_int_equal (s_parse (&url, "/p?b=2&a=1&&flag&b=3&sp=a+b%2Bc&e=&=x&k%3D=v%26"), 0);
    assert_int_equal (url.param_count, 8);
    assert_string_equal (url.params [0].name, "b");
    assert_string_equal (url.params [0].value, "2");
    assert_string_equal (url.params [1].name, "a");
    assert_string_equal (url.params [2].name, "flag");
    assert_string_equal (url.params [2].value, "");
    assert_int_equal (url.params [2].value_len, 0);
    assert_string_equal (url.params [3].name, "b");
    assert_string_equal (url.params [3].value, "3");
    assert_string_equal (url.params [4].value, "a b+c");
    assert_string_equal (url.params [5].name, "e");
    assert_string_equal (url.params [6].name, "");
    assert_string_equal (url.params [6].value, "x");
    assert_string_equal (url.params [7].name, "k=");
    assert_string_equal (url.params [7].value, "v&");

    size_t len = 99;
    assert_string_equal (qn_url_param (&url, "b", &len), "2");  //  first match wins
    assert_int_equal (len, 1);
    assert_string_equal (qn_url_param (&url, "flag", &len), "");
    assert_int_equal (len, 0);
    assert_null (qn_url_param (&url, "missing", NULL));
    assert_null (qn_url_param (&url, "B", NULL));
    qn_url_free (&url);

    assert_int_equal (s_parse (&url, "/p?"), 0);
    assert_int_equal (url.param_count, 0);
    assert_string_equal (url.path, "/p");
    qn_url_free (&url);

    //  Only the first '?' splits; a later one belongs to the query
    assert_int_equal (s_parse (&url, "/p?a=1?2/3"), 0);
    assert_string_equal (qn_url_param (&url, "a", NULL), "1?2/3");
    qn_url_free (&url);
}

static void
test_url_param_limit (void **state)
{
    (void) state;
    qn_buf_t target = QN_BUF_INIT;
    qn_buf_puts (&target, "/p?");
    for (int i = 0; i < 70; i++)
        qn_buf_printf (&target, "p%d=%d&", i, i);
    qn_url_t url;
    assert_int_equal (s_parse_n (&url, target.data, target.len), 0);
    assert_int_equal (url.param_count, QN_URL_MAX_PARAMS);
    assert_string_equal (qn_url_param (&url, "p63", NULL), "63");
    assert_null (qn_url_param (&url, "p64", NULL));
    qn_url_free (&url);
    qn_buf_free (&target);
}

static void
test_url_param_int (void **state)
{
    (void) state;
    qn_url_t url;
    assert_int_equal (s_parse (&url,
        "/p?batch=10&neg=-7&plus=%2B5&plusspace=+5&empty=&bad=10x&space=%201&big=9223372036854775807"
        "&min=-9223372036854775808&over=9223372036854775808&under=-9223372036854775809"
        "&sign=-&hex=0x10&float=1.5"), 0);
    bool bad = true;
    assert_int_equal (qn_url_param_int (&url, "batch", 1, &bad), 10);
    assert_false (bad);
    assert_int_equal (qn_url_param_int (&url, "neg", 1, &bad), -7);
    assert_int_equal (qn_url_param_int (&url, "plus", 1, NULL), 5);     //  "+5" would be " 5": bad
    assert_int_equal (qn_url_param_int (&url, "missing", 42, &bad), 42);
    assert_false (bad);
    assert_int_equal (qn_url_param_int (&url, "empty", 42, &bad), 42);
    assert_false (bad);
    assert_int_equal (qn_url_param_int (&url, "big", 0, &bad), INT64_MAX);
    assert_false (bad);
    assert_int_equal (qn_url_param_int (&url, "min", 0, &bad), INT64_MIN);
    assert_false (bad);
    const char *unparsable [] = { "bad", "space", "plusspace", "over", "under", "sign", "hex", "float" };
    for (size_t i = 0; i < sizeof unparsable / sizeof unparsable [0]; i++) {
        bad = false;
        assert_int_equal (qn_url_param_int (&url, unparsable [i], 42, &bad), 42);
        assert_true (bad);
    }
    assert_int_equal (qn_url_param_int (&url, "bad", 42, NULL), 42);
    qn_url_free (&url);
}

static void
test_url_param_bool (void **state)
{
    (void) state;
    qn_url_t url;
    assert_int_equal (s_parse (&url, "/p?t=true&one=1&f=false&zero=0&yes=yes&T=TRUE&e=&bare"), 0);
    assert_true (qn_url_param_bool (&url, "t", false));
    assert_true (qn_url_param_bool (&url, "one", false));
    assert_false (qn_url_param_bool (&url, "f", true));
    assert_false (qn_url_param_bool (&url, "zero", true));
    assert_false (qn_url_param_bool (&url, "yes", true));
    assert_false (qn_url_param_bool (&url, "T", true));
    assert_true (qn_url_param_bool (&url, "e", true));
    assert_false (qn_url_param_bool (&url, "e", false));
    assert_true (qn_url_param_bool (&url, "bare", true));
    assert_true (qn_url_param_bool (&url, "missing", true));
    assert_false (qn_url_param_bool (&url, "missing", false));
    qn_url_free (&url);
}

static void
test_url_malformed_escapes (void **state)
{
    (void) state;
    const char *targets [] = {
        "/a%", "/a%2", "/a%zz", "/a%2g", "/a%%20", "/p?a=%", "/p?a=%4", "/p?%xy=1",
        "/p?a=1&b=%G0"
    };
    for (size_t i = 0; i < sizeof targets / sizeof targets [0]; i++) {
        qn_url_t url;
        assert_int_equal (s_parse (&url, targets [i]), -1);
        assert_null (url.storage);
        assert_int_equal (url.seg_count, 0);
        qn_url_free (&url);             //  harmless on a failed parse
    }
}

static void
test_url_traversal (void **state)
{
    (void) state;
    const char *targets [] = {
        "/..", "/../etc/passwd", "/api/../secret", "/api/..", "/api/../",
        "/api/%2e%2e/x", "/api/.%2E/x", "/api/..%2Fx", "/api/x%2F..", "/api/x%2F..%2Fy"
    };
    for (size_t i = 0; i < sizeof targets / sizeof targets [0]; i++) {
        qn_url_t url;
        assert_int_equal (s_parse (&url, targets [i]), -1);
    }
    //  Dots that are not a ".." component are ordinary names
    qn_url_t url;
    assert_int_equal (s_parse (&url, "/api/.../a..b/.x/?q=.."), 0);
    assert_int_equal (url.seg_count, 4);
    s_assert_segment (&url, 1, "...");
    s_assert_segment (&url, 2, "a..b");
    assert_string_equal (qn_url_param (&url, "q", NULL), "..");
    qn_url_free (&url);
}

static void
test_url_nul_and_controls (void **state)
{
    (void) state;
    const char *targets [] = {
        "/a%00b", "/p?a=%00", "/p?%00=1", "/a b", "/a\tb", "/a\x7f", "/a#frag", "/a\rb",
        "a/b", "*", "http://host/a", ""
    };
    for (size_t i = 0; i < sizeof targets / sizeof targets [0]; i++) {
        qn_url_t url;
        assert_int_equal (s_parse (&url, targets [i]), -1);
    }
    qn_url_t url;
    assert_int_equal (s_parse_n (&url, "/a\0b", 4), -1);     //  a raw NUL
    assert_int_equal (qn_url_parse (&url, NULL, 0), -1);
}

static void
test_url_segment_limit (void **state)
{
    (void) state;
    qn_buf_t target = QN_BUF_INIT;
    for (int i = 0; i < QN_URL_MAX_SEGMENTS; i++)
        qn_buf_printf (&target, "/s%d", i);
    qn_url_t url;
    assert_int_equal (s_parse_n (&url, target.data, target.len), 0);
    assert_int_equal (url.seg_count, QN_URL_MAX_SEGMENTS);
    s_assert_segment (&url, 31, "s31");
    qn_url_free (&url);

    qn_buf_puts (&target, "/");         //  a trailing slash does not count
    assert_int_equal (s_parse_n (&url, target.data, target.len), 0);
    qn_url_free (&url);

    qn_buf_puts (&target, "x");
    assert_int_equal (s_parse_n (&url, target.data, target.len), -1);
    qn_buf_free (&target);
}

static void
test_url_decode (void **state)
{
    (void) state;
    char buf [32];
    assert_int_equal (qn_url_decode (buf, "a%41+b", 6, true), 4);
    assert_memory_equal (buf, "aA b", 4);
    assert_int_equal (qn_url_decode (buf, "a%41+b", 6, false), 4);
    assert_memory_equal (buf, "aA+b", 4);
    assert_int_equal (qn_url_decode (buf, "%00", 3, false), 1);
    assert_int_equal (buf [0], 0);
    assert_int_equal (qn_url_decode (buf, "%4", 2, false), -1);
    assert_int_equal (qn_url_decode (buf, "", 0, false), 0);

    //  In place
    char text [] = "x%20y%2fz";
    assert_int_equal (qn_url_decode (text, text, strlen (text), false), 5);
    assert_memory_equal (text, "x y/z", 5);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_url_segments),
        cmocka_unit_test (test_url_trailing_slash),
        cmocka_unit_test (test_url_empty_segment_kept),
        cmocka_unit_test (test_url_percent_decoding),
        cmocka_unit_test (test_url_query_params),
        cmocka_unit_test (test_url_param_limit),
        cmocka_unit_test (test_url_param_int),
        cmocka_unit_test (test_url_param_bool),
        cmocka_unit_test (test_url_malformed_escapes),
        cmocka_unit_test (test_url_traversal),
        cmocka_unit_test (test_url_nul_and_controls),
        cmocka_unit_test (test_url_segment_limit),
        cmocka_unit_test (test_url_decode),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
