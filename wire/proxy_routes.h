/*  wire/proxy_routes.h - which roles of queen-proxy may call which route
    The proxy's route-to-role table: for a method and a parsed path, the set
    of roles (wire/tenant_assert.h) allowed, or why the route is refused
    outright. Least privilege: a producer pushes, a consumer pops and acks,
    read-only reads without consuming, read-write does all of the data
    plane, admin also deletes and manages keys. Cluster-wide routes
    (system, buffers, postgres-stats, internal) are never forwarded for a
    tenant. The administration of tenants, plans and their keys
    (/proxy/v1/admin/...) belongs to operator keys (no tenant), which
    reach nothing else. Pure: a static table and qn_route_match.
*/
#ifndef QN_WIRE_PROXY_ROUTES_H
#define QN_WIRE_PROXY_ROUTES_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/tenant_assert.h"
#include "wire/url.h"

#define QN_PR_BIT(role) (1u << (role))
#define QN_PR_ADMIN      QN_PR_BIT (QN_ROLE_ADMIN)
#define QN_PR_RW         QN_PR_BIT (QN_ROLE_READ_WRITE)
#define QN_PR_RO         QN_PR_BIT (QN_ROLE_READ_ONLY)
#define QN_PR_PRODUCER   QN_PR_BIT (QN_ROLE_PRODUCER)
#define QN_PR_CONSUMER   QN_PR_BIT (QN_ROLE_CONSUMER)

typedef enum {
    QN_PR_FORWARD = 0,          //  A broker route: forward if the role is allowed
    QN_PR_LOCAL,                //  The proxy's own route (/proxy/v1/..., /health)
    QN_PR_CLUSTER,              //  Cluster-wide: 403 for every tenant
    QN_PR_UNKNOWN,              //  No such route: 404 (405 when only the method differs)
    QN_PR_OPERATOR              //  The proxy's admin routes: operator keys only
} qn_pr_kind_t;

typedef struct {
    qn_pr_kind_t kind;
    uint32_t roles;             //  QN_PR_* bits allowed (0 for CLUSTER / UNKNOWN)
    bool public_;               //  No key needed (/health)
    bool path_known;            //  UNKNOWN: the path exists with another method
    const char *pattern;        //  The matched pattern, or NULL
} qn_pr_route_t;

//  Classifies method + url.
qn_pr_route_t qn_proxy_route (const char *method, const qn_url_t *url);
//  True when `role` may call `r`.
bool qn_proxy_route_allows (const qn_pr_route_t *r, qn_role_t role);

#endif
