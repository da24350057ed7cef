/*  wire/kafka_group.h - Kafka consumer-group request/response layouts
    (spec kafka.md §4.7-4.12): JoinGroup v2-5, SyncGroup v0-3, Heartbeat
    v0-3, LeaveGroup v0-1, OffsetCommit v2-5, OffsetFetch v1-4, both
    directions for every advertised version (the broker decodes requests
    and encodes responses; tests do the reverse). JoinGroup metadata and
    SyncGroup assignments are opaque bytes (§4.16). Pure: no I/O, no
    logging.

    Conventions as wire/kafka_proto.h: decoders read the body after the
    request header (or the response's correlation id), put arrays in the
    caller's arena and slices into the input, and return 0, or -1 for a
    malformed body (short, bad lengths, counts larger than the bytes left,
    trailing bytes). Encoders append to a qn_buf_t and skip the fields the
    version does not have.
*/
#ifndef QN_WIRE_KAFKA_GROUP_H
#define QN_WIRE_KAFKA_GROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "wire/kafka_prim.h"

// ---------------------------------------------------------------- JoinGroup v2-5

typedef struct {
    qn_kstr_t name;
    qn_kstr_t metadata;         //  BYTES
} qn_kafka_join_protocol_t;

typedef struct {
    qn_kstr_t group_id;
    int32_t session_timeout_ms;
    int32_t rebalance_timeout_ms;
    qn_kstr_t member_id;
    qn_kstr_t group_instance_id;    //  v5+, nullable
    qn_kstr_t protocol_type;
    int32_t protocol_count;
    qn_kafka_join_protocol_t *protocols;
} qn_kafka_join_group_req_t;

typedef struct {
    qn_kstr_t member_id;
    qn_kstr_t group_instance_id;    //  v5+, nullable
    qn_kstr_t metadata;             //  BYTES
} qn_kafka_join_member_t;

typedef struct {
    int32_t throttle_time_ms;
    int16_t error_code;
    int32_t generation_id;
    qn_kstr_t protocol_name;
    qn_kstr_t leader;
    qn_kstr_t member_id;
    int32_t member_count;
    qn_kafka_join_member_t *members;
} qn_kafka_join_group_resp_t;

int qn_kafka_join_group_req_decode (int16_t v, const void *body, size_t len,
                                    qn_karena_t *arena, qn_kafka_join_group_req_t *out);
void qn_kafka_join_group_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_join_group_req_t *in);
void qn_kafka_join_group_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_join_group_resp_t *in);
int qn_kafka_join_group_resp_decode (int16_t v, const void *body, size_t len,
                                     qn_karena_t *arena, qn_kafka_join_group_resp_t *out);

// ---------------------------------------------------------------- SyncGroup v0-3

typedef struct {
    qn_kstr_t member_id;
    qn_kstr_t assignment;           //  BYTES
} qn_kafka_sync_assignment_t;

typedef struct {
    qn_kstr_t group_id;
    int32_t generation_id;
    qn_kstr_t member_id;
    qn_kstr_t group_instance_id;    //  v3+, nullable
    int32_t assignment_count;
    qn_kafka_sync_assignment_t *assignments;
} qn_kafka_sync_group_req_t;

typedef struct {
    int32_t throttle_time_ms;       //  v1+
    int16_t error_code;
    qn_kstr_t assignment;           //  BYTES
} qn_kafka_sync_group_resp_t;

int qn_kafka_sync_group_req_decode (int16_t v, const void *body, size_t len,
                                    qn_karena_t *arena, qn_kafka_sync_group_req_t *out);
void qn_kafka_sync_group_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_sync_group_req_t *in);
void qn_kafka_sync_group_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_sync_group_resp_t *in);
int qn_kafka_sync_group_resp_decode (int16_t v, const void *body, size_t len,
                                     qn_karena_t *arena, qn_kafka_sync_group_resp_t *out);

// ---------------------------------------------------------------- Heartbeat v0-3 / LeaveGroup v0-1

typedef struct {
    qn_kstr_t group_id;
    int32_t generation_id;          //  Heartbeat only
    qn_kstr_t member_id;
    qn_kstr_t group_instance_id;    //  Heartbeat v3+, nullable
} qn_kafka_heartbeat_req_t;

//  The answer of Heartbeat and LeaveGroup.
typedef struct {
    int32_t throttle_time_ms;       //  v1+
    int16_t error_code;
} qn_kafka_group_error_resp_t;

int qn_kafka_heartbeat_req_decode (int16_t v, const void *body, size_t len,
                                   qn_karena_t *arena, qn_kafka_heartbeat_req_t *out);
void qn_kafka_heartbeat_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_heartbeat_req_t *in);
//  LeaveGroup uses the Heartbeat struct (generation and instance unused).
int qn_kafka_leave_group_req_decode (int16_t v, const void *body, size_t len,
                                     qn_karena_t *arena, qn_kafka_heartbeat_req_t *out);
void qn_kafka_leave_group_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_heartbeat_req_t *in);
void qn_kafka_group_error_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_group_error_resp_t *in);
int qn_kafka_group_error_resp_decode (int16_t v, const void *body, size_t len,
                                      qn_karena_t *arena, qn_kafka_group_error_resp_t *out);

// ---------------------------------------------------------------- OffsetCommit v2-5

typedef struct {
    int32_t partition_index;
    int64_t committed_offset;
    qn_kstr_t metadata;             //  Nullable
} qn_kafka_oc_part_t;

typedef struct {
    qn_kstr_t name;
    int32_t partition_count;
    qn_kafka_oc_part_t *partitions;
} qn_kafka_oc_topic_t;

typedef struct {
    qn_kstr_t group_id;
    int32_t generation_id;
    qn_kstr_t member_id;
    int64_t retention_time_ms;      //  v2-4
    int32_t topic_count;
    qn_kafka_oc_topic_t *topics;
} qn_kafka_offset_commit_req_t;

typedef struct {
    int32_t partition_index;
    int16_t error_code;
} qn_kafka_oc_part_resp_t;

typedef struct {
    qn_kstr_t name;
    int32_t partition_count;
    qn_kafka_oc_part_resp_t *partitions;
} qn_kafka_oc_topic_resp_t;

typedef struct {
    int32_t throttle_time_ms;       //  v3+
    int32_t topic_count;
    qn_kafka_oc_topic_resp_t *topics;
} qn_kafka_offset_commit_resp_t;

int qn_kafka_offset_commit_req_decode (int16_t v, const void *body, size_t len,
                                       qn_karena_t *arena, qn_kafka_offset_commit_req_t *out);
void qn_kafka_offset_commit_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_offset_commit_req_t *in);
void qn_kafka_offset_commit_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_offset_commit_resp_t *in);
int qn_kafka_offset_commit_resp_decode (int16_t v, const void *body, size_t len,
                                        qn_karena_t *arena, qn_kafka_offset_commit_resp_t *out);

// ---------------------------------------------------------------- OffsetFetch v1-4

typedef struct {
    qn_kstr_t name;
    int32_t partition_count;
    int32_t *partitions;
} qn_kafka_of_topic_t;

typedef struct {
    qn_kstr_t group_id;
    int32_t topic_count;            //  -1 (v2+) = every committed offset
    qn_kafka_of_topic_t *topics;
} qn_kafka_offset_fetch_req_t;

typedef struct {
    int32_t partition_index;
    int64_t committed_offset;       //  -1 = none
    qn_kstr_t metadata;             //  Nullable
    int16_t error_code;
} qn_kafka_of_part_resp_t;

typedef struct {
    qn_kstr_t name;
    int32_t partition_count;
    qn_kafka_of_part_resp_t *partitions;
} qn_kafka_of_topic_resp_t;

typedef struct {
    int32_t throttle_time_ms;       //  v3+
    int32_t topic_count;
    qn_kafka_of_topic_resp_t *topics;
    int16_t error_code;             //  v2+, at the end
} qn_kafka_offset_fetch_resp_t;

int qn_kafka_offset_fetch_req_decode (int16_t v, const void *body, size_t len,
                                      qn_karena_t *arena, qn_kafka_offset_fetch_req_t *out);
void qn_kafka_offset_fetch_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_offset_fetch_req_t *in);
void qn_kafka_offset_fetch_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_offset_fetch_resp_t *in);
int qn_kafka_offset_fetch_resp_decode (int16_t v, const void *body, size_t len,
                                       qn_karena_t *arena, qn_kafka_offset_fetch_resp_t *out);

#endif
