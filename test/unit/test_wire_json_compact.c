/*  test/unit/test_wire_json_compact.c - PostgreSQL's json text re-written
    compactly; verbatim members keep their bytes
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "wire/json_compact.h"

static void
s_check (const char *in, const char *const *verbatim, const char *want)
{
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (qn_json_compact (in, strlen (in), verbatim, &out), 0);
    qn_buf_putc (&out, 0);
    assert_string_equal (out.data, want);
    qn_buf_free (&out);
}

static void
test_postgres_output (void **state)
{
    (void) state;
    //  json_build_object / json_agg spelling.
    s_check ("{\"leaseTime\" : 30, \"name\" : \"a b\", \"tags\" : [1, 2.50, -3e2], "
             "\"x\" : {\"y\" : null, \"z\" : [true, false]}}",
             NULL,
             "{\"leaseTime\":30,\"name\":\"a b\",\"tags\":[1,2.50,-3e2],"
             "\"x\":{\"y\":null,\"z\":[true,false]}}");
    //  jsonb spelling, escapes kept as they are, empty containers.
    s_check ("  [{\"a\": \"q\\\"\\u00e9\\n\"}, [], {}]\n", NULL,
             "[{\"a\":\"q\\\"\\u00e9\\n\"},[],{}]");
    s_check ("42", NULL, "42");
    s_check ("\"s p a c e\"", NULL, "\"s p a c e\"");
}

static void
test_verbatim_members (void **state)
{
    (void) state;
    const char *const keep [] = { "payload", "data", NULL };
    s_check ("{\"id\" : 1, \"payload\" : {\"n\" :  1,  \"s\" : [1 , 2]}, "
             "\"rows\" : [{\"data\" : [ 1 ]}], \"other\" : {\"n\" : 1}}",
             keep,
             "{\"id\":1,\"payload\":{\"n\" :  1,  \"s\" : [1 , 2]},"
             "\"rows\":[{\"data\":[ 1 ]}],\"other\":{\"n\":1}}");
    //  A verbatim name as a value is just a string.
    s_check ("{\"k\" : \"payload\"}", keep, "{\"k\":\"payload\"}");
}

static void
test_not_json (void **state)
{
    (void) state;
    qn_buf_t out = QN_BUF_INIT;
    qn_buf_puts (&out, "x");
    assert_int_equal (qn_json_compact ("{\"a\" : }", 8, NULL, &out), -1);
    assert_int_equal (qn_json_compact ("", 0, NULL, &out), -1);
    assert_int_equal (out.len, 1);
    qn_buf_free (&out);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_postgres_output),
        cmocka_unit_test (test_verbatim_members),
        cmocka_unit_test (test_not_json),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
