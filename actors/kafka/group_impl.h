/*  actors/kafka/group_impl.h - what the files of the Kafka consumer-group
    coordinator share (actors/kafka/group.c: groups, membership, the
    rebalance state machine, the entry points; group_offsets.c: offset
    commit and fetch, FindCoordinator): its state and the helpers both call. Not an API:
    see group.h.
*/
#ifndef QN_ACTORS_KAFKA_GROUP_IMPL_H
#define QN_ACTORS_KAFKA_GROUP_IMPL_H

#include "actors/kafka/group.h"
#include "wire/kafka_group.h"

#include <msgpack.h>

#define QN_KG_TICK_MS           200
#define QN_KG_PG_TIMEOUT_MS     30000
#define QN_KG_META_MAX          4096        //  Commit metadata limit (error 12)
#define QN_KG_RESERVED_GROUP    "__QUEUE_MODE__"

typedef enum { QN_KG_EMPTY, QN_KG_PREPARING, QN_KG_COMPLETING, QN_KG_STABLE } qn_kg_state_t;

typedef struct {
    char *p;                    //  Owned, NUL-terminated (ids are compared by length)
    int32_t len;
} qn_kg_str_t;

//  A request whose answer waits.
typedef struct {
    void *req;                  //  NULL: none
    int16_t version;
    int32_t corr;
} qn_kg_held_t;

typedef struct {
    qn_kg_str_t id;
    int32_t session_ms;
    int32_t rebalance_ms;
    int32_t protocol_count;
    qn_kg_str_t *names;         //  Protocol names, the member's order
    qn_kg_str_t *meta;          //  Their metadata (opaque)
    int64_t last_seen;
    uint64_t order;             //  Join order (leader choice)
    qn_kg_held_t join, sync;
    qn_kg_str_t assignment;
} qn_kg_member_t;

typedef struct {
    qn_kg_str_t id;
    int64_t expires;
} qn_kg_pending_t;

typedef struct {
    qn_kg_str_t id;
    qn_kg_state_t state;
    int32_t generation;
    qn_kg_str_t protocol_type;
    qn_kg_str_t protocol;
    qn_kg_str_t leader;
    qn_kg_member_t **members;
    uint32_t member_count, member_cap;
    qn_kg_pending_t *pending;
    uint32_t pending_count, pending_cap;
    int64_t join_deadline;
    int64_t sync_deadline;
} qn_kg_group_t;

typedef struct {
    void *req;
    qn_buf_t payload;
    bool close;
} qn_kg_out_t;

//  An OffsetCommit / OffsetFetch waiting for its statement.
typedef struct qn_kg_op_s qn_kg_op_t;
struct qn_kg_op_s {
    qn_kgroup_t *self;
    qn_kg_op_t *prev, *next;
    void *req;
    int16_t api_key, version;
    int32_t corr;
    qn_karena_t arena;
    qn_kafka_offset_commit_req_t oc;
    qn_kafka_offset_fetch_req_t of;
    qn_kafka_offset_commit_resp_t ocr;
    int32_t *item_topic, *item_part;    //  OffsetCommit: item -> (topic, partition)
    int32_t item_count;
};

struct qn_kgroup_s {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    qn_kgroup_answer_fn *answer;
    void *owner;
    qn_kg_group_t **groups;
    uint32_t group_count, group_cap;
    qn_kg_out_t *out;           //  Answers to send
    uint32_t out_len, out_cap;
    bool flushing;
    bool stopping;
    uint64_t timer;
    uint64_t next_order;
    qn_kg_op_t *ops;            //  In flight
    msgpack_sbuffer exec;
};

bool qn_kg_bad_group_id (qn_kstr_t id);

void qn_kg_find_coordinator (qn_kgroup_t *self, void *req, const qn_kafka_req_header_t *h,
                             const qn_kafka_find_coordinator_req_t *fc);

void qn_kg_flush (qn_kgroup_t *self);

qn_kg_group_t *qn_kg_group_find (qn_kgroup_t *self, qn_kstr_t id, uint32_t *index);

qn_kg_member_t *qn_kg_member_find (const qn_kg_group_t *g, qn_kstr_t id, uint32_t *index);

void qn_kg_offset_commit (qn_kgroup_t *self, qn_kg_op_t *op);

void qn_kg_offset_fetch (qn_kgroup_t *self, qn_kg_op_t *op);

void qn_kg_op_free (qn_kgroup_t *self, qn_kg_op_t *op, bool linked);

qn_kg_op_t *qn_kg_op_new (qn_kgroup_t *self, void *req, const qn_kafka_req_header_t *h);

//  Queues an answer; returns its payload, started with the correlation id.
qn_buf_t *qn_kg_out (qn_kgroup_t *self, void *req, int32_t corr);

#endif
