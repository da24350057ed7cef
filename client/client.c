/*  client/client.c - libqueen: the client, its connection pool, requests
    A client holds `pool_size` libcurl easy handles; each keeps its own
    keep-alive HTTP/1.1 connection and is reused request after request.
    A call takes a free handle (waiting on a condition variable when all
    are busy), runs the request synchronously, retries after transport
    errors, 5xx, 408 and 429 with backoff (50 ms doubling, same bytes),
    and gives the handle back.
    Owns      the easy handles, the shared header list, a copy of the URL
    Failure   every outcome is a queen_code_t plus the HTTP status, the
              API's "error" text or curl's message, and the raw body
*/
#include "client/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static pthread_once_t s_curl_once = PTHREAD_ONCE_INIT;

static void
s_curl_init (void)
{
    curl_global_init (CURL_GLOBAL_DEFAULT);
}

const char *
queen_strerror (queen_code_t code)
{
    switch (code) {
        case QUEEN_OK:               return "ok";
        case QUEEN_ERR_ARG:          return "invalid argument";
        case QUEEN_ERR_CONNECT:      return "connection error";
        case QUEEN_ERR_TIMEOUT:      return "timeout";
        case QUEEN_ERR_BAD_REQUEST:  return "bad request";
        case QUEEN_ERR_UNAUTHORIZED: return "unauthorized";
        case QUEEN_ERR_NOT_FOUND:    return "not found";
        case QUEEN_ERR_CONFLICT:     return "conflict";
        case QUEEN_ERR_TOO_LARGE:    return "too large";
        case QUEEN_ERR_BUSY:         return "busy";
        case QUEEN_ERR_SERVER:       return "server error";
        case QUEEN_ERR_HTTP:         return "http error";
        case QUEEN_ERR_REFUSED:      return "refused";
        case QUEEN_ERR_PROTOCOL:     return "protocol error";
    }
    return "unknown error";
}

void
queen_response_free (queen_response_t *resp)
{
    if (!resp)
        return;
    free (resp->body);
    memset (resp, 0, sizeof *resp);
}

queen_client_t *
queen_new (const queen_options_t *opts, queen_error_t *err)
{
    if (!opts || !opts->url || strncmp (opts->url, "http", 4)) {
        queen__fail (err, QUEEN_ERR_ARG, "url must be an http:// or https:// URL");
        return NULL;
    }
    if (opts->push_batch < 0 || opts->push_batch > 10000 || opts->pool_size < 0
        || opts->pool_size > 1024 || opts->retries < -1) {
        queen__fail (err, QUEEN_ERR_ARG, "pool_size 0..1024, retries >= -1, push_batch 0..10000");
        return NULL;
    }
    pthread_once (&s_curl_once, s_curl_init);
    queen_client_t *self = calloc (1, sizeof *self);
    if (!self) {
        queen__fail (err, QUEEN_ERR_ARG, "out of memory");
        return NULL;
    }
    self->url = strdup (opts->url);
    size_t ul = strlen (self->url);
    while (ul > 0 && self->url [ul - 1] == '/')
        self->url [--ul] = 0;
    self->nslots = opts->pool_size ? opts->pool_size : 4;
    self->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
    self->connect_timeout_ms = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 5000;
    self->retries = opts->retries < 0 ? 0 : opts->retries ? opts->retries : 2;
    self->push_batch = opts->push_batch ? opts->push_batch : 1000;
    self->headers = curl_slist_append (NULL, "Content-Type: application/json");
    self->headers = curl_slist_append (self->headers, "Expect:");
    if (opts->token && *opts->token) {
        qn_buf_t auth = QN_BUF_INIT;
        qn_buf_printf (&auth, "Authorization: Bearer %s", opts->token);
        self->headers = curl_slist_append (self->headers, auth.data);
        qn_buf_free (&auth);
    }
    self->slots = calloc ((size_t) self->nslots, sizeof *self->slots);
    pthread_mutex_init (&self->lock, NULL);
    pthread_cond_init (&self->freed, NULL);
    return self;
}

void
queen_destroy (queen_client_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    queen_client_t *self = *self_p;
    for (int i = 0; i < self->nslots; i++)
        if (self->slots [i].easy)
            curl_easy_cleanup (self->slots [i].easy);
    if (self->multi)
        curl_multi_cleanup (self->multi);
    free (self->slots);
    curl_slist_free_all (self->headers);
    pthread_mutex_destroy (&self->lock);
    pthread_cond_destroy (&self->freed);
    free (self->url);
    free (self);
    *self_p = NULL;
}

const char *
queen_url (const queen_client_t *self)
{
    return self->url;
}

int
queen__push_batch (const queen_client_t *self)
{
    return self->push_batch;
}

static size_t
s_on_data (char *ptr, size_t size, size_t nmemb, void *arg)
{
    qn_buf_append ((qn_buf_t *) arg, ptr, size * nmemb);
    return size * nmemb;
}

static queen__pooled_t *
s_acquire (queen_client_t *self)
{
    pthread_mutex_lock (&self->lock);
    queen__pooled_t *slot = NULL;
    while (!slot) {
        for (int i = 0; i < self->nslots && !slot; i++)
            if (!self->slots [i].busy)
                slot = &self->slots [i];
        if (!slot)
            pthread_cond_wait (&self->freed, &self->lock);
    }
    slot->busy = true;
    pthread_mutex_unlock (&self->lock);
    if (!slot->easy) {
        slot->easy = curl_easy_init ();
        curl_easy_setopt (slot->easy, CURLOPT_HTTPHEADER, self->headers);
        curl_easy_setopt (slot->easy, CURLOPT_WRITEFUNCTION, s_on_data);
        curl_easy_setopt (slot->easy, CURLOPT_ERRORBUFFER, slot->err);
        curl_easy_setopt (slot->easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt (slot->easy, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt (slot->easy, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt (slot->easy, CURLOPT_CONNECTTIMEOUT_MS, self->connect_timeout_ms);
        curl_easy_setopt (slot->easy, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
    }
    return slot;
}

static void
s_release (queen_client_t *self, queen__pooled_t *slot)
{
    pthread_mutex_lock (&self->lock);
    slot->busy = false;
    pthread_cond_signal (&self->freed);
    pthread_mutex_unlock (&self->lock);
}

queen_code_t
queen__code_for_status (long status)
{
    if (status >= 200 && status < 300)
        return QUEEN_OK;
    switch (status) {
        case 400: return QUEEN_ERR_BAD_REQUEST;
        case 401: case 403: return QUEEN_ERR_UNAUTHORIZED;
        case 404: return QUEEN_ERR_NOT_FOUND;
        case 408: return QUEEN_ERR_TIMEOUT;
        case 409: return QUEEN_ERR_CONFLICT;
        case 413: return QUEEN_ERR_TOO_LARGE;
        case 429: return QUEEN_ERR_BUSY;
        default: break;
    }
    return status >= 500 ? QUEEN_ERR_SERVER : QUEEN_ERR_HTTP;
}

static bool
s_retryable (queen_code_t code, long status)
{
    return code == QUEEN_ERR_CONNECT || code == QUEEN_ERR_TIMEOUT || status >= 500
        || status == 429;
}

queen_code_t
queen__call (queen_client_t *self, const char *method, const char *path,
             const char *body, size_t len, long extra_ms,
             queen_response_t *resp, queen_error_t *err)
{
    queen_response_t local = { 0 };
    if (!resp)
        resp = &local;
    queen_response_free (resp);
    queen_error_t local_err = { 0 };
    if (!err)
        err = &local_err;
    queen_error_clear (err);
    if (!self || !method || !path || path [0] != '/')
        return queen__fail (err, QUEEN_ERR_ARG, "a client, a method and a path starting with / are required");

    qn_buf_t url = QN_BUF_INIT;
    qn_buf_printf (&url, "%s%s", self->url, path);
    qn_buf_t data = QN_BUF_INIT;
    queen_code_t code = QUEEN_OK;
    long backoff_ms = 50;
    queen__pooled_t *slot = s_acquire (self);
    CURL *e = slot->easy;
    for (int attempt = 0; ; attempt++) {
        qn_buf_reset (&data);
        slot->err [0] = 0;
        curl_easy_setopt (e, CURLOPT_URL, url.data);
        curl_easy_setopt (e, CURLOPT_WRITEDATA, &data);
        curl_easy_setopt (e, CURLOPT_TIMEOUT_MS, self->timeout_ms + extra_ms);
        curl_easy_setopt (e, CURLOPT_CUSTOMREQUEST, NULL);
        if (body || strcmp (method, "GET")) {
            curl_easy_setopt (e, CURLOPT_POST, 1L);
            curl_easy_setopt (e, CURLOPT_POSTFIELDS, body ? body : "");
            curl_easy_setopt (e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) (body ? len : 0));
            if (strcmp (method, "POST"))
                curl_easy_setopt (e, CURLOPT_CUSTOMREQUEST, method);
        }
        else
            curl_easy_setopt (e, CURLOPT_HTTPGET, 1L);
        CURLcode cc = curl_easy_perform (e);
        long status = 0;
        if (cc == CURLE_OK) {
            curl_easy_getinfo (e, CURLINFO_RESPONSE_CODE, &status);
            code = queen__code_for_status (status);
        }
        else
            code = cc == CURLE_OPERATION_TIMEDOUT ? QUEEN_ERR_TIMEOUT : QUEEN_ERR_CONNECT;
        if (attempt < self->retries && s_retryable (code, status)) {
            struct timespec ts = { backoff_ms / 1000, (backoff_ms % 1000) * 1000000L };
            nanosleep (&ts, NULL);
            backoff_ms = backoff_ms * 2 > 2000 ? 2000 : backoff_ms * 2;
            continue;
        }
        resp->status = status;
        resp->len = data.len;
        resp->body = data.len ? qn_buf_detach (&data, NULL) : NULL;
        err->code = code;
        err->http_status = status;
        if (cc != CURLE_OK)
            snprintf (err->message, sizeof err->message, "%s %s: %s", method, url.data,
                      slot->err [0] ? slot->err : curl_easy_strerror (cc));
        else if (code != QUEEN_OK) {
            queen__error_text (resp->body, resp->len, status, err->message, sizeof err->message);
            err->body = resp->body ? strdup (resp->body) : NULL;
        }
        break;
    }
    s_release (self, slot);
    qn_buf_free (&data);
    qn_buf_free (&url);
    queen_response_free (&local);
    return code;
}

queen_code_t
queen_request (queen_client_t *self, const char *method, const char *path,
               const char *body, queen_response_t *resp, queen_error_t *err)
{
    return queen__call (self, method, path, body, body ? strlen (body) : 0, 0, resp, err);
}

queen_code_t
queen_health (queen_client_t *self, queen_error_t *err)
{
    return queen__call (self, "GET", "/health", NULL, 0, 0, NULL, err);
}

char *
queen_escape (const char *s)
{
    static const char hex [] = "0123456789ABCDEF";
    if (!s)
        s = "";
    size_t n = strlen (s);
    char *out = malloc (n * 3 + 1);
    if (!out)
        return NULL;
    char *o = out;
    for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')
            || *p == '-' || *p == '_' || *p == '.' || *p == '~')
            *o++ = (char) *p;
        else {
            *o++ = '%';
            *o++ = hex [*p >> 4];
            *o++ = hex [*p & 15];
        }
    }
    *o = 0;
    return out;
}

void
queen_uuid7 (char out [37])
{
    uint8_t b [16];
    if (getrandom (b, sizeof b, 0) != (ssize_t) sizeof b) {
        //  Not expected on Linux; fall back on the clock and the address
        struct timespec ts;
        clock_gettime (CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t) ts.tv_nsec ^ ((uint64_t) (uintptr_t) out << 20);
        for (int i = 0; i < 16; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            b [i] = (uint8_t) x;
        }
    }
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
    for (int i = 0; i < 6; i++)
        b [i] = (uint8_t) (ms >> (40 - 8 * i));
    b [6] = (uint8_t) (0x70 | (b [6] & 0x0f));
    b [8] = (uint8_t) (0x80 | (b [8] & 0x3f));
    snprintf (out, 37,
              "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
              b [0], b [1], b [2], b [3], b [4], b [5], b [6], b [7],
              b [8], b [9], b [10], b [11], b [12], b [13], b [14], b [15]);
}
