/*  actors/sink/s3.h - a small S3 client over libcurl (blocking)
    PUT, HEAD, GET, DELETE, ListObjects and multipart upload (create,
    upload part, complete, abort) against any S3-compatible endpoint, path
    style (http://host/bucket/key) or virtual-host style
    (http://bucket.host/key), every request signed with Signature V4
    (wire/sigv4.h, signed payload hash, service "s3").
    Retries: a network error, a 5xx, 429 or a 400 RequestTimeout is retried
    up to `retries` times with exponential backoff (backoff_ms, doubling, at
    most 5 s); other answers are returned to the caller at once.
    Owns one curl easy handle (connections are kept alive); one thread.
    Calls block: the sink actor uses it from its own thread only.
*/
#ifndef QN_ACTORS_SINK_S3_H
#define QN_ACTORS_SINK_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

typedef struct {
    const char *endpoint;       //  "http://127.0.0.1:4568", "https://s3.eu-west-1.amazonaws.com"
    const char *bucket;
    const char *region;         //  "us-east-1"
    const char *access_key;
    const char *secret_key;
    bool path_style;
    uint32_t retries;           //  Extra attempts after the first; 0 = none
    uint32_t backoff_ms;        //  First retry's delay; 0 = 200
    uint32_t timeout_ms;        //  Per request; 0 = 30000
} qn_s3_config_t;

typedef struct {
    long status;                //  HTTP status, 0 on a network error
    qn_buf_t body;              //  Response body (error XML, GET data, list XML)
    char etag [128];            //  ETag header without quotes, "" if none
    int64_t content_length;     //  Content-Length header, -1 if none
    char error [256];           //  Network error or S3 error code + message
    uint32_t attempts;
} qn_s3_result_t;

typedef struct qn_s3 qn_s3_t;

//  NULL (with a message in err) if the endpoint is not http(s)://host[:port]
//  or a field is missing.
qn_s3_t *qn_s3_new (const qn_s3_config_t *config, char *err, size_t err_cap);
void qn_s3_destroy (qn_s3_t **self_p);

void qn_s3_result_init (qn_s3_result_t *res);
void qn_s3_result_free (qn_s3_result_t *res);

//  Each returns 0 when S3 answered 2xx, else -1 (res says why). `res` is
//  reset first.
int qn_s3_put (qn_s3_t *self, const char *key, const void *data, size_t len,
               const char *content_type, qn_s3_result_t *res);
int qn_s3_head (qn_s3_t *self, const char *key, qn_s3_result_t *res);
int qn_s3_get (qn_s3_t *self, const char *key, qn_s3_result_t *res);
int qn_s3_delete (qn_s3_t *self, const char *key, qn_s3_result_t *res);
//  Checks endpoint, bucket and credentials (a one-key listing).
int qn_s3_check_bucket (qn_s3_t *self, qn_s3_result_t *res);
//  ListObjects (v1, marker = after) of one page (1000 keys) from `after` (NULL: the start);
//  appends the keys to `keys` (one per line) and sets *more.
int qn_s3_list (qn_s3_t *self, const char *prefix, const char *after,
                qn_buf_t *keys, bool *more, qn_s3_result_t *res);

int qn_s3_multipart_create (qn_s3_t *self, const char *key, const char *content_type,
                            char *upload_id, size_t cap, qn_s3_result_t *res);
//  On success res->etag holds the part's ETag.
int qn_s3_multipart_part (qn_s3_t *self, const char *key, const char *upload_id,
                          uint32_t part_number, const void *data, size_t len,
                          qn_s3_result_t *res);
//  etags[i] is the ETag of part i + 1.
int qn_s3_multipart_complete (qn_s3_t *self, const char *key, const char *upload_id,
                              char (*etags) [128], uint32_t count, qn_s3_result_t *res);
int qn_s3_multipart_abort (qn_s3_t *self, const char *key, const char *upload_id,
                           qn_s3_result_t *res);

//  The ETag S3 gives an object: hex MD5 of a single PUT's body; of a
//  multipart upload, hex MD5 of the parts' binary MD5s + "-" + part count.
void qn_s3_etag_single (const void *data, size_t len, char out [64]);
void qn_s3_etag_multipart (const void *data, size_t len, size_t part_bytes, char out [64]);
//  True if etag is either of those for data (part_bytes 0: single PUT
//  only). Some S3-compatible servers (s3rver) give a multipart object the
//  MD5 of the whole body.
bool qn_s3_etag_matches (const char *etag, const void *data, size_t len, size_t part_bytes);

#endif
