/*  test/unit/test_wire_proxy_routes.c - queen-proxy's route-to-role table
    (wire/proxy_routes.c): each role allowed and refused per route family,
    cluster-wide routes refused for every role, unknown paths and methods,
    the most literal match winning, and every broker route of the HTTP
    codec's tables classified (none falls through to UNKNOWN).
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "actors/http/codec.h"
#include "wire/proxy_routes.h"

static qn_pr_route_t
s_route (const char *method, const char *target)
{
    qn_url_t url;
    assert_int_equal (qn_url_parse (&url, target, strlen (target)), 0);
    qn_pr_route_t r = qn_proxy_route (method, &url);
    qn_url_free (&url);
    return r;
}

//  "APRWC": which of admin, producer, read-only, read-write, consumer may call it.
static void
s_expect (const char *method, const char *target, const char *who)
{
    qn_pr_route_t r = s_route (method, target);
    const qn_role_t roles [] = { QN_ROLE_ADMIN, QN_ROLE_PRODUCER, QN_ROLE_READ_ONLY,
                                 QN_ROLE_READ_WRITE, QN_ROLE_CONSUMER };
    const char letters [] = "APRWC";
    for (int i = 0; i < 5; i++) {
        bool want = strchr (who, letters [i]) != NULL;
        if (qn_proxy_route_allows (&r, roles [i]) != want)
            fail_msg ("%s %s: role %s allowed=%d, want %d", method, target,
                      qn_role_name (roles [i]), !want, want);
    }
    assert_false (qn_proxy_route_allows (&r, QN_ROLE_NONE) && !r.public_);
}

static void
test_roles (void **state)
{
    (void) state;
    s_expect ("POST", "/api/v1/push", "APW");
    s_expect ("POST", "/api/v1/configure", "AW");
    s_expect ("POST", "/api/v1/transaction", "AW");
    s_expect ("GET", "/api/v1/pop/queue/orders?batch=10&wait=true", "AWC");
    s_expect ("GET", "/api/v1/pop/queue/orders/partition/p1", "AWC");
    s_expect ("GET", "/api/v1/pop?namespace=x", "AWC");
    s_expect ("POST", "/api/v1/ack", "AWC");
    s_expect ("POST", "/api/v1/ack/batch", "AWC");
    s_expect ("POST", "/api/v1/lease/abc/extend", "AWC");
    s_expect ("GET", "/api/v1/resources/queues", "ARW");
    s_expect ("GET", "/api/v1/resources/queues/orders", "ARW");
    s_expect ("GET", "/api/v1/dlq?queue=orders", "ARW");
    s_expect ("GET", "/api/v1/consumer-groups/lagging", "ARW");
    s_expect ("GET", "/api/v1/kv/b/k", "ARW");
    s_expect ("PUT", "/api/v1/kv/b/k", "AW");
    s_expect ("POST", "/api/v1/timers", "AW");
    s_expect ("POST", "/api/v1/dlq/requeue", "AW");
    s_expect ("DELETE", "/api/v1/resources/queues/orders", "A");
    s_expect ("DELETE", "/api/v1/dlq", "A");
    s_expect ("DELETE", "/api/v1/consumer-groups/billing", "A");
    s_expect ("POST", "/api/v1/stats/refresh", "A");
    s_expect ("POST", "/proxy/v1/keys", "A");
    s_expect ("DELETE", "/proxy/v1/keys/abc", "A");
    s_expect ("GET", "/proxy/v1/whoami", "APRWC");
    s_expect ("GET", "/proxy/v1/usage", "APRWC");
}

static void
test_kinds (void **state)
{
    (void) state;
    qn_pr_route_t r = s_route ("GET", "/health");
    assert_int_equal (r.kind, QN_PR_LOCAL);
    assert_true (r.public_);
    assert_true (qn_proxy_route_allows (&r, QN_ROLE_NONE));
    const char *cluster [] [2] = {
        { "GET", "/api/v1/system/maintenance" }, { "POST", "/api/v1/system/maintenance" },
        { "POST", "/api/v1/system/maintenance/pop" }, { "GET", "/api/v1/system/shared-state" },
        { "GET", "/api/v1/status/buffers" }, { "GET", "/api/v1/analytics/postgres-stats" },
        { "POST", "/internal/api/notify" }, { "GET", "/metrics" }, { "GET", "/metrics/prometheus" },
    };
    for (size_t i = 0; i < sizeof cluster / sizeof cluster [0]; i++) {
        r = s_route (cluster [i] [0], cluster [i] [1]);
        assert_int_equal (r.kind, QN_PR_CLUSTER);
        s_expect (cluster [i] [0], cluster [i] [1], "");
    }
    r = s_route ("GET", "/api/v1/nope");
    assert_int_equal (r.kind, QN_PR_UNKNOWN);
    assert_false (r.path_known);
    s_expect ("GET", "/api/v1/nope", "");
    r = s_route ("PATCH", "/api/v1/push");
    assert_int_equal (r.kind, QN_PR_UNKNOWN);
    assert_true (r.path_known);
    r = s_route ("GET", "/api/v1/push");
    assert_int_equal (r.kind, QN_PR_UNKNOWN);
    //  The literal beats the parameter.
    r = s_route ("GET", "/api/v1/consumer-groups/lagging");
    assert_string_equal (r.pattern, "/api/v1/consumer-groups/lagging");
    r = s_route ("GET", "/api/v1/consumer-groups/billing");
    assert_string_equal (r.pattern, "/api/v1/consumer-groups/:group");
    //  An encoded slash stays inside its segment.
    r = s_route ("GET", "/api/v1/resources/queues/a%2Fb");
    assert_string_equal (r.pattern, "/api/v1/resources/queues/:queue");
}

//  Every route the broker serves is classified: forwarded with some role,
//  or cluster-wide (a new broker route must be added to the proxy's table).
static void
test_every_broker_route (void **state)
{
    (void) state;
    const qn_http_route_t *const tables [] = {
        qn_http_routes_core, qn_http_routes_push, qn_http_routes_ack, qn_http_routes_txn,
        qn_http_routes_pop, qn_http_routes_admin, qn_http_routes_system, qn_http_routes_state,
        qn_http_routes_streams, qn_http_routes_ephemeral, qn_http_routes_dashboard
    };
    int seen = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables [0]; t++)
        for (const qn_http_route_t *r = tables [t]; r->method; r++) {
            char target [256];
            size_t n = 0;
            for (const char *p = r->pattern; *p && n < sizeof target - 2; p++)
                target [n++] = *p == ':' ? 'x' : *p;    //  ":queue" -> "xqueue"
            target [n] = 0;
            qn_pr_route_t pr = s_route (r->method, target);
            if (pr.kind == QN_PR_UNKNOWN || (pr.kind == QN_PR_FORWARD && !pr.roles)
            ||  (pr.kind == QN_PR_CLUSTER && strcmp (r->pattern, "/api/v1/ephemeral/stats")
                 && strncmp (r->pattern, "/api/v1/system/", 15) && strncmp (r->pattern, "/metrics", 8)
                 && strcmp (r->pattern, "/api/v1/status/buffers")
                 && strcmp (r->pattern, "/api/v1/analytics/postgres-stats")
                 && strncmp (r->pattern, "/internal/", 10)))
                fail_msg ("broker route %s %s is not in the proxy's table", r->method, r->pattern);
            if (pr.kind == QN_PR_LOCAL && strcmp (r->pattern, "/health"))
                fail_msg ("broker route %s %s is shadowed by a proxy route", r->method, r->pattern);
            seen++;
        }
    assert_true (seen >= 60);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_roles),
        cmocka_unit_test (test_kinds),
        cmocka_unit_test (test_every_broker_route),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
