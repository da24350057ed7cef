/*  wire/route.h - matching a request path against a route pattern
    Pure. Patterns are "/api/v1/pop/queue/:queue": literal segments and
    ":name" parameters, each one whole segment. A parameter never matches
    an empty segment. The caller prefers the match with the most literal
    segments, so "/consumer-groups/lagging" beats "/consumer-groups/:group".
*/
#ifndef QN_WIRE_ROUTE_H
#define QN_WIRE_ROUTE_H

#include <stddef.h>

#include "wire/url.h"

#define QN_ROUTE_MAX_PARAMS 6

//  Returns the number of literal segments if url matches pattern (params
//  and lens filled, pointing into url), or -1.
int qn_route_match (const char *pattern, const qn_url_t *url,
                    const char *params [QN_ROUTE_MAX_PARAMS], size_t lens [QN_ROUTE_MAX_PARAMS]);

#endif
