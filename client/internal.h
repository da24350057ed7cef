/*  client/internal.h - what libqueen's own files share (not installed)
    client.c   the client: options, connection pool, requests, retries,
               error values, escaping, ids
    slot.c     asynchronous request slots driven by a curl multi handle
    decode.c   pure readers of the broker's answers (fuzzed)
    ops.c      the API operations: push, pop, ack, lease, transactions,
               consumer loop, kv, timers
*/
#ifndef QUEEN_CLIENT_INTERNAL_H
#define QUEEN_CLIENT_INTERNAL_H

#include "client/queen.h"
#include "base/buf.h"
#include "wire/json.h"

#include <curl/curl.h>
#include <pthread.h>

typedef struct {
    CURL *easy;
    bool busy;
    char err [CURL_ERROR_SIZE];
} queen__pooled_t;

struct queen_client_s {
    char *url;                  //  Without a trailing slash
    struct curl_slist *headers;
    queen__pooled_t *slots;
    int nslots;
    long timeout_ms;
    long connect_timeout_ms;
    int retries;
    int push_batch;
    pthread_mutex_t lock;
    pthread_cond_t freed;
    CURLM *multi;               //  Async slots (slot.c); created on first use
};


//  One request: method, path, optional body (len bytes), extra time on top
//  of the client's timeout (long-polls). Fills resp (always freed and reset
//  first) and err; returns the outcome after retries.
queen_code_t
    queen__call (queen_client_t *self, const char *method, const char *path,
                 const char *body, size_t len, long extra_ms,
                 queen_response_t *resp, queen_error_t *err);
//  Sets err to code with a printf message (no HTTP status).
queen_code_t
    queen__fail (queen_error_t *err, queen_code_t code, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));
//  Duplicates string token `tok` (NULL when absent, null or not a string).
char *
    queen__str (const qn_json_doc_t *doc, int tok);
//  Duplicates the raw text of any token.
char *
    queen__raw (const qn_json_doc_t *doc, int tok, size_t *len);
//  decode.c. The API's "error" text of a non-2xx answer, else its start.
void
    queen__error_text (const char *body, size_t len, long status, char *out, size_t size);
//  Parses body as JSON whose root has root_type; QUEEN_ERR_PROTOCOL otherwise.
queen_code_t
    queen__parse (qn_json_doc_t *doc, const char *body, size_t len, long status, int root_type,
                  const char *what, queen_error_t *err);
//  Push results into res[0..count) (status, ids, error).
queen_code_t
    queen__decode_push (const char *body, size_t len, queen_push_result_t *res, size_t count,
                        queen_error_t *err);
//  A pop's answer; out is freed again on error.
queen_code_t
    queen__decode_batch (const char *body, size_t len, queen_batch_t *out, queen_error_t *err);
//  An ack-style array of n results: ok[i] per item, REFUSED if any failed.
queen_code_t
    queen__decode_acks (const char *body, size_t len, long status, size_t n, bool *ok,
                        const char *what, queen_error_t *err);
//  A transaction's answer: REFUSED with its error when success is false.
queen_code_t
    queen__decode_txn (const char *body, size_t len, long status, queen_error_t *err);
//  The code of an HTTP status (2xx = QUEEN_OK).
queen_code_t
    queen__code_for_status (long status);
int
    queen__push_batch (const queen_client_t *self);

#endif
