/*  actors/http/txn.h - what the files of the transaction route share
    (actors/http/txn.c: the route, its call and its answers;
    actors/http/txn_riders.c: the riders kv.set, kv.delete, timer.schedule
    and timer.cancel, their validation and their bundle parameters).
    Not an API of the codec.
*/
#ifndef QN_ACTORS_HTTP_TXN_H
#define QN_ACTORS_HTTP_TXN_H

#include "actors/http/write.h"

#define QN_HTX_VALUE_MAX     (1024 * 1024)   //  Bytes of a kv value (as PUT /api/v1/kv)
#define QN_HTX_TTL_MAX       315360000       //  kv ttl: 10 years, in seconds
#define QN_HTX_DELAY_MAX_MS  (QN_HTX_TTL_MAX * 1000LL)    //  Timers: at most 10 years ahead

//  Operation kinds; qn_htx_kind_names spells them as the client does.
typedef enum {
    QN_HTX_PUSH, QN_HTX_ACK, QN_HTX_KV_SET, QN_HTX_KV_DELETE, QN_HTX_TIMER_SCHEDULE, QN_HTX_TIMER_CANCEL
} qn_htx_kind_t;

extern const char *const qn_htx_kind_names [];

//  A validated rider: tokens of its fields (-1 when absent).
typedef struct {
    int bucket, key, value;     //  kv
    int64_t if_version, ttl_s;
    bool has_if, has_ttl;
    int timer;                  //  timerId token; -1: minted_id
    int queue, partition, payload, txn;     //  timer.schedule; txn -1: minted_txn
    int64_t at_us, delay_ms;    //  One of them, by has_at
    bool has_at;
    char minted_id [QN_ID_STR_LEN + 1];
    char minted_txn [QN_ID_STR_LEN + 1];
    uint32_t extra;             //  timer.schedule: its payload's index in c->extra
} qn_htx_rider_t;

//  The route's part of the call state (c->ext). Rider ops of c->ops have
//  is_push false and ord = their position in `riders`.
typedef struct {
    uint8_t *kind;              //  Owned: qn_htx_kind_t per flattened operation
    qn_htx_rider_t *riders;     //  Owned
    uint32_t nriders, nkv, ntimer;
    char *tenant;               //  Owned: for the commit work when the client is gone
} qn_htx_bundle_t;

void qn_htx_bundle_free (void *arg);

//  Unknown operation type: answered without touching the database.
void qn_htx_unknown (qn_http_ctx_t *ctx, const qn_hw_call_t *c, int type_tok);

//  Validates operations into c->ops (and the riders into c->ext). Returns
//  0; 1 when it answered (bad input or an unknown type).
int qn_htx_parse (qn_http_ctx_t *ctx, qn_hw_call_t *c, int ops, qn_buf_t *scratch);

//  requiredLeases: absent/null -> NULL; else an array of lease UUIDs
//  (empty strings skipped). Returns 0, or -1 after answering 400.
int qn_htx_args_required (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, qn_pg_args_t *args,
                 qn_buf_t *scratch);

//  The five kv array parameters of queen.bundle: buckets, keys, values
//  (NULL for a delete), ifVersion, ttl.
void qn_htx_args_kv (qn_pg_args_t *args, const qn_hw_call_t *c, qn_buf_t *scratch);

//  The nine timer array parameters of queen.bundle: timerIds, then for a
//  schedule (NULL for a cancel) queue, partition, payload (the envelope
//  when its queue is encrypted), transaction id, given, fire-at us, delay
//  ms, and the keyed digest of a sealed payload's plaintext (NULL:
//  plaintext).
void qn_htx_args_timers (qn_pg_args_t *args, const qn_hw_call_t *c, qn_buf_t *scratch);

#endif
