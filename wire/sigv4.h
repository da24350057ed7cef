/*  wire/sigv4.h - AWS Signature Version 4 (HMAC-SHA256)
    One implementation for both directions: the SQS door verifies the
    signature of a request it received (parse the Authorization header,
    recompute with the key table's secret, compare in constant time), the
    sink signs the S3 requests it sends.
    Canonical request, as AWS defines it:
        method \n canonical URI \n canonical query \n canonical headers \n
        signed headers \n payload hash
    - canonical URI: for S3 the path exactly as sent (already URI-encoded by
      the sender); for every other service each path segment of the path as
      sent is URI-encoded once more, after removing "." and ".." segments
      and empty segments (AWS's "encoded twice" rule).
    - canonical query: every name=value of the raw query string is
      percent-decoded, re-encoded with AWS's rules (unreserved A-Z a-z 0-9
      - _ . ~ kept, everything else %XX uppercase, '+' is a literal plus),
      sorted by name then value, joined by '&'. A name without '=' has an
      empty value.
    - canonical headers: the signed headers in the order of the
      SignedHeaders list, names lowercased, values trimmed with inner runs
      of spaces collapsed; a header present several times has its values
      joined by ',' in order of appearance.
    Pure: no I/O, no clocks (the caller checks the date's skew).
*/
#ifndef QN_WIRE_SIGV4_H
#define QN_WIRE_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "wire/http_api.h"

typedef struct {
    const char *method;                 //  "POST"
    const char *path;                   //  URI path as sent ("/" or "/000000000000/q1")
    const char *query;                  //  Raw query string without '?'; "" or NULL if none
    const qn_http_header_t *headers;    //  The request's headers
    uint32_t header_count;
    const char *signed_headers;         //  "content-type;host;x-amz-date"
    const char *payload_hash;           //  Lowercase hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"
    const char *amz_date;               //  "20150830T123600Z"
    const char *region;                 //  "us-east-1"
    const char *service;                //  "sqs", "s3"
    bool s3;                            //  S3's canonical URI rule (see above)
} qn_sigv4_request_t;

//  The parts of an "AWS4-HMAC-SHA256 Credential=AK/20150830/us-east-1/
//  sqs/aws4_request, SignedHeaders=a;b, Signature=hex" header value.
typedef struct {
    char access_key [129];
    char date [9];                      //  yyyymmdd of the credential scope
    char region [33];
    char service [33];
    char signed_headers [1024];
    char signature [65];
} qn_sigv4_auth_t;

//  0, or -1 when the value is not of that shape (wrong algorithm, a part
//  missing or too long, a scope not ending in aws4_request, a signature
//  that is not 64 lowercase hex digits).
int qn_sigv4_parse_authorization (const char *value, size_t len, qn_sigv4_auth_t *out);

//  The canonical request (for tests and for logging a mismatch at debug).
void qn_sigv4_canonical_request (const qn_sigv4_request_t *r, qn_buf_t *out);

//  The signature of r with the secret access key, as 64 lowercase hex
//  digits and a NUL.
void qn_sigv4_signature (const qn_sigv4_request_t *r, const char *secret, char out_hex [65]);

//  The whole Authorization header value for r. Returns 0, or -1 when it
//  does not fit in cap bytes (with the NUL).
int qn_sigv4_authorization (const qn_sigv4_request_t *r, const char *access_key,
                            const char *secret, char *out, size_t cap);

//  Lowercase hex SHA-256 of data (the payload hash).
void qn_sigv4_sha256_hex (const void *data, size_t len, char out_hex [65]);

//  The request time of a signed request (spec sqs.md §3.3): the
//  X-Amz-Date value "yyyymmddThhmmssZ" (x_amz_date, NULL when the header is
//  absent), else the HTTP Date header in IMF-fixdate form "Sun, 06 Nov 1994
//  08:49:37 GMT" (date, NULL when absent). Returns the epoch seconds and
//  writes the instant in the X-Amz-Date form (what the string to sign
//  carries) into out, or -1 when the header used is missing or malformed
//  (X-Amz-Date present but malformed: -1; Date is not tried then).
int64_t qn_sigv4_request_time (const char *x_amz_date, size_t x_len, const char *date,
                               size_t date_len, char out [17]);

//  Compares two hex signatures in time independent of where they differ.
bool qn_sigv4_equal (const char *a_hex, const char *b_hex);

#endif
