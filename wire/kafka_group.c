/*  wire/kafka_group.c - Kafka consumer-group layouts (see wire/kafka_group.h)
*/
#include "wire/kafka_group.h"

#include <string.h>

#define S_ALLOC(arena, ptr, n) \
    ((ptr) = (n) > 0 ? qn_karena_alloc ((arena), (size_t) (n) * sizeof *(ptr)) : NULL)

static int
s_done (const qn_kr_t *r)
{
    return r->err || r->at != r->len ? -1 : 0;
}

// ---------------------------------------------------------------- JoinGroup

int
qn_kafka_join_group_req_decode (int16_t v, const void *body, size_t len,
                                qn_karena_t *arena, qn_kafka_join_group_req_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->group_instance_id = QN_KSTR_NULL;
    out->group_id = qn_kr_string (&r, false);
    out->session_timeout_ms = qn_kr_i32 (&r);
    out->rebalance_timeout_ms = qn_kr_i32 (&r);
    out->member_id = qn_kr_string (&r, false);
    if (v >= 5)
        out->group_instance_id = qn_kr_string (&r, true);
    out->protocol_type = qn_kr_string (&r, false);
    out->protocol_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->protocols, out->protocol_count);
    for (int32_t i = 0; i < out->protocol_count; i++) {
        out->protocols [i].name = qn_kr_string (&r, false);
        out->protocols [i].metadata = qn_kr_bytes (&r, false);
    }
    return s_done (&r);
}

void
qn_kafka_join_group_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_join_group_req_t *in)
{
    qn_kw_string (b, in->group_id);
    qn_kw_i32 (b, in->session_timeout_ms);
    qn_kw_i32 (b, in->rebalance_timeout_ms);
    qn_kw_string (b, in->member_id);
    if (v >= 5)
        qn_kw_string (b, in->group_instance_id);
    qn_kw_string (b, in->protocol_type);
    qn_kw_i32 (b, in->protocol_count);
    for (int32_t i = 0; i < in->protocol_count; i++) {
        qn_kw_string (b, in->protocols [i].name);
        qn_kw_bytes (b, in->protocols [i].metadata);
    }
}

void
qn_kafka_join_group_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_join_group_resp_t *in)
{
    qn_kw_i32 (b, in->throttle_time_ms);
    qn_kw_i16 (b, in->error_code);
    qn_kw_i32 (b, in->generation_id);
    qn_kw_string (b, in->protocol_name);
    qn_kw_string (b, in->leader);
    qn_kw_string (b, in->member_id);
    qn_kw_i32 (b, in->member_count);
    for (int32_t i = 0; i < in->member_count; i++) {
        qn_kw_string (b, in->members [i].member_id);
        if (v >= 5)
            qn_kw_string (b, in->members [i].group_instance_id);
        qn_kw_bytes (b, in->members [i].metadata);
    }
}

int
qn_kafka_join_group_resp_decode (int16_t v, const void *body, size_t len,
                                 qn_karena_t *arena, qn_kafka_join_group_resp_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->throttle_time_ms = qn_kr_i32 (&r);
    out->error_code = qn_kr_i16 (&r);
    out->generation_id = qn_kr_i32 (&r);
    out->protocol_name = qn_kr_string (&r, false);
    out->leader = qn_kr_string (&r, false);
    out->member_id = qn_kr_string (&r, false);
    out->member_count = qn_kr_array (&r, false, v >= 5 ? 8 : 6);
    S_ALLOC (arena, out->members, out->member_count);
    for (int32_t i = 0; i < out->member_count; i++) {
        out->members [i].member_id = qn_kr_string (&r, false);
        out->members [i].group_instance_id = v >= 5 ? qn_kr_string (&r, true) : QN_KSTR_NULL;
        out->members [i].metadata = qn_kr_bytes (&r, false);
    }
    return s_done (&r);
}

// ---------------------------------------------------------------- SyncGroup

int
qn_kafka_sync_group_req_decode (int16_t v, const void *body, size_t len,
                                qn_karena_t *arena, qn_kafka_sync_group_req_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->group_instance_id = QN_KSTR_NULL;
    out->group_id = qn_kr_string (&r, false);
    out->generation_id = qn_kr_i32 (&r);
    out->member_id = qn_kr_string (&r, false);
    if (v >= 3)
        out->group_instance_id = qn_kr_string (&r, true);
    out->assignment_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->assignments, out->assignment_count);
    for (int32_t i = 0; i < out->assignment_count; i++) {
        out->assignments [i].member_id = qn_kr_string (&r, false);
        out->assignments [i].assignment = qn_kr_bytes (&r, false);
    }
    return s_done (&r);
}

void
qn_kafka_sync_group_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_sync_group_req_t *in)
{
    qn_kw_string (b, in->group_id);
    qn_kw_i32 (b, in->generation_id);
    qn_kw_string (b, in->member_id);
    if (v >= 3)
        qn_kw_string (b, in->group_instance_id);
    qn_kw_i32 (b, in->assignment_count);
    for (int32_t i = 0; i < in->assignment_count; i++) {
        qn_kw_string (b, in->assignments [i].member_id);
        qn_kw_bytes (b, in->assignments [i].assignment);
    }
}

void
qn_kafka_sync_group_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_sync_group_resp_t *in)
{
    if (v >= 1)
        qn_kw_i32 (b, in->throttle_time_ms);
    qn_kw_i16 (b, in->error_code);
    qn_kw_bytes (b, in->assignment);
}

int
qn_kafka_sync_group_resp_decode (int16_t v, const void *body, size_t len,
                                 qn_karena_t *arena, qn_kafka_sync_group_resp_t *out)
{
    (void) arena;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    if (v >= 1)
        out->throttle_time_ms = qn_kr_i32 (&r);
    out->error_code = qn_kr_i16 (&r);
    out->assignment = qn_kr_bytes (&r, false);
    return s_done (&r);
}

// ---------------------------------------------------------------- Heartbeat / LeaveGroup

int
qn_kafka_heartbeat_req_decode (int16_t v, const void *body, size_t len,
                               qn_karena_t *arena, qn_kafka_heartbeat_req_t *out)
{
    (void) arena;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->group_instance_id = QN_KSTR_NULL;
    out->group_id = qn_kr_string (&r, false);
    out->generation_id = qn_kr_i32 (&r);
    out->member_id = qn_kr_string (&r, false);
    if (v >= 3)
        out->group_instance_id = qn_kr_string (&r, true);
    return s_done (&r);
}

void
qn_kafka_heartbeat_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_heartbeat_req_t *in)
{
    qn_kw_string (b, in->group_id);
    qn_kw_i32 (b, in->generation_id);
    qn_kw_string (b, in->member_id);
    if (v >= 3)
        qn_kw_string (b, in->group_instance_id);
}

int
qn_kafka_leave_group_req_decode (int16_t v, const void *body, size_t len,
                                 qn_karena_t *arena, qn_kafka_heartbeat_req_t *out)
{
    (void) v;
    (void) arena;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->group_instance_id = QN_KSTR_NULL;
    out->group_id = qn_kr_string (&r, false);
    out->member_id = qn_kr_string (&r, false);
    return s_done (&r);
}

void
qn_kafka_leave_group_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_heartbeat_req_t *in)
{
    (void) v;
    qn_kw_string (b, in->group_id);
    qn_kw_string (b, in->member_id);
}

void
qn_kafka_group_error_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_group_error_resp_t *in)
{
    if (v >= 1)
        qn_kw_i32 (b, in->throttle_time_ms);
    qn_kw_i16 (b, in->error_code);
}

int
qn_kafka_group_error_resp_decode (int16_t v, const void *body, size_t len,
                                  qn_karena_t *arena, qn_kafka_group_error_resp_t *out)
{
    (void) arena;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    if (v >= 1)
        out->throttle_time_ms = qn_kr_i32 (&r);
    out->error_code = qn_kr_i16 (&r);
    return s_done (&r);
}

// ---------------------------------------------------------------- OffsetCommit

int
qn_kafka_offset_commit_req_decode (int16_t v, const void *body, size_t len,
                                   qn_karena_t *arena, qn_kafka_offset_commit_req_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->group_id = qn_kr_string (&r, false);
    out->generation_id = qn_kr_i32 (&r);
    out->member_id = qn_kr_string (&r, false);
    if (v <= 4)
        out->retention_time_ms = qn_kr_i64 (&r);
    out->topic_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t t = 0; t < out->topic_count; t++) {
        qn_kafka_oc_topic_t *tp = &out->topics [t];
        tp->name = qn_kr_string (&r, false);
        tp->partition_count = qn_kr_array (&r, false, 14);
        S_ALLOC (arena, tp->partitions, tp->partition_count);
        for (int32_t p = 0; p < tp->partition_count; p++) {
            tp->partitions [p].partition_index = qn_kr_i32 (&r);
            tp->partitions [p].committed_offset = qn_kr_i64 (&r);
            tp->partitions [p].metadata = qn_kr_string (&r, true);
        }
    }
    return s_done (&r);
}

void
qn_kafka_offset_commit_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_offset_commit_req_t *in)
{
    qn_kw_string (b, in->group_id);
    qn_kw_i32 (b, in->generation_id);
    qn_kw_string (b, in->member_id);
    if (v <= 4)
        qn_kw_i64 (b, in->retention_time_ms);
    qn_kw_i32 (b, in->topic_count);
    for (int32_t t = 0; t < in->topic_count; t++) {
        const qn_kafka_oc_topic_t *tp = &in->topics [t];
        qn_kw_string (b, tp->name);
        qn_kw_i32 (b, tp->partition_count);
        for (int32_t p = 0; p < tp->partition_count; p++) {
            qn_kw_i32 (b, tp->partitions [p].partition_index);
            qn_kw_i64 (b, tp->partitions [p].committed_offset);
            qn_kw_string (b, tp->partitions [p].metadata);
        }
    }
}

void
qn_kafka_offset_commit_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_offset_commit_resp_t *in)
{
    if (v >= 3)
        qn_kw_i32 (b, in->throttle_time_ms);
    qn_kw_i32 (b, in->topic_count);
    for (int32_t t = 0; t < in->topic_count; t++) {
        const qn_kafka_oc_topic_resp_t *tp = &in->topics [t];
        qn_kw_string (b, tp->name);
        qn_kw_i32 (b, tp->partition_count);
        for (int32_t p = 0; p < tp->partition_count; p++) {
            qn_kw_i32 (b, tp->partitions [p].partition_index);
            qn_kw_i16 (b, tp->partitions [p].error_code);
        }
    }
}

int
qn_kafka_offset_commit_resp_decode (int16_t v, const void *body, size_t len,
                                    qn_karena_t *arena, qn_kafka_offset_commit_resp_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    if (v >= 3)
        out->throttle_time_ms = qn_kr_i32 (&r);
    out->topic_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t t = 0; t < out->topic_count; t++) {
        qn_kafka_oc_topic_resp_t *tp = &out->topics [t];
        tp->name = qn_kr_string (&r, false);
        tp->partition_count = qn_kr_array (&r, false, 6);
        S_ALLOC (arena, tp->partitions, tp->partition_count);
        for (int32_t p = 0; p < tp->partition_count; p++) {
            tp->partitions [p].partition_index = qn_kr_i32 (&r);
            tp->partitions [p].error_code = qn_kr_i16 (&r);
        }
    }
    return s_done (&r);
}

// ---------------------------------------------------------------- OffsetFetch

int
qn_kafka_offset_fetch_req_decode (int16_t v, const void *body, size_t len,
                                  qn_karena_t *arena, qn_kafka_offset_fetch_req_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->group_id = qn_kr_string (&r, false);
    out->topic_count = qn_kr_array (&r, v >= 2, 6);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t t = 0; t < out->topic_count; t++) {
        qn_kafka_of_topic_t *tp = &out->topics [t];
        tp->name = qn_kr_string (&r, false);
        tp->partition_count = qn_kr_array (&r, false, 4);
        S_ALLOC (arena, tp->partitions, tp->partition_count);
        for (int32_t p = 0; p < tp->partition_count; p++)
            tp->partitions [p] = qn_kr_i32 (&r);
    }
    return s_done (&r);
}

void
qn_kafka_offset_fetch_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_offset_fetch_req_t *in)
{
    (void) v;
    qn_kw_string (b, in->group_id);
    qn_kw_i32 (b, in->topic_count);
    for (int32_t t = 0; t < in->topic_count; t++) {
        qn_kw_string (b, in->topics [t].name);
        qn_kw_i32 (b, in->topics [t].partition_count);
        for (int32_t p = 0; p < in->topics [t].partition_count; p++)
            qn_kw_i32 (b, in->topics [t].partitions [p]);
    }
}

void
qn_kafka_offset_fetch_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_offset_fetch_resp_t *in)
{
    if (v >= 3)
        qn_kw_i32 (b, in->throttle_time_ms);
    qn_kw_i32 (b, in->topic_count);
    for (int32_t t = 0; t < in->topic_count; t++) {
        const qn_kafka_of_topic_resp_t *tp = &in->topics [t];
        qn_kw_string (b, tp->name);
        qn_kw_i32 (b, tp->partition_count);
        for (int32_t p = 0; p < tp->partition_count; p++) {
            qn_kw_i32 (b, tp->partitions [p].partition_index);
            qn_kw_i64 (b, tp->partitions [p].committed_offset);
            qn_kw_string (b, tp->partitions [p].metadata);
            qn_kw_i16 (b, tp->partitions [p].error_code);
        }
    }
    if (v >= 2)
        qn_kw_i16 (b, in->error_code);
}

int
qn_kafka_offset_fetch_resp_decode (int16_t v, const void *body, size_t len,
                                   qn_karena_t *arena, qn_kafka_offset_fetch_resp_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    if (v >= 3)
        out->throttle_time_ms = qn_kr_i32 (&r);
    out->topic_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t t = 0; t < out->topic_count; t++) {
        qn_kafka_of_topic_resp_t *tp = &out->topics [t];
        tp->name = qn_kr_string (&r, false);
        tp->partition_count = qn_kr_array (&r, false, 16);
        S_ALLOC (arena, tp->partitions, tp->partition_count);
        for (int32_t p = 0; p < tp->partition_count; p++) {
            tp->partitions [p].partition_index = qn_kr_i32 (&r);
            tp->partitions [p].committed_offset = qn_kr_i64 (&r);
            tp->partitions [p].metadata = qn_kr_string (&r, true);
            tp->partitions [p].error_code = qn_kr_i16 (&r);
        }
    }
    if (v >= 2)
        out->error_code = qn_kr_i16 (&r);
    return s_done (&r);
}
