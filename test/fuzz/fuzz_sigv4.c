/*  test/fuzz/fuzz_sigv4.c - Authorization header values, the canonical
    request of untrusted paths, queries and headers, and the request time
    of X-Amz-Date / Date values (wire/sigv4.c)
    Input: header value \0 path \0 query \0 signed headers \0 header value
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/sigv4.h"

//  The next NUL-separated field of [*p, end) as a NUL-terminated copy.
static char *
s_field (const uint8_t **p, const uint8_t *end)
{
    const uint8_t *s = *p;
    const uint8_t *z = memchr (s, 0, (size_t) (end - s));
    size_t n = z ? (size_t) (z - s) : (size_t) (end - s);
    char *out = malloc (n + 1);
    memcpy (out, s, n);
    out [n] = 0;
    *p = z ? z + 1 : end;
    return out;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    char *auth = s_field (&p, end);
    char *path = s_field (&p, end);
    char *query = s_field (&p, end);
    char *signed_headers = s_field (&p, end);
    char *value = s_field (&p, end);
    qn_sigv4_auth_t a;
    if (qn_sigv4_parse_authorization (auth, strlen (auth), &a) == 0) {
        if (strlen (a.signature) != 64 || strlen (a.date) != 8)
            abort ();
    }
    qn_http_header_t h [] = {
        { "Host", 4, value, strlen (value) },
        { "X-Amz-Date", 10, "20261201T180000Z", 16 },
        { "x-amz-target", 12, value, strlen (value) },
    };
    for (int s3 = 0; s3 < 2; s3++) {
        qn_sigv4_request_t r = {
            .method = "POST", .path = path, .query = query, .headers = h, .header_count = 3,
            .signed_headers = signed_headers, .payload_hash = "UNSIGNED-PAYLOAD",
            .amz_date = "20261201T180000Z", .region = "us-east-1", .service = "sqs", .s3 = s3
        };
        char sig [65];
        qn_sigv4_signature (&r, "secret", sig);
        if (strlen (sig) != 64)
            abort ();
    }
    //  The request time: the header value as X-Amz-Date, then as Date; a
    //  time found is written as 16 characters of the X-Amz-Date form.
    char when [17];
    for (int as_date = 0; as_date < 2; as_date++) {
        memset (when, 'x', sizeof when);
        int64_t t = qn_sigv4_request_time (as_date? NULL: value, as_date? 0: strlen (value),
                                           as_date? value: NULL, as_date? strlen (value): 0, when);
        if (t >= 0 && (when [16] != 0 || strlen (when) != 16 || when [8] != 'T' || when [15] != 'Z'))
            abort ();
    }
    free (auth);
    free (path);
    free (query);
    free (signed_headers);
    free (value);
    return 0;
}
