/*  test/unit/test_config.c - settings from the environment, route
    matching, and wire ids/timestamps
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "kernel/config.h"
#include "wire/ids.h"
#include "wire/route.h"

static const char *s_env [16][2];

static const char *
s_get (const char *name)
{
    for (int i = 0; i < 16 && s_env [i][0]; i++)
        if (!strcmp (s_env [i][0], name))
            return s_env [i][1];
    return NULL;
}

static void
s_set_env (int i, const char *name, const char *value)
{
    s_env [i][0] = name;
    s_env [i][1] = value;
    s_env [i + 1][0] = NULL;
}

static void
test_config_defaults (void **state)
{
    (void) state;
    s_env [0][0] = NULL;
    qn_config_t c;
    char err [256];
    assert_int_equal (qn_config_load_from (&c, s_get, err, sizeof err), 0);
    assert_int_equal (c.port, 6632);
    assert_string_equal (c.host, "0.0.0.0");
    assert_int_equal (c.pg_port, 5432);
    assert_string_equal (c.pg_user, "postgres");
    assert_string_equal (c.pg_db, "postgres");
    assert_true (c.embedded);
    assert_string_equal (c.pg_host, "127.0.0.1");
    assert_int_equal (c.max_body_bytes, 16 * 1024 * 1024);
    qn_config_free (&c);
}

static void
test_config_values_and_errors (void **state)
{
    (void) state;
    qn_config_t c;
    char err [256];
    s_set_env (0, "PORT", "7000");
    s_set_env (1, "PG_HOST", "db.example");
    s_set_env (2, "LOG_LEVEL", "debug");
    assert_int_equal (qn_config_load_from (&c, s_get, err, sizeof err), 0);
    assert_int_equal (c.port, 7000);
    assert_false (c.embedded);
    assert_string_equal (c.pg_host, "db.example");
    qn_config_free (&c);

    struct { const char *name, *value, *needle; } bad [] = {
        { "PORT", "abc", "PORT: expected an integer" },
        { "PORT", "70000", "PORT: 70000 is out of range" },
        { "PORT", "", "PORT: expected an integer" },
        { "PORT", "12x", "PORT: expected an integer" },
        { "DB_POOL_SIZE", "0", "DB_POOL_SIZE: 0 is out of range" },
        { "LOG_LEVEL", "loud", "LOG_LEVEL" },
        { "DEFAULT_SUBSCRIPTION_MODE", "sometimes", "DEFAULT_SUBSCRIPTION_MODE" },
        { "QUEEN_ENCRYPTION_KEY", "abcd", "QUEEN_ENCRYPTION_KEY" },
        { "MAX_BODY_BYTES", "-5", "MAX_BODY_BYTES" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        s_set_env (0, bad [i].name, bad [i].value);
        assert_int_equal (qn_config_load_from (&c, s_get, err, sizeof err), -1);
        assert_non_null (strstr (err, bad [i].needle));
        qn_config_free (&c);
    }
}

static qn_url_t
s_url (const char *target)
{
    qn_url_t u;
    assert_int_equal (qn_url_parse (&u, target, strlen (target)), 0);
    return u;
}

static void
test_route_match (void **state)
{
    (void) state;
    const char *p [QN_ROUTE_MAX_PARAMS];
    size_t l [QN_ROUTE_MAX_PARAMS];
    qn_url_t u = s_url ("/api/v1/pop/queue/orders/partition/p%201?batch=5");
    assert_int_equal (qn_route_match ("/api/v1/pop/queue/:queue/partition/:partition", &u, p, l), 5);
    assert_memory_equal (p [0], "orders", 6);
    assert_int_equal (l [1], 3);
    assert_memory_equal (p [1], "p 1", 3);
    assert_int_equal (qn_route_match ("/api/v1/pop/queue/:queue", &u, p, l), -1);
    qn_url_free (&u);
    //  Literal segments beat parameters: the caller picks the larger count.
    u = s_url ("/api/v1/consumer-groups/lagging");
    int lit = qn_route_match ("/api/v1/consumer-groups/lagging", &u, p, l);
    int par = qn_route_match ("/api/v1/consumer-groups/:group", &u, p, l);
    assert_true (lit > par && par >= 0);
    qn_url_free (&u);
    //  Parameters never match empty segments; trailing slash is dropped.
    u = s_url ("/api/v1/pop/queue//partition/x");
    assert_int_equal (qn_route_match ("/api/v1/pop/queue/:queue/partition/:partition", &u, p, l), -1);
    qn_url_free (&u);
    u = s_url ("/health/");
    assert_int_equal (qn_route_match ("/health", &u, p, l), 1);
    //  The root pattern matches the root only.
    assert_int_equal (qn_route_match ("/", &u, p, l), -1);
    qn_url_free (&u);
    u = s_url ("/");
    assert_int_equal (qn_route_match ("/", &u, p, l), 0);
    assert_int_equal (qn_route_match ("/health", &u, p, l), -1);
    qn_url_free (&u);
}

static void
test_ids (void **state)
{
    (void) state;
    char s [QN_ID_STR_LEN + 1];
    qn_id_format (QN_ID_MESSAGE, 5, s);
    assert_string_equal (s, "00000001-0000-8000-8000-000000000005");
    int64_t id;
    assert_int_equal (qn_id_parse (QN_ID_MESSAGE, s, strlen (s), &id), 0);
    assert_int_equal (id, 5);
    //  Wrong kind, malformed, other UUIDs are refused.
    assert_int_equal (qn_id_parse (QN_ID_PARTITION, s, strlen (s), &id), -1);
    assert_int_equal (qn_id_parse (QN_ID_MESSAGE, "00000001-0000-8000-8000-00000000000", 35, &id), -1);
    assert_int_equal (qn_id_parse (QN_ID_MESSAGE, "0190f3c2-1111-7000-8000-000000000001", 36, &id), -1);
    //  Round trip at the top of the range, and ordering as strings.
    int64_t big = ((int64_t) 1 << 62) - 1;
    qn_id_format (QN_ID_PARTITION, big, s);
    assert_int_equal (qn_id_parse (QN_ID_PARTITION, s, strlen (s), &id), 0);
    assert_true (id == big);
    char a [QN_ID_STR_LEN + 1], b [QN_ID_STR_LEN + 1];
    qn_id_format (QN_ID_MESSAGE, 9, a);
    qn_id_format (QN_ID_MESSAGE, 10, b);
    assert_true (strcmp (a, b) < 0);
    qn_uuid_v7 (a);
    assert_true (qn_uuid_valid (a, strlen (a)));
    assert_int_equal (a [14], '7');
    qn_uuid_v4 (b);
    assert_int_equal (b [14], '4');
}

static void
test_timestamps (void **state)
{
    (void) state;
    char s [32];
    qn_ts_us (1778920887123456LL, s);
    assert_string_equal (s, "2026-05-16T08:41:27.123456Z");
    qn_ts_ms (1778920887123456LL, s);
    assert_string_equal (s, "2026-05-16T08:41:27.123Z");
    int64_t us;
    assert_int_equal (qn_ts_parse ("2026-05-16T08:41:27.123456Z", 27, &us), 0);
    assert_true (us == 1778920887123456LL);
    assert_int_equal (qn_ts_parse ("2026-05-16T10:41:27.123456+02:00", 32, &us), 0);
    assert_true (us == 1778920887123456LL);
    assert_int_equal (qn_ts_parse ("2026-05-16", 10, &us), 0);
    assert_int_equal (qn_ts_parse ("2026-13-16", 10, &us), -1);
    assert_int_equal (qn_ts_parse ("yesterday", 9, &us), -1);
    assert_int_equal (qn_ts_parse ("2026-05-16T08:41:27.Z", 21, &us), -1);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_config_defaults),
        cmocka_unit_test (test_config_values_and_errors),
        cmocka_unit_test (test_route_match),
        cmocka_unit_test (test_ids),
        cmocka_unit_test (test_timestamps),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
