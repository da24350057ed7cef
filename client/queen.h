/*  client/queen.h - libqueen, the C client library of the Queen broker
    The one public header of build/libqueen-client.a / .so. It speaks the
    broker's HTTP API (docs/http-api.md) over a pool of keep-alive libcurl
    connections and turns answers into plain C values. docs/queenctl.md
    describes every function with examples.

    Conventions
      * Every call that talks to the broker returns a queen_code_t
        (QUEEN_OK = 0) and fills the optional queen_error_t with the HTTP
        status, the API's own "error" text (or the transport error) and the
        raw answer body.
      * Payloads, kv values and any "JSON" argument are JSON text, sent
        byte-for-byte; received ones come back as the broker's exact bytes.
      * Strings in result structs are owned by the struct and freed by its
        *_free function. Inputs are only borrowed for the call.
      * A client may be shared by threads: each call takes one connection
        from the pool (waiting when all are busy) and gives it back.
      * Requests are retried (same bytes) after a transport error, 5xx, 408
        or 429, `retries` times with backoff; pushes carry transaction ids,
        so a retried push is deduplicated by the broker.
*/
#ifndef QUEEN_CLIENT_H
#define QUEEN_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QUEEN_OK = 0,
    QUEEN_ERR_ARG,              //  Bad argument, caught before any request
    QUEEN_ERR_CONNECT,          //  Could not reach the broker (refused, DNS, reset)
    QUEEN_ERR_TIMEOUT,          //  No answer in time
    QUEEN_ERR_BAD_REQUEST,      //  400: the API's error names the field
    QUEEN_ERR_UNAUTHORIZED,     //  401 / 403
    QUEEN_ERR_NOT_FOUND,        //  404
    QUEEN_ERR_CONFLICT,         //  409 (kv version, timer taken, ...)
    QUEEN_ERR_TOO_LARGE,        //  413
    QUEEN_ERR_BUSY,             //  429 (queue full), after retries
    QUEEN_ERR_SERVER,           //  5xx, after retries
    QUEEN_ERR_HTTP,             //  Any other non-2xx status
    QUEEN_ERR_REFUSED,          //  2xx, but the operation says success:false
    QUEEN_ERR_PROTOCOL          //  The answer is not what the API promises
} queen_code_t;

typedef struct {
    queen_code_t code;
    long http_status;           //  0 when no HTTP answer came
    char message [512];         //  The API's "error" text, or the transport error
    char *body;                 //  Raw answer body (NUL-terminated) or NULL; owned,
                                //  freed by queen_error_clear and the next call
} queen_error_t;

//  "connection error", "not found", ...
const char *
    queen_strerror (queen_code_t code);
//  Frees err->body and resets the struct (safe on a zeroed struct).
void
    queen_error_clear (queen_error_t *err);

//  ---------------------------------------------------------------- client
typedef struct {
    const char *url;            //  Base URL, e.g. "http://127.0.0.1:6632" (required)
    const char *token;          //  Bearer token, or NULL
    int pool_size;              //  Connections kept alive; default 4
    long timeout_ms;            //  Per request (a long-poll adds its own wait); default 30000
    long connect_timeout_ms;    //  Default 5000
    int retries;                //  Extra attempts on transport error/5xx/408/429;
                                //  0 = default 2, -1 = none
    int push_batch;             //  Items per push request; default 1000 (at most 10000)
} queen_options_t;

typedef struct queen_client_s queen_client_t;

//  NULL with err filled (QUEEN_ERR_ARG) when the options are unusable.
queen_client_t *
    queen_new (const queen_options_t *opts, queen_error_t *err);
void
    queen_destroy (queen_client_t **self_p);
const char *
    queen_url (const queen_client_t *self);

//  ------------------------------------------------------- raw requests
typedef struct {
    long status;                //  HTTP status
    char *body;                 //  NUL-terminated, owned; NULL when empty
    size_t len;
} queen_response_t;

void
    queen_response_free (queen_response_t *resp);
//  Any API call: method "GET", "POST", "PUT" or "DELETE"; path starts with
//  "/" and is sent as given (use queen_escape for path segments); body is
//  JSON text or NULL. A non-2xx answer is an error (resp still holds it).
queen_code_t
    queen_request (queen_client_t *self, const char *method, const char *path,
                   const char *body, queen_response_t *resp, queen_error_t *err);
//  Percent-encodes one path segment or query value; free() the result.
char *
    queen_escape (const char *s);
//  GET /health: QUEEN_OK when the broker answers 200.
queen_code_t
    queen_health (queen_client_t *self, queen_error_t *err);

//  ---------------------------------------------------------------- push
typedef struct {
    const char *queue;          //  Required
    const char *partition;      //  NULL = "Default"
    const char *payload;        //  JSON text; NULL = null
    const char *transaction_id; //  NULL = a fresh UUIDv7 made by the library
    const char *trace_id;       //  UUID or NULL
} queen_item_t;

typedef struct {
    char *status;               //  "queued", "duplicate", "buffered" or "failed"
    char *transaction_id;       //  The id used (the library's when none was given)
    char *message_id;           //  NULL when buffered or failed
    char *partition_id;
    char *error;                //  NULL unless failed
} queen_push_result_t;

//  Pushes n items in requests of at most push_batch items, in order.
//  results (may be NULL) gets n entries, freed by queen_push_results_free.
//  On an error after some requests succeeded, *done_out (may be NULL) says
//  how many items were confirmed.
queen_code_t
    queen_push (queen_client_t *self, const queen_item_t *items, size_t n,
                queen_push_result_t **results, size_t *done_out, queen_error_t *err);
void
    queen_push_results_free (queen_push_result_t *results, size_t n);
//  Writes a fresh UUIDv7 (36 chars + NUL) into out.
void
    queen_uuid7 (char out [37]);

//  ---------------------------------------------------------------- pop
typedef struct {
    const char *partition;      //  Pop this partition only; NULL = any
    const char *consumer_group; //  NULL = queue mode
    int batch;                  //  Default 1
    int partitions;             //  Partitions one pop may claim; 0 = broker default
    bool wait;                  //  Long-poll
    long timeout_ms;            //  Long-poll wait; 0 = broker default
    const char *subscription_mode;  //  "all", "new", "now" or a timestamp; NULL
    const char *subscription_from;
    bool auto_ack;
} queen_pop_opts_t;

typedef struct {
    char *id;
    char *transaction_id;
    char *partition_id;
    char *partition;
    char *lease_id;
    char *consumer_group;       //  NULL in queue mode
    char *trace_id;             //  NULL when none
    char *created_at;
    char *data;                 //  The payload's JSON text, byte-for-byte
    size_t data_len;
} queen_message_t;

typedef struct {
    char *queue;
    char *lease_id;             //  NULL / "" with auto_ack
    queen_message_t *messages;
    size_t count;               //  0 when nothing came (204)
    char *body;                 //  The raw answer
} queen_batch_t;

//  Pops from `queue`. Nothing to pop (204) is QUEEN_OK with count 0.
queen_code_t
    queen_pop (queen_client_t *self, const char *queue, const queen_pop_opts_t *opts,
               queen_batch_t *out, queen_error_t *err);
void
    queen_batch_free (queen_batch_t *batch);

//  ---------------------------------------------------------------- ack
typedef struct {
    const char *transaction_id; //  Required
    const char *partition_id;   //  Required
    const char *lease_id;       //  NULL = no lease check
    const char *status;         //  NULL = "completed"; or "failed"
    const char *error;          //  Text for a failed ack, or NULL
} queen_ack_t;

//  One ack; QUEEN_ERR_REFUSED with the broker's text when success is false.
queen_code_t
    queen_ack (queen_client_t *self, const queen_ack_t *ack, const char *consumer_group,
               queen_error_t *err);
//  Acks n items in one request. ok (may be NULL) gets each item's success;
//  QUEEN_ERR_REFUSED when any item failed (message = the first failure).
queen_code_t
    queen_ack_batch (queen_client_t *self, const queen_ack_t *acks, size_t n,
                     const char *consumer_group, bool *ok, queen_error_t *err);
//  Acks every message of a popped batch with one status ("completed" or
//  "failed"), in one request.
queen_code_t
    queen_ack_all (queen_client_t *self, const queen_batch_t *batch, const char *status,
                   queen_error_t *err);
//  Extends a lease by `seconds` (0 = broker default 60); QUEEN_ERR_REFUSED
//  when the lease is unknown or expired.
queen_code_t
    queen_lease_extend (queen_client_t *self, const char *lease_id, int seconds,
                        queen_error_t *err);

//  -------------------------------------------------------- transactions
//  A bundle of pushes and acks committed all-or-nothing
//  (POST /api/v1/transaction).
typedef struct queen_txn_s queen_txn_t;

queen_txn_t *
    queen_txn_new (void);
void
    queen_txn_destroy (queen_txn_t **self_p);
//  Adds one push operation holding n items (transaction ids made as in
//  queen_push when absent).
void
    queen_txn_push (queen_txn_t *self, const queen_item_t *items, size_t n);
void
    queen_txn_ack (queen_txn_t *self, const queen_ack_t *ack, const char *consumer_group);
//  The transaction fails unless this lease is held and unexpired.
void
    queen_txn_require_lease (queen_txn_t *self, const char *lease_id);
//  Number of operations added.
size_t
    queen_txn_size (const queen_txn_t *self);
//  Commits; QUEEN_ERR_REFUSED with the broker's text when success is false.
//  resp (may be NULL) keeps the answer ({"transactionId","success","results"}).
queen_code_t
    queen_txn_commit (queen_client_t *self, queen_txn_t *txn, queen_response_t *resp,
                      queen_error_t *err);

//  ------------------------------------------------------ consumer loop
//  The handler gets each non-empty batch; return 0 to ack it "completed",
//  anything else to ack it "failed". While it runs, the lease is extended
//  every renew_ms.
typedef int (*queen_handler_fn) (queen_client_t *client, const queen_batch_t *batch, void *arg);

typedef struct {
    const char *queue;          //  Required
    queen_pop_opts_t pop;       //  wait is forced on
    long renew_ms;              //  Lease renewal period; 0 = no renewal
    int renew_seconds;          //  Extension asked each time; 0 = 60
    long max_batches;           //  Stop after this many non-empty batches; 0 = no limit
    volatile int *stop;         //  Stop when *stop != 0 (checked between pops)
} queen_consume_opts_t;

typedef struct {
    long batches;               //  Non-empty batches handled
    long messages;
    long failed;                //  Batches the handler failed
    long renewals;              //  Successful lease extensions
} queen_consume_stats_t;

//  Pops, calls the handler, acks, until max_batches or *stop. Returns the
//  first error that stops it (a pop or ack that fails after retries).
queen_code_t
    queen_consume (queen_client_t *self, const queen_consume_opts_t *opts,
                   queen_handler_fn handler, void *arg, queen_consume_stats_t *stats,
                   queen_error_t *err);

//  ---------------------------------------------------------------- kv
typedef struct {
    char *value;                //  JSON text
    int64_t version;
    char *expires_at;           //  NULL when permanent
    char *updated_at;
} queen_kv_entry_t;

#define QUEEN_KV_ANY_VERSION  (-1)

//  404 = QUEEN_ERR_NOT_FOUND.
queen_code_t
    queen_kv_get (queen_client_t *self, const char *bucket, const char *key,
                  queen_kv_entry_t *out, queen_error_t *err);
void
    queen_kv_entry_free (queen_kv_entry_t *entry);
//  Writes JSON `value`; ttl_s 0 = permanent; if_version QUEEN_KV_ANY_VERSION,
//  0 (only if absent) or a version (compare-and-set; 409 = QUEEN_ERR_CONFLICT).
//  *version_out (may be NULL) gets the new version.
queen_code_t
    queen_kv_set (queen_client_t *self, const char *bucket, const char *key,
                  const char *value, int64_t ttl_s, int64_t if_version,
                  int64_t *version_out, queen_error_t *err);
queen_code_t
    queen_kv_del (queen_client_t *self, const char *bucket, const char *key,
                  int64_t if_version, queen_error_t *err);
//  Lists keys (raw answer {"bucket","keys":[...],"next"}); prefix/after may be NULL.
queen_code_t
    queen_kv_list (queen_client_t *self, const char *bucket, const char *prefix,
                   const char *after, int limit, queen_response_t *resp, queen_error_t *err);

//  ---------------------------------------------------------------- timers
typedef struct {
    const char *timer_id;       //  NULL = the broker makes one
    const char *queue;          //  Required
    const char *partition;      //  NULL = Default
    const char *payload;        //  JSON text (required)
    const char *transaction_id; //  NULL = the broker makes one
    const char *fire_at;        //  ISO-8601, or NULL to use delay_ms
    int64_t delay_ms;
} queen_timer_t;

//  timer_id_out (may be NULL, 256 bytes) gets the id; *created_out whether
//  it is new (false: the same request was made before).
queen_code_t
    queen_timer_schedule (queen_client_t *self, const queen_timer_t *timer,
                          char *timer_id_out, bool *created_out, queen_error_t *err);
//  404 unknown, 409 already fired.
queen_code_t
    queen_timer_cancel (queen_client_t *self, const char *timer_id, queen_error_t *err);
queen_code_t
    queen_timer_get (queen_client_t *self, const char *timer_id, queen_response_t *resp,
                     queen_error_t *err);
//  Pending timers (raw answer {"timers":[...],"next"}); queue/after may be NULL.
queen_code_t
    queen_timer_list (queen_client_t *self, const char *queue, const char *after, int limit,
                      queen_response_t *resp, queen_error_t *err);

//  ------------------------------------------------ asynchronous requests
//  For event loops with many requests in flight (queen-verify): a slot is
//  one request at a time on its own keep-alive connection, outside the
//  pool; queen_poll drives every started slot of the client, in the
//  calling thread. No retries here: the caller decides, with
//  queen_slot_maybe_sent telling whether a failed attempt may have reached
//  the broker. Use one thread per client for slots.
typedef struct queen_slot_s queen_slot_t;

//  `owner` comes back from queen_slot_owner.
queen_slot_t *
    queen_slot_new (queen_client_t *client, void *owner);
//  Cancels a request in flight.
void
    queen_slot_destroy (queen_slot_t **self_p);
void *
    queen_slot_owner (const queen_slot_t *self);
//  Starts a request (method as queen_request; path relative to the client
//  URL). The body is not copied: keep it unchanged until the slot is done.
//  QUEEN_ERR_ARG if the slot is busy.
queen_code_t
    queen_slot_start (queen_slot_t *self, const char *method, const char *path,
                      const char *body, size_t len, long timeout_ms);
bool
    queen_slot_busy (const queen_slot_t *self);
//  Abandons the request in flight (its answer is never read).
void
    queen_slot_cancel (queen_slot_t *self);
//  Runs transfers without waiting; fills `done` with up to max slots whose
//  request finished and returns how many (call again while it returns max).
int
    queen_poll (queen_client_t *client, queen_slot_t **done, int max);
//  Waits up to timeout_ms for network activity of any started slot.
void
    queen_wait (queen_client_t *client, long timeout_ms);
//  The finished request: its code (as queen_request), HTTP status (0 after
//  a transport error) and answer body (valid until the next start).
queen_code_t
    queen_slot_result (const queen_slot_t *self, long *status, const char **body, size_t *len);
//  "status 400: {...}" or the transport error.
const char *
    queen_slot_error (const queen_slot_t *self);
//  True once an attempt may have been applied by the broker without the
//  caller seeing its answer: a transport error (libcurl silently resends a
//  request on a fresh connection when a reused one dies, so even "refused"
//  may follow a delivered copy), a 5xx, or an answer on a new connection
//  while the slot had one open. Sticky until queen_slot_clear_maybe_sent.
bool
    queen_slot_maybe_sent (const queen_slot_t *self);
void
    queen_slot_clear_maybe_sent (queen_slot_t *self);

#ifdef __cplusplus
}
#endif
#endif
