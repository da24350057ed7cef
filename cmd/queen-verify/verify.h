/*  cmd/queen-verify/verify.h - the end-to-end verifier's shared types
    queen-verify drives a pipeline of queues through a running broker
    through libqueen (client/queen.h: its asynchronous request slots, one
    keep-alive HTTP/1.1 connection each) and checks that nothing is lost, duplicated or
    reordered (docs/verify.md). Files:
        main.c      flags, signals, the run's phases, exit code
        http.c      one libqueen request slot (keep-alive connection) per worker
        run.c       setup (health, configure), teardown, results
        pipeline.c  the workers (producer, movers, checker) and the
                    event loop (libqueen slots and queen_poll, one thread)
        ledger.c    what each stage saw: duplicates, order, gaps
        report.c    per-stage table, explanations, the summary line
        broker.c    a broker child process for --broker-bin / --chaos
    pipeline.h holds the run's private state shared by the last three.
*/
#ifndef QN_VERIFY_H
#define QN_VERIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/buf.h"
#include "client/queen.h"
#include "wire/ids.h"
#include "wire/json.h"

//  Command-line options; strings are owned by argv or the environment.
typedef struct {
    const char *url;            //  Broker base URL (ignored with --broker-bin)
    int stages;                 //  Queues <prefix>-s0 .. s{stages-1}
    int partitions;             //  Partitions p0 .. p{partitions-1} in every queue
    int64_t messages;           //  Total pushed into s0; 0 = until --duration
    int batch;                  //  Push request size and pop batch
    int consumers;              //  Consumer connections per queue
    int producers;              //  Producer connections (disjoint partition sets)
    int pop_partitions;         //  `partitions` parameter of a pop
    double rate;                //  Stage 0 msg/s cap; 0 = unlimited
    double duration_s;          //  Stop producing after this; 0 = no limit
    int payload_bytes;          //  Size of each payload's JSON text
    int lease_s;                //  leaseTime configured on the queues
    int pop_timeout_ms;         //  Long-poll timeout of a pop
    double drain_timeout_s;     //  Time allowed to drain after producing
    const char *prefix;         //  Queue name prefix
    bool chaos;                 //  SIGKILL and restart the broker we started
    double chaos_min_s;         //  Kill interval bounds
    double chaos_max_s;
    int chaos_kills;            //  At most this many kills; 0 = unlimited
    const char *broker_bin;     //  Start this broker ourselves
    const char *broker_log;     //  Its output; NULL = /dev/null
    const char *pg_host, *pg_port, *pg_db, *pg_user, *pg_password;
    uint64_t seed;
    const char *token;          //  Bearer token, or NULL
    bool cleanup;               //  Delete the queues at the end
    bool quiet;                 //  No progress line, no table
} vf_opts_t;

//  Monotonic milliseconds.
int64_t
    vf_now_ms (void);
//  xorshift64* step; the state must not be 0.
uint64_t
    vf_rand (uint64_t *state);

//  ---------------------------------------------------------------- http.c
//  One reusable request slot: a libqueen slot, so one keep-alive
//  connection per worker. The request body lives here (resent as is on a
//  retry); the answer is copied here when the request finishes.
typedef struct {
    queen_slot_t *slot;         //  Owned
    qn_buf_t body;              //  Request body (POST)
    qn_buf_t resp;              //  Response body
    long status;                //  HTTP status; 0 after a transport error
    queen_code_t code;
    bool maybe_sent;            //  A failed attempt may have reached the broker
    bool busy;                  //  Started, not finished
    const char *method;         //  Of the prepared request
    const char *path;
    long timeout_ms;
    char err [400];
} vf_http_t;

typedef enum {
    VF_HTTP_OK,                 //  2xx
    VF_HTTP_RETRY,              //  Transport error, 5xx, 408, 429: try again
    VF_HTTP_FATAL               //  Any other status: the request is wrong
} vf_http_outcome_t;

//  `owner` comes back from queen_slot_owner in the event loop.
void
    vf_http_init (vf_http_t *h, queen_client_t *client, void *owner);
void
    vf_http_free (vf_http_t *h);
//  Prepares a request: method "GET", "POST" (sends h->body) or "DELETE";
//  path relative to the client's URL (not copied: keep it alive).
void
    vf_http_prepare (vf_http_t *h, const char *method, const char *path, long timeout_ms);
//  Starts the prepared request on the client's event loop.
void
    vf_http_start (vf_http_t *h);
//  Records the result of a finished request (from queen_poll).
void
    vf_http_finish (vf_http_t *h);
//  Abandons the request in flight.
void
    vf_http_cancel (vf_http_t *h);
//  Runs the prepared request to completion (setup and cleanup phases).
void
    vf_http_perform (vf_http_t *h, queen_client_t *client);
vf_http_outcome_t
    vf_http_outcome (const vf_http_t *h);
//  "status 400: {...}" or the transport error, for messages.
void
    vf_http_describe (const vf_http_t *h, char *out, size_t len);

//  -------------------------------------------------------------- broker.c
typedef struct vf_broker_s vf_broker_t;

//  Starts the broker binary on a free port with its own spool directory;
//  NULL with a reason in err.
vf_broker_t *
    vf_broker_new (const vf_opts_t *opts, char *err, size_t err_len);
//  SIGTERM, wait up to 20 s (then SIGKILL). Returns the exit status
//  (128 + signal when killed); a non-zero one counts as a crash.
int
    vf_broker_stop (vf_broker_t *self);
//  Stops the broker if still running, removes the spool directory.
void
    vf_broker_destroy (vf_broker_t **self_p);
const char *
    vf_broker_url (const vf_broker_t *self);
//  Restarts a broker that exited; with chaos, kills it when its time has
//  come. Never blocks for long (a SIGKILLed child is reaped at once).
void
    vf_broker_tick (vf_broker_t *self, int64_t now_ms, bool chaos);
int
    vf_broker_kills (const vf_broker_t *self);
int
    vf_broker_restarts (const vf_broker_t *self);
//  Exits we did not cause (crashes, failed starts, an unclean final stop).
int
    vf_broker_crashes (const vf_broker_t *self);
int
    vf_broker_final_status (const vf_broker_t *self);

//  ------------------------------------------------- run.c, pipeline.c
//  Counters of one stage. Stage 0 is the producer; stages 1..S-1 move
//  s{c-1} to s{c}; stage S is the checker reading s{S-1}.
typedef struct {
    int64_t messages;           //  0: confirmed pushes; else first deliveries
    int64_t processed;          //  Deliveries whose ack/transaction was confirmed
    int64_t redelivered;        //  Deliveries of a message whose ack was never confirmed
    int64_t duplicates;         //  Unexplained second deliveries / second copies
    int64_t order;              //  First deliveries behind a later one
    int64_t corrupt;            //  Payload, name or transactionId not as produced
    int64_t missing;            //  Produced but never delivered here (after the run)
    int64_t requests;           //  HTTP requests answered
    int64_t retries;            //  Attempts repeated after a transport error or 5xx
    int64_t pops, empty_pops;
    int64_t dedup_items;        //  Stage 0: retried items answered duplicate
    int64_t buffered;           //  Stage 0: items the broker spooled
    int64_t lease_lost;         //  Transactions/acks refused: lease invalid or expired
    int64_t ambiguous;          //  ...of which an earlier attempt may have committed
    int64_t dup_txn;            //  Transactions refused: an output already existed
    int64_t dup_resolved;       //  ...inputs then acked alone (output existed)
    int64_t errors;             //  Other refusals
    int64_t first_ms, last_ms;  //  First and last delivery (or push)
} vf_stage_stats_t;

typedef struct vf_run_s vf_run_t;

vf_run_t *
    vf_run_new (const vf_opts_t *opts, const char *url);
void
    vf_run_destroy (vf_run_t **self_p);
//  Checks /health and configures the queues; -1 with a message on stderr.
int
    vf_run_setup (vf_run_t *self, int64_t wait_ms);
//  Runs until drained, the drain timeout, a fatal error or *stop.
//  `broker` may be NULL. Returns 0, or -1 after a fatal error.
int
    vf_run_loop (vf_run_t *self, vf_broker_t *broker, volatile int *stop);
//  Deletes the queues (--cleanup).
void
    vf_run_cleanup (vf_run_t *self);

//  What the report needs.
typedef struct {
    int stages;
    const vf_stage_stats_t *st; //  stages + 1 entries
    char *const *queue;         //  stages entries
    int64_t produced;           //  Confirmed pushes
    int64_t checked;            //  Distinct messages seen by the checker
    int64_t unconfirmed;        //  Seen by the checker, ack never confirmed
    int64_t t0_ms, produce_end_ms, end_ms, last_check_ms;
    bool drained, timed_out, interrupted;
    const char *fatal;          //  NULL or the reason the run stopped
} vf_result_t;

void
    vf_run_result (vf_run_t *self, vf_result_t *out);

//  -------------------------------------------------------------- report.c
//  Prints the table and explanations (unless quiet), then the summary line
//  last. Returns the exit code: 0 clean, 1 violations or incomplete run.
int
    vf_report (const vf_opts_t *opts, const vf_result_t *res, const vf_broker_t *broker,
               FILE *out);
//  One progress line (no newline).
void
    vf_progress (const vf_result_t *res, const vf_broker_t *broker, char *line, size_t len);

#endif
