/*  actors/sqs/sqs_int.h - what the SQS codec's files share
    codec.c owns the actor (requests, answers, SigV4, the park table);
    akeys.c the access keys of queen.sqs_keys; qcache.c the last settings
    read per queue (used during an outage); ops.c dispatches each SQS
    operation, after reading the queue's settings, to the file of its
    concern (queues.c, send.c, receive.c, handles.c), which translates it
    into the messaging core's operations and writes the answer.
*/
#ifndef QN_ACTORS_SQS_INT_H
#define QN_ACTORS_SQS_INT_H

#include "actors/actors.h"
#include "wire/msg_pg.h"
#include "wire/sqs.h"

typedef struct qn_sqs_codec qn_sqs_codec_t;
typedef struct qn_park qn_park_t;

//  SQS settings of the queue a request names (from QN_SQL_SQS_QUEUE).
typedef struct {
    bool found;
    int32_t id;
    bool fifo;
    int64_t visibility_s;
    int64_t delay_s;
    int64_t max_bytes;
    int64_t wait_s;
    bool content_dedup;
    bool scope_group;                   //  DeduplicationScope=messageGroup
    char dlq [96];                      //  RedrivePolicy target queue name, or ""
    int64_t max_receives;
    char *attrs_json;                   //  Owned: effective attributes
    char *tags_json;                    //  Owned
    int64_t created_us, modified_us;
    int64_t visible, inflight, delayed;
    uint8_t key [QN_SQS_HANDLE_KEY_LEN];
    bool encrypted;                     //  Native encryptionEnabled: bodies sealed at rest
} qn_sqs_queue_t;

//  One request, from decoding to its answer.
typedef struct {
    qn_sqs_codec_t *codec;              //  Not owned
    uint64_t id;
    uint64_t conn_id;
    uint32_t seq;
    bool keep_alive;
    bool cancelled;                     //  Client went away
    bool parked;                        //  In the park table
    bool woken;                         //  A park scout: must report back
    uint32_t pending;                   //  Calls in flight
    char request_id [40];
    char tenant [65];                   //  The access key's (queen.sqs_keys), "" for SQS_CREDENTIALS
    char access_key [129];
    char base_url [160];                //  scheme://host:port of QueueUrls
    qn_sqs_request_t req;               //  Owned (its arena)
    qn_sqs_str_t path;                  //  Not NUL-terminated copy owned in path_buf
    char *path_buf;                     //  Owned
    char queue [96];                    //  Queue name addressed ("" when none)
    qn_sqs_queue_t q;
    int64_t deadline_ms;                //  Receive: end of the long poll
    int64_t started_us;
    char lease [40];                    //  Receive: the lease of this attempt
    uint32_t batch_map [QN_SQS_MAX_ENTRIES];   //  Entries sent to the database, by row
    uint32_t batch_sent;
    qn_sqs_handle_t handles [QN_SQS_MAX_ENTRIES];
} qn_sqs_req_t;

typedef void (qn_sqs_result_fn) (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_pg_result_t *res);
//  A push's answer: env is the QN_MSG_PUSH_ANSWER, NULL at the deadline.
typedef void (qn_sqs_answer_fn) (qn_sqs_codec_t *codec, qn_sqs_req_t *r, const qn_env_t *env);
typedef struct qn_sqs_qcache qn_sqs_qcache_t;

// ------------------------------------------------------------------ codec.c
qn_kernel_t *qn_sqs_kernel (qn_sqs_codec_t *codec);
const qn_config_t *qn_sqs_config (qn_sqs_codec_t *codec);
qn_park_t *qn_sqs_park (qn_sqs_codec_t *codec);
bool qn_sqs_draining (qn_sqs_codec_t *codec);
//  False while pg_writer reports the database down (event "db").
bool qn_sqs_db_up (qn_sqs_codec_t *codec);
//  The last settings read per queue (qcache.c).
qn_sqs_qcache_t *qn_sqs_qcache (qn_sqs_codec_t *codec);
//  The key ring of QUEEN_ENCRYPTION_KEY / QUEEN_ENCRYPTION_OLD_KEYS (built
//  on first use; empty without a key: nothing is sealed then).
struct qn_crypto_keys *qn_sqs_keys (qn_sqs_codec_t *codec);
//  Runs a catalogue statement on pg_writer; cb gets the result (never
//  called for a request whose client left). Returns 0 or a QN_E*.
int qn_sqs_exec (qn_sqs_codec_t *codec, qn_sqs_req_t *r, uint32_t stmt, const qn_pg_args_t *args,
                 qn_sqs_result_fn *cb);
//  Sends the push operation (a QN_MSG_PUSH body, wire/msg_push.h) to
//  pg_writer; answer gets its answer (never called for a request whose
//  client left). Returns 0 or a QN_E*.
int qn_sqs_push (qn_sqs_codec_t *codec, qn_sqs_req_t *r, const char *body, size_t len,
                 qn_sqs_answer_fn *answer);
//  A database call that failed for the database's sake (connection,
//  shutdown, resources, no answer in time), not the request's.
bool qn_sqs_pg_unavailable (const qn_pg_result_t *res);
//  Answers r with the body in `out` (status 200) and frees r.
void qn_sqs_reply (qn_sqs_req_t *r, qn_buf_t *out);
//  Answers r with an error in its protocol's shape and frees r.
void qn_sqs_reply_error (qn_sqs_req_t *r, const qn_sqs_error_t *err);
void qn_sqs_reply_errorf (qn_sqs_req_t *r, qn_sqs_code_t code, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));
//  A failed database call: ServiceUnavailable or InternalFailure.
void qn_sqs_reply_pg_error (qn_sqs_req_t *r, const qn_pg_result_t *res);
//  The queue's URL.
void qn_sqs_queue_url (const qn_sqs_req_t *r, const char *name, size_t len, qn_buf_t *out);
//  Account id in URLs and ARNs.
#define QN_SQS_ACCOUNT "000000000000"

// ------------------------------------------------------------------ akeys.c
//  The access keys of queen.sqs_keys (tenant per key): a cache reloaded
//  every SQS_KEYS_REFRESH_MS and asked on a miss, inside the codec's thread.
#define QN_SQS_TENANT_MAX 65            //  A tenant name (64 bytes) and its NUL
#define QN_SQS_AKEY_MAX 128             //  Longest access key id
enum {
    QN_SQS_AKEY_OK = 0,                 //  Known and enabled: secret and tenant set
    QN_SQS_AKEY_UNKNOWN = 1,            //  Unknown or disabled
    QN_SQS_AKEY_FAILED = 2,             //  The lookup failed: answer ServiceUnavailable
    QN_SQS_AKEY_MISS = 3                //  Not cached: ask with qn_sqs_akeys_wait
};
typedef struct qn_sqs_akeys qn_sqs_akeys_t;
//  Handles a request envelope again (the codec's request handler).
typedef void (qn_sqs_replay_fn) (void *arg, const qn_env_t *env);
qn_sqs_akeys_t *qn_sqs_akeys_new (qn_kernel_t *kernel, const qn_config_t *config,
                                  qn_sqs_replay_fn *replay, void *arg);
void qn_sqs_akeys_destroy (qn_sqs_akeys_t **self_p);
//  First reload now, then every SQS_KEYS_REFRESH_MS (from the START message).
void qn_sqs_akeys_start (qn_sqs_akeys_t *self);
//  A QN_SQS_AKEY_* state; with OK, *secret (valid until the next reload or
//  lookup answer) and tenant are set.
int qn_sqs_akeys_find (qn_sqs_akeys_t *self, const char *access_key, const char **secret,
                       char tenant [QN_SQS_TENANT_MAX]);
//  Keeps a copy of the request envelope and asks the database for the key
//  (one lookup per key in flight); the envelope is replayed when it
//  answers. -1 when too many requests wait already (answer 503).
int qn_sqs_akeys_wait (qn_sqs_akeys_t *self, const char *access_key, const qn_env_t *env);

//  The request with that id, or NULL.
qn_sqs_req_t *qn_sqs_request (qn_sqs_codec_t *codec, uint64_t id);

// ------------------------------------------------------------------ qcache.c
qn_sqs_qcache_t *qn_sqs_qcache_new (void);
void qn_sqs_qcache_destroy (qn_sqs_qcache_t **self_p);
//  Keeps a copy of q's settings (not its attribute and tag texts).
void qn_sqs_qcache_put (qn_sqs_qcache_t *self, const char *tenant, const char *queue,
                        const qn_sqs_queue_t *q);
//  The kept settings into *out (its texts freed, left NULL): true, or
//  false (out untouched) when this queue's are not kept.
bool qn_sqs_qcache_get (qn_sqs_qcache_t *self, const char *tenant, const char *queue,
                        qn_sqs_queue_t *out);
void qn_sqs_qcache_drop (qn_sqs_qcache_t *self, const char *tenant, const char *queue);

// ------------------------------------------------------------------ ops.c
//  Runs the decoded, validated request r: its queue's settings first when
//  the operation needs them (r->q), then the operation.
void qn_sqs_dispatch (qn_sqs_codec_t *codec, qn_sqs_req_t *r);
//  Result columns: a missing column or a NULL reads as nil.
const msgpack_object *qn_sqs_col (const qn_pg_result_t *res, uint32_t r, uint32_t c);
bool qn_sqs_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c, int64_t *out);
bool qn_sqs_col_bool (const qn_pg_result_t *res, uint32_t r, uint32_t c);
//  String or bin column: pointer and length; NULL when nil.
const char *qn_sqs_col_str (const qn_pg_result_t *res, uint32_t r, uint32_t c, size_t *len);
bool qn_sqs_col_is (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char *s);
//  A request string parameter (nil when absent).
void qn_sqs_args_str (qn_pg_args_t *a, const qn_sqs_str_t *s);
//  Answers AWS.SimpleQueueService.NonExistentQueue.
void qn_sqs_no_queue (qn_sqs_req_t *r);
//  qn_sqs_exec, answering ServiceUnavailable when it cannot ask; frees args.
void qn_sqs_exec_or_fail (qn_sqs_codec_t *codec, qn_sqs_req_t *r, uint32_t stmt, qn_pg_args_t *args,
                          qn_sqs_result_fn *cb);
//  Answers with the operation's empty result.
void qn_sqs_reply_empty_ok (qn_sqs_req_t *r);

// ------------------------------------------------------------------ the operations
//  Each answers r exactly once. queues.c:
void qn_sqs_create (qn_sqs_codec_t *codec, qn_sqs_req_t *r);
void qn_sqs_get_url (qn_sqs_codec_t *codec, qn_sqs_req_t *r);
void qn_sqs_list (qn_sqs_codec_t *codec, qn_sqs_req_t *r);
//  DeleteQueue, PurgeQueue: one statement by queue name.
void qn_sqs_by_name (qn_sqs_codec_t *codec, qn_sqs_req_t *r, uint32_t stmt);
void qn_sqs_set_attrs (qn_sqs_codec_t *codec, qn_sqs_req_t *r);
void qn_sqs_get_attrs (qn_sqs_codec_t *codec, qn_sqs_req_t *r);
void qn_sqs_tags (qn_sqs_codec_t *codec, qn_sqs_req_t *r);
void qn_sqs_dlq_sources (qn_sqs_codec_t *codec, qn_sqs_req_t *r);
//  send.c
void qn_sqs_send (qn_sqs_codec_t *codec, qn_sqs_req_t *r);
//  receive.c, with the park callbacks of a waiting receive (arg = the codec)
void qn_sqs_receive (qn_sqs_codec_t *codec, qn_sqs_req_t *r);
void qn_sqs_receive_wake (void *arg, uint64_t id);
void qn_sqs_receive_expire (void *arg, uint64_t id);
//  handles.c: DeleteMessage(Batch), ChangeMessageVisibility(Batch)
void qn_sqs_handle_op (qn_sqs_codec_t *codec, qn_sqs_req_t *r);

#endif
