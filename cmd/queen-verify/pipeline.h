/*  cmd/queen-verify/pipeline.h - the run's private state, shared by
    pipeline.c (workers and event loop), ledger.c (what each stage saw)
    and run.c (setup, teardown, results). Not a public interface.
*/
#ifndef QN_VERIFY_PIPELINE_H
#define QN_VERIFY_PIPELINE_H

#include "cmd/queen-verify/verify.h"

#define VF_LOG_MAX          5       //  Violations described on stderr, per kind

enum { W_PRODUCER, W_MOVER, W_CHECKER };
enum { OP_NONE, OP_PUSH, OP_POP, OP_TXN, OP_TXN1, OP_ACK1, OP_ACK };
enum { T_NONE, T_DELIVERED, T_DONE };       //  Ledger states
enum { TX_OK, TX_DUP, TX_LEASE, TX_ERROR };     //  Transaction refusals

//  One delivered message of the batch a consumer holds.
typedef struct {
    int32_t p;                  //  Partition index, -1 when unreadable
    int64_t n;                  //  Sequence number, -1 when unreadable
    int64_t seq;                //  The stored message's id as a number
    bool valid;                 //  As produced: transform it
    char *txn;                  //  Owned: transactionId to ack with
    char pid [QN_ID_STR_LEN + 1];
    char lease [QN_ID_STR_LEN + 1];
} vf_item_t;

//  What one consumer stage saw of one partition, indexed by n.
typedef struct {
    int64_t *seq;               //  Owned: message id per n; 0 = never delivered
    uint8_t *state;             //  Owned: T_*
    int64_t cap;
    int64_t max_n;              //  Highest n delivered; -1
} vf_track_t;

typedef struct {
    vf_run_t *run;              //  Not owned
    int kind;                   //  W_*
    int stage;                  //  0 for producers, else the consumer stage
    vf_http_t http;
    int op;                     //  OP_* being sent; OP_NONE when idle
    bool pending;               //  op prepared, waiting to be (re)sent
    bool done;
    int attempts;               //  Of the current op
    int64_t wake_ms;            //  Not before this
    int64_t backoff_ms;
    //  Producer
    int32_t *parts;             //  Owned: partitions p = index (mod producers)
    int nparts, cursor;
    int32_t *req_p;             //  Owned: items of the push in flight
    int64_t *req_n;
    int req_count;
    //  Consumers
    vf_item_t *items;            //  Owned
    int count, cap;
    int one;                    //  Fallback: the item handled alone
} vf_worker_t;

struct vf_run_s {
    const vf_opts_t *opts;      //  Not owned
    char *url;                  //  Owned, no trailing '/'
    char **queue;               //  Owned: S names
    char **pop_url;             //  Owned: paths, per consumer stage 1..S
    char *txn_url, *ack_url, *push_url;     //  Owned: paths
    int S, K;
    queen_client_t *client;     //  Owned: libqueen; its slots are the workers' connections
    vf_worker_t *w;              //  Owned
    int nw;
    int64_t *quota;             //  Per partition; -1 = unlimited
    int64_t *next_n;            //  Next n a producer puts in a request
    int64_t *produced;          //  Confirmed pushes per partition
    vf_track_t *track;           //  [(c - 1) * K + p] for stages 1..S
    vf_stage_stats_t *st;       //  [S + 1]
    int64_t produced_total;
    int64_t checked;            //  First deliveries at the checker
    int64_t unconfirmed;        //  After the final scan
    bool producing;
    int64_t t0_ms, produce_end_ms, end_ms, last_check_ms, last_ok_ms, last_scan_ms;
    double tokens;
    int64_t tokens_ms;
    bool drained, timed_out, interrupted;
    char *fatal;                //  Owned
    qn_json_doc_t doc;
    char *pad;                  //  Owned: payload_bytes of 'x'
    int logged [8];
};

enum { L_ORDER, L_DUP, L_CORRUPT, L_ERROR };    //  vf_log kinds

//  run.c
//  A heap string (free it).
char *
    vf_printf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));
//  Describes a violation on stderr, the first VF_LOG_MAX of each kind only.
void
    vf_log (vf_run_t *self, int kind, const char *fmt, ...) __attribute__ ((format (printf, 3, 4)));

//  ledger.c
vf_track_t *
    vf_track (vf_run_t *self, int stage, int32_t p);
//  Makes room for index n (zero-filled).
void
    vf_track_grow (vf_track_t *t, int64_t n);
void
    vf_ledger_deliver (vf_run_t *self, int stage, const vf_item_t *it, int64_t now);
void
    vf_ledger_confirm (vf_run_t *self, int stage, const vf_item_t *it);
bool
    vf_ledger_all_checked (vf_run_t *self, int64_t now, bool force);
void
    vf_ledger_final_scan (vf_run_t *self);

#endif
