/*  wire/route.c - route pattern matching (see route.h) */
#include "wire/route.h"

#include <string.h>

int
qn_route_match (const char *pattern, const qn_url_t *url,
                const char *params [QN_ROUTE_MAX_PARAMS], size_t lens [QN_ROUTE_MAX_PARAMS])
{
    uint32_t seg = 0;
    int literals = 0, nparams = 0;
    const char *p = pattern;
    if (!strcmp (pattern, "/"))             //  The root: no segment at all
        return url->seg_count == 0 ? 0 : -1;
    while (*p == '/') {
        p++;
        const char *end = strchr (p, '/');
        size_t len = end ? (size_t) (end - p) : strlen (p);
        if (seg >= url->seg_count)
            return -1;
        if (p [0] == ':') {
            if (nparams == QN_ROUTE_MAX_PARAMS || url->seg_len [seg] == 0)
                return -1;
            params [nparams] = url->segments [seg];
            lens [nparams] = url->seg_len [seg];
            nparams++;
        }
        else {
            if (url->seg_len [seg] != len || memcmp (url->segments [seg], p, len))
                return -1;
            literals++;
        }
        seg++;
        p += len;
    }
    return seg == url->seg_count ? literals : -1;
}
