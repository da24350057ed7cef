/*  wire/proxy_routes.c - queen-proxy's route-to-role table (see the header)
*/
#include "wire/proxy_routes.h"
#include "wire/route.h"

#include <string.h>

#define ALL  (QN_PR_ADMIN | QN_PR_RW | QN_PR_RO | QN_PR_PRODUCER | QN_PR_CONSUMER)
#define READ (QN_PR_ADMIN | QN_PR_RW | QN_PR_RO)
#define PROD (QN_PR_ADMIN | QN_PR_RW | QN_PR_PRODUCER)
#define CONS (QN_PR_ADMIN | QN_PR_RW | QN_PR_CONSUMER)
#define RW   (QN_PR_ADMIN | QN_PR_RW)
#define AD   (QN_PR_ADMIN)

typedef struct {
    const char *method;
    const char *pattern;
    qn_pr_kind_t kind;
    uint32_t roles;
} s_row_t;

static const s_row_t s_table [] = {
    //  the proxy's own
    { "GET",    "/health", QN_PR_LOCAL, 0 },
    { "GET",    "/proxy/v1/whoami", QN_PR_LOCAL, ALL },
    { "GET",    "/proxy/v1/usage", QN_PR_LOCAL, ALL },
    { "GET",    "/proxy/v1/keys", QN_PR_LOCAL, AD },
    { "POST",   "/proxy/v1/keys", QN_PR_LOCAL, AD },
    { "DELETE", "/proxy/v1/keys/:id", QN_PR_LOCAL, AD },
    { "POST",   "/proxy/v1/login", QN_PR_LOCAL, 0 },
    { "POST",   "/proxy/v1/logout", QN_PR_LOCAL, ALL },
    { "GET",    "/proxy/v1/users", QN_PR_LOCAL, AD },
    { "POST",   "/proxy/v1/users", QN_PR_LOCAL, AD },
    { "PUT",    "/proxy/v1/users/:user", QN_PR_LOCAL, AD },
    { "DELETE", "/proxy/v1/users/:user", QN_PR_LOCAL, AD },
    //  the proxy's administration: operator keys only
    { "GET",    "/proxy/v1/admin/plans", QN_PR_OPERATOR, AD },
    { "POST",   "/proxy/v1/admin/plans", QN_PR_OPERATOR, AD },
    { "GET",    "/proxy/v1/admin/plans/:plan", QN_PR_OPERATOR, AD },
    { "PUT",    "/proxy/v1/admin/plans/:plan", QN_PR_OPERATOR, AD },
    { "DELETE", "/proxy/v1/admin/plans/:plan", QN_PR_OPERATOR, AD },
    { "GET",    "/proxy/v1/admin/tenants", QN_PR_OPERATOR, AD },
    { "POST",   "/proxy/v1/admin/tenants", QN_PR_OPERATOR, AD },
    { "GET",    "/proxy/v1/admin/tenants/:tenant", QN_PR_OPERATOR, AD },
    { "PATCH",  "/proxy/v1/admin/tenants/:tenant", QN_PR_OPERATOR, AD },
    { "DELETE", "/proxy/v1/admin/tenants/:tenant", QN_PR_OPERATOR, AD },
    { "GET",    "/proxy/v1/admin/tenants/:tenant/keys", QN_PR_OPERATOR, AD },
    { "POST",   "/proxy/v1/admin/tenants/:tenant/keys", QN_PR_OPERATOR, AD },
    { "DELETE", "/proxy/v1/admin/tenants/:tenant/keys/:id", QN_PR_OPERATOR, AD },
    { "GET",    "/proxy/v1/admin/tenants/:tenant/users", QN_PR_OPERATOR, AD },
    { "POST",   "/proxy/v1/admin/tenants/:tenant/users", QN_PR_OPERATOR, AD },
    { "PUT",    "/proxy/v1/admin/tenants/:tenant/users/:user", QN_PR_OPERATOR, AD },
    { "DELETE", "/proxy/v1/admin/tenants/:tenant/users/:user", QN_PR_OPERATOR, AD },
    //  cluster-wide: never for a tenant
    { "GET",    "/metrics", QN_PR_CLUSTER, 0 },
    { "GET",    "/metrics/prometheus", QN_PR_CLUSTER, 0 },
    { "GET",    "/api/v1/system/maintenance", QN_PR_CLUSTER, 0 },
    { "POST",   "/api/v1/system/maintenance", QN_PR_CLUSTER, 0 },
    { "GET",    "/api/v1/system/maintenance/pop", QN_PR_CLUSTER, 0 },
    { "POST",   "/api/v1/system/maintenance/pop", QN_PR_CLUSTER, 0 },
    { "GET",    "/api/v1/system/shared-state", QN_PR_CLUSTER, 0 },
    { "GET",    "/api/v1/status/buffers", QN_PR_CLUSTER, 0 },
    { "GET",    "/api/v1/analytics/postgres-stats", QN_PR_CLUSTER, 0 },
    { "POST",   "/internal/api/notify", QN_PR_CLUSTER, 0 },
    //  the broker's ephemeral memory figures (names are per tenant, below)
    { "GET",    "/api/v1/ephemeral/stats", QN_PR_CLUSTER, 0 },
    //  ephemeral queues and topics: names are per tenant (docs/ephemeral.md)
    { "POST",   "/api/v1/ephemeral/queues/:name", QN_PR_FORWARD, AD },
    { "POST",   "/api/v1/ephemeral/queues/:name/send", QN_PR_FORWARD, PROD },
    { "GET",    "/api/v1/ephemeral/queues/:name/receive", QN_PR_FORWARD, CONS },
    { "POST",   "/api/v1/ephemeral/queues/:name/request", QN_PR_FORWARD, PROD },
    { "POST",   "/api/v1/ephemeral/reply", QN_PR_FORWARD, CONS },
    { "POST",   "/api/v1/ephemeral/topics/:name/subscribe", QN_PR_FORWARD, CONS },
    { "GET",    "/api/v1/ephemeral/topics/:name/subscribers", QN_PR_FORWARD, READ },
    { "POST",   "/api/v1/ephemeral/topics/:name/publish", QN_PR_FORWARD, PROD },
    { "GET",    "/api/v1/ephemeral/topics/:name/poll", QN_PR_FORWARD, CONS },
    //  the dashboard's page and assets (no data: every call it makes is
    //  an API route checked on its own)
    { "GET",    "/", QN_PR_FORWARD, ALL },
    { "GET",    "/dashboard/:file", QN_PR_FORWARD, ALL },
    //  write path
    { "POST",   "/api/v1/push", QN_PR_FORWARD, PROD },
    { "POST",   "/api/v1/configure", QN_PR_FORWARD, RW },
    { "POST",   "/api/v1/transaction", QN_PR_FORWARD, RW },
    //  consuming
    { "GET",    "/api/v1/pop/queue/:queue", QN_PR_FORWARD, CONS },
    { "GET",    "/api/v1/pop/queue/:queue/partition/:partition", QN_PR_FORWARD, CONS },
    { "GET",    "/api/v1/pop", QN_PR_FORWARD, CONS },
    { "POST",   "/api/v1/ack", QN_PR_FORWARD, CONS },
    { "POST",   "/api/v1/ack/batch", QN_PR_FORWARD, CONS },
    { "POST",   "/api/v1/lease/:leaseId/extend", QN_PR_FORWARD, CONS },
    //  reads
    { "GET",    "/api/v1/resources/overview", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/resources/queues", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/resources/queues/:queue", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/resources/queue-summaries", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/resources/queues/:queue/partitions", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/resources/queues/:queue/messages", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/resources/kv-buckets", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/resources/dead-letters", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/resources/streams", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/resources/namespaces", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/resources/tasks", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/messages", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/messages/:partitionId/:transactionId", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/dlq", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/consumer-groups", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/consumer-groups/lagging", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/consumer-groups/:group", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/status", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/status/queues", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/status/queues/:queue", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/status/queues/:queue/messages", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/status/analytics", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/analytics/queue-lag", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/analytics/system-metrics", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/analytics/worker-metrics", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/analytics/queue-ops", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/analytics/queue-parked-replicas", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/analytics/retention", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/kv/:bucket/:key", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/kv/:bucket", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/timers", QN_PR_FORWARD, READ },
    { "GET",    "/api/v1/timers/:timerId", QN_PR_FORWARD, READ },
    { "POST",   "/streams/v1/state/get", QN_PR_FORWARD, READ },
    //  state and management writes
    { "PUT",    "/api/v1/kv/:bucket/:key", QN_PR_FORWARD, RW },
    { "DELETE", "/api/v1/kv/:bucket/:key", QN_PR_FORWARD, RW },
    { "POST",   "/api/v1/timers", QN_PR_FORWARD, RW },
    { "DELETE", "/api/v1/timers/:timerId", QN_PR_FORWARD, RW },
    { "POST",   "/streams/v1/queries", QN_PR_FORWARD, RW },
    { "POST",   "/streams/v1/cycle", QN_PR_FORWARD, RW },
    { "POST",   "/api/v1/dlq/requeue", QN_PR_FORWARD, RW },
    { "POST",   "/api/v1/consumer-groups/:group/subscription", QN_PR_FORWARD, RW },
    { "POST",   "/api/v1/consumer-groups/:group/queues/:queue/seek", QN_PR_FORWARD, RW },
    { "POST",   "/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek", QN_PR_FORWARD, RW },
    //  destructive
    { "DELETE", "/api/v1/resources/queues/:queue", QN_PR_FORWARD, AD },
    { "DELETE", "/api/v1/resources/queues/:queue/partitions/:partition", QN_PR_FORWARD, AD },
    { "DELETE", "/api/v1/messages/:partitionId/:transactionId", QN_PR_FORWARD, AD },
    { "DELETE", "/api/v1/dlq", QN_PR_FORWARD, AD },
    { "DELETE", "/api/v1/consumer-groups/:group", QN_PR_FORWARD, AD },
    { "DELETE", "/api/v1/consumer-groups/:group/queues/:queue", QN_PR_FORWARD, AD },
    { "POST",   "/api/v1/stats/refresh", QN_PR_FORWARD, AD },
};

qn_pr_route_t
qn_proxy_route (const char *method, const qn_url_t *url)
{
    qn_pr_route_t out = { QN_PR_UNKNOWN, 0, false, false, NULL };
    int best = -1;
    const char *params [QN_ROUTE_MAX_PARAMS];
    size_t lens [QN_ROUTE_MAX_PARAMS];
    for (size_t i = 0; i < sizeof s_table / sizeof s_table [0]; i++) {
        int lit = qn_route_match (s_table [i].pattern, url, params, lens);
        if (lit < 0)
            continue;
        out.path_known = true;
        if (strcmp (s_table [i].method, method) || lit <= best)
            continue;
        best = lit;
        out.kind = s_table [i].kind;
        out.roles = s_table [i].roles;
        out.pattern = s_table [i].pattern;
        out.public_ = s_table [i].kind == QN_PR_LOCAL && s_table [i].roles == 0;
    }
    if (best < 0) {
        out.kind = QN_PR_UNKNOWN;
        out.roles = 0;
    }
    return out;
}

bool
qn_proxy_route_allows (const qn_pr_route_t *r, qn_role_t role)
{
    if (r->kind != QN_PR_FORWARD && r->kind != QN_PR_LOCAL && r->kind != QN_PR_OPERATOR)
        return false;
    if (r->public_)
        return true;
    return role != QN_ROLE_NONE && (r->roles & QN_PR_BIT (role)) != 0;
}
