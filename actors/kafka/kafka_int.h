/*  actors/kafka/kafka_int.h - what the Kafka codec's files share
    The codec actor "kafka" is one actor in four files, split by concern:
    codec.c (requests, answers, dispatch, lifecycle), admin.c (Metadata,
    CreateTopics / DeleteTopics, FindCoordinator, InitProducerId), fetch.c
    (ListOffsets, Fetch and its long-poll) and produce.c (Produce). Private
    to actors/kafka/.
*/
#ifndef QN_ACTORS_KAFKA_KAFKA_INT_H
#define QN_ACTORS_KAFKA_KAFKA_INT_H

#include "actors/actors.h"
#include "actors/kafka/group.h"
#include "actors/pg/call.h"
#include "actors/pg/statements.h"
#include "actors/seal/seal.h"
#include "base/hashmap.h"
#include "wire/crypto.h"
#include "wire/json.h"
#include "wire/kafka_proto.h"
#include "wire/kafka_records.h"
#include "wire/msg_committed.h"
#include "wire/msg_kafka.h"
#include "wire/msg_pg.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include "actors/door/door.h"

#define QN_KAFKA_ACCEPTOR      "kafka_acceptor"
#define QN_KAFKA_PG_TIMEOUT_MS 30000
#define QN_KAFKA_FETCH_ROWS    500             //  Records per partition and statement
#define QN_KAFKA_MAX_WAIT_MS   30000           //  Cap on a client's max_wait_ms
#define QN_KAFKA_MAX_BATCH     1048588         //  Kafka's default max.message.bytes
#define QN_KAFKA_NAME_MAX      255             //  Longest native partition name
#define QN_KAFKA_STORAGE_ERROR 56        //  Fetch: a sealed payload that does not open

typedef struct qn_kconn_s qn_kconn_t;
typedef struct qn_kreq_s qn_kreq_t;

//  One partition of a Fetch / ListOffsets: its statement's answer.
typedef struct {
    qn_kreq_t *req;
    int32_t topic, part;        //  Indexes into the request
    qn_pg_result_t res;         //  Its rows point into raw
    char *raw;                  //  Owned: a copy of the reply body
    bool done;
} qn_kpart_t;

struct qn_kreq_s {
    qn_kconn_t *conn;
    qn_kreq_t *next;
    uint32_t seq;
    char *payload;              //  Owned: the frame
    size_t len;
    qn_kafka_req_header_t h;
    const char *body;
    size_t body_len;
    qn_karena_t arena;
    union {
        qn_kafka_fetch_req_t fetch;
        qn_kafka_list_offsets_req_t lo;
        qn_kafka_metadata_req_t md;
        qn_kafka_produce_req_t pr;
        qn_kafka_create_topics_req_t ct;
        qn_kafka_delete_topics_req_t dt;
        qn_kafka_find_coordinator_req_t fc;
        qn_kafka_init_producer_id_req_t ip;
    } u;
    qn_kafka_topics_resp_t tresp;   //  CreateTopics / DeleteTopics answer
    qn_kafka_produce_resp_t presp;  //  Produce: the answer being built
    int32_t *pfirst;            //  Produce: first item of each partition (arena)
    qn_kafka_batches_t *pbs;    //  Produce: each partition's decoded batches (arena)
    uint32_t pitems;            //  Produce: records to store
    bool *tsealed;              //  Produce: per topic, its payloads get sealed (arena)
    qn_kpart_t *parts;            //  Fetch / ListOffsets partitions
    int32_t part_count;
    int32_t pending;            //  Statements in flight
    uint64_t timer;             //  Fetch wait deadline
    int64_t deadline_ms;
    bool parked;                //  A Fetch waiting for data
    bool waited;                //  Its wait is over: answer what there is
    bool woken;                 //  A "committed" for its topics came while its statements ran
};

struct qn_kconn_s {
    uint64_t id;
    qn_kreq_t *head, *tail;       //  head is in progress when busy
    bool busy;
    bool gone;                  //  Client left while a request was in flight
};

typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    qn_hashmap_t *conns;        //  id -> qn_kconn_t *
    msgpack_sbuffer exec;       //  Reused PG_EXEC body
    msgpack_sbuffer body;       //  Reused message body
    qn_crypto_keys_t *ring;     //  Opens payloads of encrypted queues (on first need)
    qn_kreq_t **parked;           //  Fetches waiting for data
    uint32_t parked_len, parked_cap;
    qn_kgroup_t *group;         //  Owned: the group coordinator (actors/kafka/group.c)
    qn_door_out_t *out;         //  Owned: answers to kafka_acceptor, held while it is full
} qn_kcodec_t;

//  Result columns of a PG_RESULT row.
static inline bool
qn_kafka_col_int (const qn_pg_result_t *res, uint32_t row, uint32_t col, int64_t *out)
{
    return qn_pg_call_int (qn_pg_result_col (res, row, col), out);
}

static inline qn_kstr_t
qn_kafka_col_str (const qn_pg_result_t *res, uint32_t row, uint32_t col)
{
    const msgpack_object *o = qn_pg_result_col (res, row, col);
    if (o && (o->type == MSGPACK_OBJECT_STR || o->type == MSGPACK_OBJECT_BIN))
        return (qn_kstr_t) { o->via.str.ptr, (int32_t) o->via.str.size };
    return QN_KSTR_NULL;
}

// ------------------------------------------------------------------ codec.c
//  Sends the answer (frame NULL: none) of the request in progress, then
//  starts the connection's next one. close: close after it.
void qn_kafka_finish (qn_kcodec_t *self, qn_kreq_t *r, qn_buf_t *frame, bool close);
//  A response frame for r: correlation id (header v0), then the body.
void qn_kafka_resp_begin (qn_buf_t *b, const qn_kreq_t *r);
void qn_kafka_part_clear (qn_kpart_t *p);
//  A waiting Fetch stops waiting (its timer cancelled).
void qn_kafka_unpark (qn_kcodec_t *self, qn_kreq_t *r);

// ------------------------------------------------------------------ admin.c
void qn_kafka_metadata (qn_kcodec_t *self, qn_kreq_t *r);
void qn_kafka_topics_admin (qn_kcodec_t *self, qn_kreq_t *r);
//  FindCoordinator / InitProducerId with a transactional id: true if answered.
bool qn_kafka_coordinator (qn_kcodec_t *self, qn_kreq_t *r);
void qn_kafka_init_producer (qn_kcodec_t *self, qn_kreq_t *r);

// ------------------------------------------------------------------ fetch.c
//  Answers a Fetch from what it has; false if it must wait.
bool qn_kafka_fetch_answer (qn_kcodec_t *self, qn_kreq_t *r);
void qn_kafka_parts_alloc (qn_kreq_t *r);
void qn_kafka_parts_run (qn_kcodec_t *self, qn_kreq_t *r);
int qn_kafka_on_committed (void *self_, const qn_env_t *env);

// ------------------------------------------------------------------ produce.c
void qn_kafka_produce (qn_kcodec_t *self, qn_kreq_t *r);

#endif
