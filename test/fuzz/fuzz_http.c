/*  test/fuzz/fuzz_http.c - HTTP/1.1 request framing (wire/http_api.c)
    Feeds the input in two pieces split at a byte taken from the input,
    like a socket would, and walks through every pipelined request.
*/
#include <stddef.h>
#include <stdint.h>

#include "wire/http_api.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    qn_http_limits_t limits = { 4096, 2048, 32 };
    qn_http_parser_t *p = qn_http_parser_new (&limits);
    size_t split = size ? data [0] % (size + 1) : 0;
    const char *chunks [2] = { (const char *) data, (const char *) data + split };
    size_t lens [2] = { split, size - split };
    for (int c = 0; c < 2; c++) {
        const char *at = chunks [c];
        size_t left = lens [c];
        for (int guard = 0; guard < 10000; guard++) {
            size_t used = 0;
            qn_http_rc_t rc = qn_http_parser_feed (p, at, left, &used);
            at += used;
            left -= used;
            if (rc == QN_HTTP_REQUEST) {
                qn_http_request_t *req = qn_http_parser_request (p);
                (void) qn_http_request_header (req, "content-type");
                qn_http_parser_next (p);
                continue;
            }
            if (rc == QN_HTTP_CONTINUE)
                continue;
            if (rc == QN_HTTP_ERROR)
                goto done;
            break;              //  Need more
        }
    }
done:
    qn_http_parser_destroy (&p);
    return 0;
}
