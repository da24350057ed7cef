/*  actors/pg/writer_int.h - what the files of the pg_writer actor share
    One actor (pg_writer, and pg_reader built from the same code) in four
    files, split at its seams:
      writer.c  the actor: state, routes, statement jobs, scheduling
      conn.c    the connection state machine (connect, send, read, drop)
                and the health connection's "db" events
      batch.c   pushes: routing (actors/pg/push_route.h), batching into one
                queen.push (queen.push_sqs when SQS items are in it),
                per-item answers, "committed" events, hand-off to the spool
      acks.c    acks: the ack lanes, merging queued acks into one
                queen.ack, per-request answers
      maint.c   the maintenance flags (owner: persist, poll, publish)
    Nothing here is used outside actors/pg/.
*/
#ifndef QN_ACTORS_PG_WRITER_INT_H
#define QN_ACTORS_PG_WRITER_INT_H

#include "actors/actors.h"
#include "actors/pg/push_route.h"
#include "actors/pg/statements.h"
#include "wire/msg_push.h"

#include <libpq-fe.h>
#include <msgpack.h>

#define QN_PGW_MAX_POOL         128
#define QN_PGW_PUSH_LANES       2
#define QN_PGW_PUSH_MAX_PARTS   256
#define QN_PGW_ACK_MAX_MERGE    64      //  Requests per merged ack
#define QN_PGW_MERGE_RETRIES    3       //  Reruns of a request after its batch failed
#define QN_PGW_MAX_QUEUED       200000
#define QN_PGW_PING_MS          1000
#define QN_PGW_PING_DEAD_MS     1500
#define QN_PGW_CONNECT_TIMEOUT_MS 5000
#define QN_PGW_HEALTH_REPEAT_MS 2000
#define QN_PGW_MAINT_POLL_MS    2000

typedef enum { C_DOWN, C_CONNECTING, C_IDLE, C_BUSY } qn_pgw_conn_state_t;
typedef enum { J_EXEC, J_PUSH, J_PING } qn_pgw_job_kind_t;

typedef struct qn_pgw qn_pgw_t;
typedef struct qn_pgw_job qn_pgw_job_t;

//  A push request (QN_MSG_PUSH) waiting for or in a batch.
typedef struct qn_pgw_push {
    struct qn_pgw_push *next;
    char reply_to [QN_ENV_MAX_NAME + 1];
    uint64_t corr;
    msgpack_unpacked msg;       //  Owned: the decoded request body
    char *body;                 //  Owned copy of the body: msg's strings point into it
    size_t body_len;
    const char *tenant;         //  Points into body
    size_t tenant_len;
    qn_msg_push_item_t *items;  //  Owned: count decoded items, pointing into body
    uint32_t count;
    bool sqs;                   //  An item carries SQS metadata (queen.push_sqs)
    bool replay;                //  From the spool: never re-routed
    uint32_t first_ord;         //  0-based position of item 0 in the batch
    bool solo;                  //  Run alone (after a merged batch failed)
    int retries;
} qn_pgw_push_t;

//  Called when an internal job (no requester) ends: res on success, else
//  sqlstate/message. Must not keep res.
typedef void (qn_pgw_done_fn) (qn_pgw_t *self, qn_pgw_job_t *j, PGresult *res,
                               const char *sqlstate, const char *message);

struct qn_pgw_job {
    struct qn_pgw_job *next;
    qn_pgw_job_kind_t kind;
    char reply_to [QN_ENV_MAX_NAME + 1];
    uint64_t corr;
    uint32_t stmt_id;
    char *sql;                  //  Owned, for QN_SQL_RAW
    uint32_t nparams;
    qn_buf_t params;            //  All parameter bytes back to back
    size_t offsets [QN_SQL_MAX_PARAMS];
    int lengths [QN_SQL_MAX_PARAMS];
    int formats [QN_SQL_MAX_PARAMS];
    bool nulls [QN_SQL_MAX_PARAMS];
    qn_pgw_push_t *reqs;        //  Owned, J_PUSH: the merged requests
    uint32_t item_count;
    uint64_t *part_keys;        //  Owned, J_PUSH: the batch's partition keys, sorted
    uint32_t part_count;
    qn_pgw_done_fn *done;       //  Internal job: called instead of a reply
    int64_t arg;                //  For done
    //  Acks (acks.c): a merged job owns its requests (parts), each an
    //  ack job of its own with its place in the merged item arrays.
    qn_pgw_job_t *parts;        //  Owned, in order
    uint32_t first_ord;         //  A part: 0-based position of its item 0
    uint32_t count;             //  A part: its items
    bool lane;                  //  Counted in a push or ack lane until it ends
    bool solo;                  //  Run alone (after a merged batch failed)
    int retries;
};

typedef struct {
    PGconn *conn;
    qn_pgw_conn_state_t state;
    int fd;
    bool want_write;
    int64_t retry_at_ms;
    int64_t backoff_ms;
    qn_pgw_job_t *job;          //  In flight
    int64_t busy_since_ms;
    int64_t connect_started_ms;
    bool expect_prepare;
    bool prepared [QN_SQL_COUNT_];
    PGresult *result;           //  The statement's result, until SYNC
    char sqlstate [6];
    char *error;                //  First error of the job, owned
    char *detail;
} qn_pgw_conn_t;

//  A set request waiting for its row to be written.
typedef struct {
    char reply_to [QN_ENV_MAX_NAME + 1];
    uint64_t corr;
} qn_pgw_waiter_t;

struct qn_pgw {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    char name [32];
    bool is_writer;
    uint32_t pool_size;
    qn_pgw_conn_t pool [QN_PGW_MAX_POOL];
    qn_pgw_conn_t health;       //  Writer only: pings, never queued behind jobs
    int64_t ping_sent_ms;       //  0 = no ping in flight
    bool db_up;
    bool db_up_known;
    int64_t health_published_ms;
    qn_pgw_job_t *head, *tail;  //  Queued exec jobs
    uint32_t queued;
    qn_pgw_push_t *push_head, *push_tail;
    uint32_t push_in_flight;
    qn_pgw_job_t *ack_head, *ack_tail;  //  Acks waiting for an ack lane (ACK_LANES)
    uint32_t ack_queued;
    uint32_t ack_in_flight;
    qn_pg_params_t params;      //  Owned strings inside (connect timeout too)
    msgpack_sbuffer reply;      //  Reusable encode buffer
    //  Push routing (writer only): db health, push maintenance, spool mode
    qn_push_route_t route;
    //  Maintenance flags (writer only; the push flag is route.push_maint)
    bool pop_maint;
    uint64_t maint_gen;         //  Grows with every change we make
    uint64_t maint_poll_gen;    //  maint_gen when the running poll started
    bool maint_poll_in_flight;
    int64_t maint_tick_ms;      //  Last poll and republish
    //  Pool gauges and errors for /metrics/prometheus (pool="<name>")
    qn_metric_t *m_size, *m_busy, *m_waiting, *m_errors;
};

// ------------------------------------------------------------------ writer.c
void qn_pgw_pump (qn_pgw_t *self);
void qn_pgw_pool_gauges (qn_pgw_t *self);
void qn_pgw_send_reply (qn_pgw_t *self, const char *to, uint64_t corr, uint16_t type);
void qn_pgw_reply_error (qn_pgw_t *self, const char *to, uint64_t corr, const char *sqlstate,
                         const char *message, const char *detail);
void qn_pgw_reply_rows (qn_pgw_t *self, const char *to, uint64_t corr, PGresult *res,
                        int first, int last, int64_t ord_base);
void qn_pgw_push_free (qn_pgw_push_t *r);
void qn_pgw_job_free (qn_pgw_job_t *j);
bool qn_pgw_any_usable (qn_pgw_t *self);
void qn_pgw_fail_job (qn_pgw_t *self, qn_pgw_job_t *j, const char *sqlstate,
                      const char *message, const char *detail);
void qn_pgw_enqueue (qn_pgw_t *self, qn_pgw_job_t *j);
//  Queues an internal statement (raw SQL, no parameters) whose end calls
//  done. False when no connection can run it now (done is not called).
bool qn_pgw_exec_internal (qn_pgw_t *self, const char *sql, qn_pgw_done_fn *done, int64_t arg);
//  A job left its connection (done, failed or dropped): its push or ack
//  lane is free again. Idempotent.
void qn_pgw_lane_done (qn_pgw_t *self, qn_pgw_job_t *j);
//  Packs rows [first, last) of res as PG_RESULT rows; ord_base >= 0
//  rebases column 0 (ord) for a request merged into a batch.
void qn_pgw_pack_rows (msgpack_packer *pk, PGresult *res, int first, int last, int64_t ord_base);
//  Column c of row r of a text or binary result as text (binary text
//  columns are their bytes), or NULL.
const char *qn_pgw_col_text (PGresult *res, int r, int c, int *len);

// ------------------------------------------------------------------ conn.c
void qn_pgw_conn_start (qn_pgw_t *self, qn_pgw_conn_t *c);
void qn_pgw_conn_drop (qn_pgw_t *self, qn_pgw_conn_t *c, const char *why);
void qn_pgw_conn_send (qn_pgw_t *self, qn_pgw_conn_t *c, qn_pgw_job_t *j);
void qn_pgw_conn_clear_result (qn_pgw_conn_t *c);
void qn_pgw_finish_job (qn_pgw_t *self, qn_pgw_conn_t *c);
void qn_pgw_publish_health (qn_pgw_t *self, bool up);

// ------------------------------------------------------------------ batch.c
int qn_pgw_on_push (void *self_, const qn_env_t *env);
//  Decodes r->body (a QN_MSG_PUSH body, owned by r) into r's tenant,
//  flags and items. 0, or -1 when malformed or without items.
int qn_pgw_push_decode (qn_pgw_push_t *r);
int qn_pgw_on_drained (void *self_, const qn_env_t *env);
//  Takes queued push requests into one batch. busy (NULL: none) is the
//  push batch in flight on the other lane: the batch stops before the
//  first request that shares a partition with it.
qn_pgw_job_t *qn_pgw_build_push_batch (qn_pgw_t *self, const qn_pgw_job_t *busy);
//  True when the first queued push request shares a partition with the
//  in-flight push batch busy: a second lane would only wait in
//  PostgreSQL for busy's partition locks, so the request waits here and
//  merges with later ones instead.
bool qn_pgw_push_conflicts (const qn_pgw_push_t *r, const qn_pgw_job_t *busy);
void qn_pgw_finish_push (qn_pgw_t *self, qn_pgw_job_t *j, qn_pgw_conn_t *c);
//  A push job that did not run (connection lost, no connection):
//  requests that may go to the spool go there, the others are refused.
void qn_pgw_fail_push (qn_pgw_t *self, qn_pgw_job_t *j, const char *sqlstate,
                       const char *message);
//  Queued pushes that can no longer run: to the spool (may_spool, when
//  the failure allows), or refused.
void qn_pgw_fail_queued_pushes (qn_pgw_t *self, const char *sqlstate, const char *message,
                                bool may_spool);
//  After an exec job committed: "committed" for the statements whose
//  rows name queues they wrote (the transaction bundle).
void qn_pgw_exec_committed (qn_pgw_t *self, const qn_pgw_job_t *j, PGresult *res);

//  What a merged batch (pushes or acks) that failed does with its
//  requests: answer them all with the error (systemic failures: the
//  database or the connection), or rerun them (each alone when there
//  were several, so one request's data never fails another's; a
//  deadlock or serialisation failure reruns a lone request as it was).
typedef enum { QN_PGW_MERGE_FAIL, QN_PGW_MERGE_RERUN } qn_pgw_merge_fate_t;
qn_pgw_merge_fate_t qn_pgw_merge_fate (const char *sqlstate, uint32_t requests);

// ------------------------------------------------------------------ acks.c
//  Queues an ack job (QN_SQL_ACK on pg_writer with ACK_LANES > 0).
void qn_pgw_ack_enqueue (qn_pgw_t *self, qn_pgw_job_t *j);
//  One FIFO of jobs (head, tail, count): the exec queue and the ack queue.
void qn_pgw_jobs_append (qn_pgw_job_t **head, qn_pgw_job_t **tail, uint32_t *count,
                         qn_pgw_job_t *j);
qn_pgw_job_t *qn_pgw_jobs_take (qn_pgw_job_t **head, qn_pgw_job_t **tail, uint32_t *count);
//  Takes queued acks into one job: consecutive requests of one tenant,
//  at most QN_PGW_ACK_MAX_MERGE requests and PUSH_MAX_BATCH items (a
//  single request may exceed it), none marked solo. One request is
//  returned as it is; several become a merged job whose parts they are.
qn_pgw_job_t *qn_pgw_build_ack_batch (qn_pgw_t *self);
//  A merged ack job ended on c: per-request answers, or the failure's
//  fate (qn_pgw_merge_fate) for each request.
void qn_pgw_finish_acks (qn_pgw_t *self, qn_pgw_job_t *j, qn_pgw_conn_t *c);
//  Queued acks that can no longer run are refused.
void qn_pgw_fail_queued_acks (qn_pgw_t *self, const char *sqlstate, const char *message);
//  Binary one-dimensional array parameters (the wire form of PostgreSQL
//  arrays): the element count of one (-1 when p is not such an array;
//  0 for an empty one), and the concatenation of n of them, input i
//  padded with NULL elements to pads[i] (a NULL input: pads[i] NULLs).
//  Appends to out; -1 when an input is not a one-dimensional array.
int64_t qn_pgw_array_len (const char *p, size_t len);
int qn_pgw_array_concat (qn_buf_t *out, const char *const *ptrs, const size_t *lens,
                         const uint32_t *pads, uint32_t n);

// ------------------------------------------------------------------ maint.c
int qn_pgw_on_maint_set (void *self_, const qn_env_t *env);
//  QN_MSG_MESH_MAINT_POLL []: a peer changed the flags: read them now.
int qn_pgw_on_maint_poll (void *self_, const qn_env_t *env);
//  Reads the flags from queen.system_state (start, every 2 s: another
//  broker may flip them) and republishes them.
void qn_pgw_maint_tick (qn_pgw_t *self);
void qn_pgw_maint_publish (qn_pgw_t *self);

#endif
