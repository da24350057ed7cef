/*  actors/http/write.h - what the write routes share
    The write side of the JSON API is split by route: actors/http/push.c
    (configure, push, lease extension), actors/http/ack.c (ack, ack/batch),
    actors/http/txn.c (transaction) and actors/http/streams.c (streams
    cycle, which carries push items and an ack). They validate the same
    push items and acknowledgments, seal the payloads of encrypted queues
    the same way (§2.10), pack them the same way for pg_writer and read the
    same result rows; actors/http/write.c and actors/http/seal.c hold that.
    Timers (actors/http/timers.c, and the transaction's timer.schedule
    riders) seal their payloads through the same path (qn_hw_seal_add).
*/
#ifndef QN_ACTORS_CODEC_HTTP_WRITE_H
#define QN_ACTORS_CODEC_HTTP_WRITE_H

#include "actors/http/codec.h"
#include "base/hashmap.h"
#include "wire/crypto.h"
#include "wire/ids.h"

#define QN_HW_MAX_ITEMS     10000   //  Items of a push, flattened operations of a transaction
#define QN_HW_MAX_NAME      255     //  Bytes of a queue, partition or group name, of a transactionId
#define QN_HW_MAX_DELAY_MS  31536000000LL  //  delayMs / deliverAt: at most one year ahead

//  A validated push item: tokens of its fields, -1 when absent (or null,
//  or an empty transactionId/traceId, which mean "none").
typedef struct {
    int queue, partition, txn, trace, payload;
    bool has_nb;                //  delayMs > 0 or deliverAt given
    int64_t nb_us;              //  Not delivered before (Unix epoch us), when has_nb
} qn_hw_item_t;

//  A validated acknowledgment.
typedef struct {
    int txn;                    //  transactionId (string token)
    int64_t pid;                //  Decoded partitionId
    int64_t seq;                //  Decoded message id, when has_seq
    bool has_seq;
    int status, lease, error, group;    //  Tokens, -1 when absent
} qn_hw_ack_t;

//  Message texts of the ack routes: the single route and transaction acks
//  use §3.10's, the batch route §3.11's.
typedef struct {
    const char *no_txn;
    const char *no_pid;
    const char *prefix;         //  Names the item in our own messages
} qn_hw_ack_msgs_t;

//  A flattened transaction operation.
typedef struct {
    bool is_push;
    uint32_t ord;               //  0-based position among the pushes or the acks
    qn_hw_item_t item;
    qn_hw_ack_t ack;
} qn_hw_op_t;

//  A payload that is not a push item's but is sealed like one (a timer's,
//  qn_hw_seal_add): tokens of the call's doc, and what sealing made of it.
typedef struct {
    int queue;                  //  String token: the target queue
    int payload;                //  Token: the payload (its raw JSON text)
    qn_buf_t sealed;            //  The envelope to store instead (len 0: stored as sent)
    uint8_t digest [QN_CRYPTO_DIGEST_LEN];  //  When sealed: keyed digest of the plaintext
} qn_hw_extra_t;

//  Call state of the write routes: what the callback needs to answer.
//  `doc` points into the request body, which lives as long as the request
//  (read only when the callback gets a live ctx). Push items are `items`
//  (push, streams cycle) or the push operations of `ops` (transaction),
//  `count` long either way.
typedef struct {
    qn_json_doc_t doc;          //  Owned tokens
    uint32_t count;
    qn_hw_item_t *items;        //  Owned: push, streams cycle
    char (*minted) [QN_ID_STR_LEN + 1];     //  Owned: transaction ids minted for the spool
    qn_hw_ack_t *acks;          //  Owned: ack, ack/batch
    qn_hw_op_t *ops;            //  Owned: transaction
    qn_buf_t *sealed;           //  Owned, or NULL: per item / op, the encrypted
                                //  envelope to store instead of the payload (len 0: none)
    qn_hw_extra_t *extra;       //  Owned, or NULL: other payloads to seal (timers)
    uint32_t nextra;
    uint32_t npush, nack;
    char *queue, *ns, *task;    //  Owned: configure
    char lease [QN_ID_STR_LEN + 1];         //  extend
    char *producer;             //  Owned, or NULL: the verified JWT `sub` (§1.8)
    void *ext;                  //  Owned by the route: freed with ext_free
    void (*ext_free) (void *ext);
} qn_hw_call_t;

//  A call state; `ctx` (or NULL) gives the producer identity of its pushes.
qn_hw_call_t *qn_hw_call_new (const qn_http_ctx_t *ctx);
void qn_hw_call_free (qn_hw_call_t *c);

// ------------------------------------------------------------------ JSON input
//  The unescaped text of string token tok, into *p/*len: a span of the body
//  when it has no escapes, else of `scratch` (valid until its next use).
//  Returns 0, 1 when the text holds a NUL, -1 when tok is not a string.
int qn_hw_text (const qn_json_doc_t *doc, int tok, qn_buf_t *scratch, const char **p, size_t *len);
//  The member `key` of object obj; -1 when absent or JSON null.
int qn_hw_field (const qn_json_doc_t *doc, int obj, const char *key);
//  The top-level array `key` of a request body (items, acknowledgments)
//  into *list; its size, or -1 after a 400 when it is missing or holds
//  more than QN_HW_MAX_ITEMS.
int64_t qn_hw_body_array (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, const char *key, int *list);
bool qn_hw_is_str (const qn_json_doc_t *doc, int tok);
//  True for the empty string token.
bool qn_hw_is_empty_str (const qn_json_doc_t *doc, int tok);
//  What is wrong with a name or id string (NULL when fine): at most `max`
//  bytes of UTF-8, no NUL.
const char *qn_hw_text_problem (const qn_json_doc_t *doc, int tok, qn_buf_t *scratch, size_t max);
//  Validates push item `tok` (number i) in the contract's order (§3.6),
//  then our own limits and the delay fields (delayMs, deliverAt; `label`
//  names the item in messages, e.g. "items[3]"). now_us is the wall
//  clock the delay counts from. Returns 0, or -1 with the message in err.
int qn_hw_item_check (const qn_json_doc_t *doc, int tok, const char *label, int64_t now_us,
                      qn_hw_item_t *it, qn_buf_t *scratch, char *err, size_t err_len);
//  Validates acknowledgment `tok`. Returns 0, or -1 with the message in err.
int qn_hw_ack_check (const qn_json_doc_t *doc, int tok, const qn_hw_ack_msgs_t *m, qn_hw_ack_t *a,
                     qn_buf_t *scratch, char *err, size_t err_len);

// ------------------------------------------------------------------ PG_EXEC parameters
//  Adds string token tok unescaped to args, or NULL when tok < 0 (a
//  parameter, or an element of the open array: wire/msg_pg.h).
void qn_hw_args_tok (qn_pg_args_t *args, const qn_json_doc_t *doc, int tok, qn_buf_t *scratch);
//  Adds tok's raw JSON text (a non-string error value), or its text.
void qn_hw_args_error (qn_pg_args_t *args, const qn_json_doc_t *doc, int tok, qn_buf_t *scratch);
//  Adds the payload bytes of an item: its raw JSON text, else `dflt`.
void qn_hw_args_payload (qn_pg_args_t *args, const qn_json_doc_t *doc, int tok, const char *dflt);
//  The push item at position i of the call (an item of a push or a
//  cycle, a push operation of a transaction), or NULL for an ack.
const qn_hw_item_t *qn_hw_item_at (const qn_hw_call_t *c, uint32_t i);
//  True when some push item of the call has a delay.
bool qn_hw_any_delay (const qn_hw_call_t *c);
//  Packs one QN_MSG_PUSH item (qn_msg_push_item, wire/msg_push.h):
//  partition "Default" when absent, txn `minted` (or NULL) when absent,
//  payload the raw JSON text. `sealed` (or NULL, or empty): the envelope
//  that replaces the payload of an encrypted queue. `producer` (or NULL):
//  the verified JWT subject (§1.8; a producerSub in the body is never read).
void qn_hw_push_item (msgpack_packer *pk, const qn_json_doc_t *doc, const qn_hw_item_t *it,
                      const char *minted, const qn_buf_t *sealed, const char *producer);
//  The push arrays of queen.push / queen.txn / queen_streams.cycle for the
//  call's push items, as 7 array parameters: queues, partitions, txn ids,
//  payloads (sealed, or the raw JSON, or dflt when absent), trace ids,
//  producers (c->producer), encrypted flags.
void qn_hw_args_push_arrays (qn_pg_args_t *args, const qn_hw_call_t *c, const char *dflt,
                             qn_buf_t *scratch);
//  The not-before parameter of the call's push items (int8[] of Unix epoch
//  us, NULL elements for items without a delay), or NULL when none has one.
void qn_hw_args_not_before (qn_pg_args_t *args, const qn_hw_call_t *c);
//  The seven ack array parameters (without the tenant): groups, partition
//  ids, transaction ids, seqs, statuses, lease ids, errors. `group` >= 0
//  overrides every item's consumerGroup.
void qn_hw_args_acks (qn_pg_args_t *args, const qn_json_doc_t *doc, const qn_hw_ack_t *const *acks,
                      uint32_t n, int group, qn_buf_t *scratch);

// ------------------------------------------------------------------ results
const msgpack_object *qn_hw_col (const qn_pg_result_t *res, uint32_t r, uint32_t c);
bool qn_hw_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c, int64_t *out);
//  -1 for NULL, else 0/1.
int qn_hw_col_bool (const qn_pg_result_t *res, uint32_t r, uint32_t c);
bool qn_hw_col_str (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char **p, size_t *len);
//  Writes key: the string column, or null.
void qn_hw_jw_col_str (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c);
void qn_hw_jw_col_bool (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c);
void qn_hw_jw_id (qn_jw_t *w, const char *key, qn_id_kind_t kind, int64_t id);
//  Writes key: the raw JSON text of token tok (a string as the client
//  wrote it, escapes included), or `dflt` as a string, or null.
void qn_hw_jw_tok (qn_jw_t *w, const char *key, const qn_json_doc_t *doc, int tok, const char *dflt);
//  Writes key: the item's traceId as a canonical UUID, or null.
void qn_hw_jw_trace (qn_jw_t *w, const char *key, const qn_json_doc_t *doc, int tok, qn_buf_t *scratch);
//  Answers with the JSON in b and frees it.
void qn_hw_reply_buf (qn_http_ctx_t *ctx, int status, qn_buf_t *b);
//  Publishes "committed" for `queue` unless `seen` already has it.
void qn_hw_committed_once (qn_codec_t *codec, qn_hashmap_t *seen, const char *tenant,
                           const char *queue, size_t len);
//  PostgreSQL is unavailable rather than the request wrong: connection
//  failures, operator intervention, no slot, no answer in time (not a
//  statement timeout, 57014).
bool qn_hw_db_unavailable (const qn_pg_result_t *res);
//  Systemic failures of a transaction-like call (unavailable, timed out,
//  out of resources, serialisation failure or deadlock): answered 503,
//  which the client retries; nothing was applied.
bool qn_hw_systemic (const qn_pg_result_t *res);

//  Sends PG_EXEC of stmt with the parameters in `args` to pg_writer with
//  cb; on a send failure answers 503 and returns -1 (cb is not called).
int qn_hw_exec_args (qn_codec_t *codec, qn_http_ctx_t *ctx, uint32_t stmt, const qn_pg_args_t *args,
                     qn_codec_result_fn *cb, void *arg);

//  Tells timers about a timer created by a route (QN_MSG_TIMER_ARM
//  [id, due_us]); a hint: its next load finds the timer anyway.
void qn_hw_timer_arm (qn_codec_t *codec, int64_t id, int64_t due_us);

// ------------------------------------------------------------------ encryption
//  actors/http/seal.c. Continues a call once its payloads are sealed; takes c.
typedef void (qn_hw_send_fn) (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c);
//  Seals the payloads of the call's push items bound for encryptionEnabled
//  queues (§2.10) into c->sealed, and those of its extras (qn_hw_seal_add)
//  into c->extra [i].sealed with their keyed digests, then calls `then`
//  (which takes c). Without QUEEN_ENCRYPTION_KEY it calls `then` at once.
//  Asks pg_reader first (one round trip for the whole call) when a queue's
//  setting is not confirmed. Takes c; on a sealing failure answers 500 and
//  frees c.
void qn_hw_seal_then (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c, qn_hw_send_fn *then);
//  Asks qn_hw_seal_then to seal one more payload for (the request's tenant,
//  queue) when that queue is encrypted, as a push to it would be: a
//  timer's payload (POST /api/v1/timers, timer.schedule riders). queue is
//  a string token and payload a token of c->doc. Returns its index in
//  c->extra.
uint32_t qn_hw_seal_add (qn_hw_call_t *c, int queue, int payload);
//  The label of the keyed digest of a sealed timer payload (the payload
//  part of queen._timer_fp).
#define QN_HW_TIMER_DIGEST "timer-payload"
//  The broker's key ring for reading (QUEEN_ENCRYPTION_KEY and
//  QUEEN_ENCRYPTION_OLD_KEYS; possibly empty), loaded on first use.
const qn_crypto_keys_t *qn_hw_keys (qn_codec_t *codec);
//  Configure's stored options set the queue's encryption at once.
void qn_hw_configured_encryption (qn_codec_t *codec, qn_http_ctx_t *ctx, const char *queue,
                                  const char *opts, size_t opts_len);

#endif
