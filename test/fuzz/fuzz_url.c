/*  test/fuzz/fuzz_url.c - request targets (wire/url.c) and routes */
#include <stddef.h>
#include <stdint.h>

#include "wire/route.h"
#include "wire/url.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    qn_url_t url;
    if (qn_url_parse (&url, (const char *) data, size) == 0) {
        const char *p [QN_ROUTE_MAX_PARAMS];
        size_t l [QN_ROUTE_MAX_PARAMS];
        (void) qn_route_match ("/api/v1/pop/queue/:queue/partition/:partition", &url, p, l);
        (void) qn_route_match ("/api/v1/consumer-groups/:group/queues/:queue/seek", &url, p, l);
        bool bad;
        (void) qn_url_param_int (&url, "batch", 1, &bad);
        (void) qn_url_param_bool (&url, "wait", false);
        qn_url_free (&url);
    }
    return 0;
}
