/*  actors/sink/s3.c - a small S3 client over libcurl (see s3.h)
*/
#include "actors/sink/s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "wire/http_api.h"
#include "wire/sigv4.h"

struct qn_s3 {
    CURL *easy;
    char *scheme;               //  "http" / "https"
    char *host;                 //  "127.0.0.1:4568"
    char *bucket, *region, *access_key, *secret_key;
    bool path_style;
    uint32_t retries, backoff_ms, timeout_ms;
};

qn_s3_t *
qn_s3_new (const qn_s3_config_t *config, char *err, size_t err_cap)
{
    const char *ep = config->endpoint ? config->endpoint : "";
    const char *host = NULL;
    if (strncmp (ep, "http://", 7) == 0)
        host = ep + 7;
    else
    if (strncmp (ep, "https://", 8) == 0)
        host = ep + 8;
    size_t host_len = host ? strcspn (host, "/") : 0;
    if (!host || host_len == 0 || (host [host_len] && strcmp (host + host_len, "/") != 0)) {
        snprintf (err, err_cap, "S3_ENDPOINT must be http(s)://host[:port] (got \"%s\")", ep);
        return NULL;
    }
    if (!config->bucket || !*config->bucket) {
        snprintf (err, err_cap, "S3_BUCKET is required");
        return NULL;
    }
    if (!config->access_key || !*config->access_key || !config->secret_key || !*config->secret_key) {
        snprintf (err, err_cap, "S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY are required");
        return NULL;
    }
    qn_s3_t *self = qn_zalloc (sizeof *self);
    self->easy = curl_easy_init ();
    if (!self->easy)
        abort ();
    self->scheme = qn_strndup (ep, (size_t) (host - ep) - 3);
    self->host = qn_strndup (host, host_len);
    self->bucket = qn_strdup (config->bucket);
    self->region = qn_strdup (config->region && *config->region ? config->region : "us-east-1");
    self->access_key = qn_strdup (config->access_key);
    self->secret_key = qn_strdup (config->secret_key);
    self->path_style = config->path_style;
    self->retries = config->retries;
    self->backoff_ms = config->backoff_ms ? config->backoff_ms : 200;
    self->timeout_ms = config->timeout_ms ? config->timeout_ms : 30000;
    return self;
}

void
qn_s3_destroy (qn_s3_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    qn_s3_t *self = *self_p;
    curl_easy_cleanup (self->easy);
    free (self->scheme);
    free (self->host);
    free (self->bucket);
    free (self->region);
    free (self->access_key);
    free (self->secret_key);
    free (self);
    *self_p = NULL;
}

void
qn_s3_result_init (qn_s3_result_t *res)
{
    memset (res, 0, sizeof *res);
    res->content_length = -1;
}

void
qn_s3_result_free (qn_s3_result_t *res)
{
    qn_buf_free (&res->body);
}

static void
s_result_reset (qn_s3_result_t *res)
{
    res->status = 0;
    qn_buf_reset (&res->body);
    res->etag [0] = 0;
    res->content_length = -1;
    res->error [0] = 0;
}

//  ------------------------------------------------------------------------
//  Helpers

static void
s_uri_encode (qn_buf_t *out, const char *s, bool keep_slash)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
        ||  c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/'))
            qn_buf_putc (out, (char) c);
        else
            qn_buf_printf (out, "%%%02X", c);
    }
}

static void
s_md5 (const void *data, size_t len, unsigned char out [16])
{
    unsigned int n = 16;
    EVP_Digest (data, len, out, &n, EVP_md5 (), NULL);
}

static void
s_hex (const unsigned char *b, size_t n, char *out)
{
    static const char digits [] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out [2 * i] = digits [b [i] >> 4];
        out [2 * i + 1] = digits [b [i] & 15];
    }
    out [2 * n] = 0;
}

void
qn_s3_etag_single (const void *data, size_t len, char out [64])
{
    unsigned char md [16];
    s_md5 (data, len, md);
    s_hex (md, 16, out);
}

bool
qn_s3_etag_matches (const char *etag, const void *data, size_t len, size_t part_bytes)
{
    char want [64];
    qn_s3_etag_single (data, len, want);
    if (strcmp (etag, want) == 0)
        return true;
    if (part_bytes == 0)
        return false;
    qn_s3_etag_multipart (data, len, part_bytes, want);
    return strcmp (etag, want) == 0;
}

void
qn_s3_etag_multipart (const void *data, size_t len, size_t part_bytes, char out [64])
{
    size_t parts = len ? (len + part_bytes - 1) / part_bytes : 1;
    unsigned char *mds = qn_malloc (parts * 16);
    for (size_t i = 0; i < parts; i++) {
        size_t off = i * part_bytes;
        size_t n = len - off < part_bytes ? len - off : part_bytes;
        s_md5 ((const char *) data + off, n, mds + 16 * i);
    }
    unsigned char md [16];
    s_md5 (mds, parts * 16, md);
    free (mds);
    s_hex (md, 16, out);
    snprintf (out + 32, 32, "-%zu", parts);
}

//  Text of the first <tag>...</tag> in xml, with the five XML entities
//  decoded, appended to out. Returns a pointer past the element or NULL.
static const char *
s_xml_text (const char *xml, const char *tag, qn_buf_t *out)
{
    char open [64], close [64];
    snprintf (open, sizeof open, "<%s>", tag);
    snprintf (close, sizeof close, "</%s>", tag);
    const char *a = strstr (xml, open);
    if (!a)
        return NULL;
    a += strlen (open);
    const char *b = strstr (a, close);
    if (!b)
        return NULL;
    static const struct { const char *ent; char c; } ents [] = {
        { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
        { NULL, 0 }
    };
    for (const char *p = a; p < b; p++) {
        char c = *p;
        if (c == '&')
            for (int i = 0; ents [i].ent; i++) {
                size_t n = strlen (ents [i].ent);
                if ((size_t) (b - p) >= n && memcmp (p, ents [i].ent, n) == 0) {
                    c = ents [i].c;
                    p += n - 1;
                    break;
                }
            }
        qn_buf_putc (out, c);
    }
    return b + strlen (close);
}

typedef struct {
    qn_s3_result_t *res;
} hdr_ctx_t;

static size_t
s_on_body (char *ptr, size_t size, size_t nmemb, void *arg)
{
    qn_s3_result_t *res = arg;
    qn_buf_append (&res->body, ptr, size * nmemb);
    return size * nmemb;
}

static size_t
s_on_header (char *ptr, size_t size, size_t nmemb, void *arg)
{
    qn_s3_result_t *res = arg;
    size_t n = size * nmemb;
    if (n > 5 && strncasecmp (ptr, "ETag:", 5) == 0) {
        const char *v = ptr + 5;
        size_t len = n - 5;
        while (len && (*v == ' ' || *v == '"')) {
            v++;
            len--;
        }
        while (len && (v [len - 1] == '\r' || v [len - 1] == '\n' || v [len - 1] == '"' || v [len - 1] == ' '))
            len--;
        if (len < sizeof res->etag) {
            memcpy (res->etag, v, len);
            res->etag [len] = 0;
        }
    }
    else
    if (n > 15 && strncasecmp (ptr, "Content-Length:", 15) == 0)
        res->content_length = strtoll (ptr + 15, NULL, 10);
    return n;
}

static bool
s_retryable (const qn_s3_result_t *res)
{
    if (res->status == 0 || res->status >= 500 || res->status == 429)
        return true;
    return res->status == 400 && strstr (res->error, "RequestTimeout") != NULL;
}

//  One signed request, retried as the header says. key NULL: the bucket.
static int
s_request (qn_s3_t *self, const char *method, const char *key, const char *query,
           const void *body, size_t body_len, const char *content_type, qn_s3_result_t *res)
{
    qn_buf_t path = QN_BUF_INIT, host = QN_BUF_INIT, url = QN_BUF_INIT;
    if (self->path_style) {
        qn_buf_puts (&host, self->host);
        qn_buf_putc (&path, '/');
        s_uri_encode (&path, self->bucket, false);
        if (key) {
            qn_buf_putc (&path, '/');
            s_uri_encode (&path, key, true);
        }
    }
    else {
        qn_buf_printf (&host, "%s.%s", self->bucket, self->host);
        qn_buf_putc (&path, '/');
        if (key)
            s_uri_encode (&path, key, true);
    }
    qn_buf_printf (&url, "%s://%s%s", self->scheme, host.data, path.data);
    if (query && *query)
        qn_buf_printf (&url, "?%s", query);
    char payload_hash [65];
    qn_sigv4_sha256_hex (body ? body : "", body_len, payload_hash);
    char md5_b64 [32] = "";
    if (body && body_len) {
        unsigned char md [16];
        s_md5 (body, body_len, md);
        EVP_EncodeBlock ((unsigned char *) md5_b64, md, 16);
    }

    int rc = -1;
    uint32_t delay_ms = self->backoff_ms;
    for (uint32_t attempt = 0; ; attempt++) {
        s_result_reset (res);
        res->attempts = attempt + 1;
        char amz_date [32];
        time_t now = time (NULL);
        struct tm tm;
        gmtime_r (&now, &tm);
        strftime (amz_date, sizeof amz_date, "%Y%m%dT%H%M%SZ", &tm);
        qn_http_header_t hdrs [3] = {
            { "host", 4, host.data, host.len },
            { "x-amz-content-sha256", 20, payload_hash, 64 },
            { "x-amz-date", 10, amz_date, strlen (amz_date) },
        };
        qn_sigv4_request_t req = {
            .method = method, .path = path.data, .query = query ? query : "",
            .headers = hdrs, .header_count = 3,
            .signed_headers = "host;x-amz-content-sha256;x-amz-date",
            .payload_hash = payload_hash, .amz_date = amz_date,
            .region = self->region, .service = "s3", .s3 = true
        };
        char auth [1024];
        if (qn_sigv4_authorization (&req, self->access_key, self->secret_key, auth, sizeof auth) != 0) {
            snprintf (res->error, sizeof res->error, "Authorization header too long");
            break;
        }
        struct curl_slist *list = NULL;
        char line [1200];
        snprintf (line, sizeof line, "Host: %s", host.data);
        list = curl_slist_append (list, line);
        snprintf (line, sizeof line, "x-amz-date: %s", amz_date);
        list = curl_slist_append (list, line);
        snprintf (line, sizeof line, "x-amz-content-sha256: %s", payload_hash);
        list = curl_slist_append (list, line);
        snprintf (line, sizeof line, "Authorization: %s", auth);
        list = curl_slist_append (list, line);
        snprintf (line, sizeof line, "Content-Type: %s", content_type ? content_type : "");
        list = curl_slist_append (list, line);
        if (md5_b64 [0]) {
            snprintf (line, sizeof line, "Content-MD5: %s", md5_b64);
            list = curl_slist_append (list, line);
        }
        list = curl_slist_append (list, "Expect:");

        CURL *e = self->easy;
        curl_easy_reset (e);
        curl_easy_setopt (e, CURLOPT_URL, url.data);
        curl_easy_setopt (e, CURLOPT_HTTPHEADER, list);
        curl_easy_setopt (e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt (e, CURLOPT_TIMEOUT_MS, (long) self->timeout_ms);
        curl_easy_setopt (e, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        curl_easy_setopt (e, CURLOPT_WRITEFUNCTION, s_on_body);
        curl_easy_setopt (e, CURLOPT_WRITEDATA, res);
        curl_easy_setopt (e, CURLOPT_HEADERFUNCTION, s_on_header);
        curl_easy_setopt (e, CURLOPT_HEADERDATA, res);
        if (strcmp (method, "HEAD") == 0)
            curl_easy_setopt (e, CURLOPT_NOBODY, 1L);
        else
        if (strcmp (method, "GET") == 0)
            curl_easy_setopt (e, CURLOPT_HTTPGET, 1L);
        else {
            curl_easy_setopt (e, CURLOPT_CUSTOMREQUEST, method);
            if (strcmp (method, "DELETE") != 0) {
                curl_easy_setopt (e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) body_len);
                curl_easy_setopt (e, CURLOPT_POSTFIELDS, body ? (const char *) body : "");
            }
        }
        CURLcode cc = curl_easy_perform (e);
        curl_slist_free_all (list);
        if (cc != CURLE_OK)
            snprintf (res->error, sizeof res->error, "%s", curl_easy_strerror (cc));
        else {
            curl_easy_getinfo (e, CURLINFO_RESPONSE_CODE, &res->status);
            if (res->status >= 300 || (res->body.len && strstr (res->body.data, "<Error>"))) {
                qn_buf_t code = QN_BUF_INIT, msg = QN_BUF_INIT;
                if (res->body.len) {
                    s_xml_text (res->body.data, "Code", &code);
                    s_xml_text (res->body.data, "Message", &msg);
                }
                snprintf (res->error, sizeof res->error, "HTTP %ld%s%s%s%s", res->status,
                          code.len ? " " : "", code.len ? code.data : "",
                          msg.len ? ": " : "", msg.len ? msg.data : "");
                qn_buf_free (&code);
                qn_buf_free (&msg);
                if (res->status < 300)
                    res->status = 500;      //  200 with an error body (complete)
            }
            else {
                rc = 0;
                break;
            }
        }
        if (!s_retryable (res) || attempt >= self->retries)
            break;
        struct timespec ts = { delay_ms / 1000, (long) (delay_ms % 1000) * 1000000L };
        nanosleep (&ts, NULL);
        delay_ms = delay_ms * 2 > 5000 ? 5000 : delay_ms * 2;
    }
    qn_buf_free (&path);
    qn_buf_free (&host);
    qn_buf_free (&url);
    return rc;
}

//  ------------------------------------------------------------------------
//  Operations

int
qn_s3_put (qn_s3_t *self, const char *key, const void *data, size_t len,
           const char *content_type, qn_s3_result_t *res)
{
    return s_request (self, "PUT", key, "", data, len,
                      content_type ? content_type : "application/octet-stream", res);
}

int
qn_s3_head (qn_s3_t *self, const char *key, qn_s3_result_t *res)
{
    return s_request (self, "HEAD", key, "", NULL, 0, NULL, res);
}

int
qn_s3_get (qn_s3_t *self, const char *key, qn_s3_result_t *res)
{
    return s_request (self, "GET", key, "", NULL, 0, NULL, res);
}

int
qn_s3_delete (qn_s3_t *self, const char *key, qn_s3_result_t *res)
{
    return s_request (self, "DELETE", key, "", NULL, 0, NULL, res);
}

int
qn_s3_check_bucket (qn_s3_t *self, qn_s3_result_t *res)
{
    //  A one-key listing rather than HEAD: a refusal then carries S3's
    //  error code (InvalidAccessKeyId, SignatureDoesNotMatch, NoSuchBucket).
    return s_request (self, "GET", NULL, "max-keys=1", NULL, 0, NULL, res);
}

int
qn_s3_list (qn_s3_t *self, const char *prefix, const char *after,
            qn_buf_t *keys, bool *more, qn_s3_result_t *res)
{
    qn_buf_t q = QN_BUF_INIT;
    //  ListObjects (v1) with marker: every S3-compatible server has it
    //  (s3rver's v2 continuation tokens fail on current Node).
    qn_buf_puts (&q, "max-keys=1000");
    if (prefix && *prefix) {
        qn_buf_puts (&q, "&prefix=");
        s_uri_encode (&q, prefix, false);
    }
    if (after && *after) {
        qn_buf_puts (&q, "&marker=");
        s_uri_encode (&q, after, false);
    }
    int rc = s_request (self, "GET", NULL, q.data, NULL, 0, NULL, res);
    qn_buf_free (&q);
    *more = false;
    if (rc != 0)
        return rc;
    const char *p = res->body.data ? res->body.data : "";
    for (;;) {
        const char *c = strstr (p, "<Contents>");
        if (!c)
            break;
        const char *next = s_xml_text (c, "Key", keys);
        if (!next)
            break;
        qn_buf_putc (keys, '\n');
        p = next;
    }
    qn_buf_t trunc = QN_BUF_INIT;
    if (res->body.data && s_xml_text (res->body.data, "IsTruncated", &trunc))
        *more = trunc.len && strcmp (trunc.data, "true") == 0;
    qn_buf_free (&trunc);
    return 0;
}

int
qn_s3_multipart_create (qn_s3_t *self, const char *key, const char *content_type,
                        char *upload_id, size_t cap, qn_s3_result_t *res)
{
    if (s_request (self, "POST", key, "uploads", NULL, 0,
                   content_type ? content_type : "application/octet-stream", res) != 0)
        return -1;
    qn_buf_t id = QN_BUF_INIT;
    int rc = -1;
    if (res->body.data && s_xml_text (res->body.data, "UploadId", &id) && id.len && id.len < cap) {
        memcpy (upload_id, id.data, id.len + 1);
        rc = 0;
    }
    else
        snprintf (res->error, sizeof res->error, "no UploadId in the answer");
    qn_buf_free (&id);
    return rc;
}

int
qn_s3_multipart_part (qn_s3_t *self, const char *key, const char *upload_id,
                      uint32_t part_number, const void *data, size_t len,
                      qn_s3_result_t *res)
{
    qn_buf_t q = QN_BUF_INIT;
    qn_buf_printf (&q, "partNumber=%u&uploadId=", part_number);
    s_uri_encode (&q, upload_id, false);
    int rc = s_request (self, "PUT", key, q.data, data, len, "application/octet-stream", res);
    qn_buf_free (&q);
    if (rc == 0 && !res->etag [0]) {
        snprintf (res->error, sizeof res->error, "no ETag for part %u", part_number);
        return -1;
    }
    return rc;
}

int
qn_s3_multipart_complete (qn_s3_t *self, const char *key, const char *upload_id,
                          char (*etags) [128], uint32_t count, qn_s3_result_t *res)
{
    qn_buf_t q = QN_BUF_INIT, body = QN_BUF_INIT;
    qn_buf_puts (&q, "uploadId=");
    s_uri_encode (&q, upload_id, false);
    qn_buf_puts (&body, "<CompleteMultipartUpload>");
    for (uint32_t i = 0; i < count; i++)
        qn_buf_printf (&body, "<Part><PartNumber>%u</PartNumber><ETag>\"%s\"</ETag></Part>",
                       i + 1, etags [i]);
    qn_buf_puts (&body, "</CompleteMultipartUpload>");
    int rc = s_request (self, "POST", key, q.data, body.data, body.len, "application/xml", res);
    qn_buf_free (&q);
    qn_buf_free (&body);
    return rc;
}

int
qn_s3_multipart_abort (qn_s3_t *self, const char *key, const char *upload_id,
                       qn_s3_result_t *res)
{
    qn_buf_t q = QN_BUF_INIT;
    qn_buf_puts (&q, "uploadId=");
    s_uri_encode (&q, upload_id, false);
    int rc = s_request (self, "DELETE", key, q.data, NULL, 0, NULL, res);
    qn_buf_free (&q);
    return rc;
}
