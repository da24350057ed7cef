/*  wire/kafka_proto_admin.c - Kafka request/response layouts of the
    offset, topic and coordinator APIs: ListOffsets, CreateTopics,
    DeleteTopics, FindCoordinator, InitProducerId (see kafka_proto.h; the
    framing, ApiVersions, Metadata, Produce and Fetch are in kafka_proto.c).
    Pure: no I/O, no logging. Field order and version ranges follow spec
    kafka.md §4; a `v >= N` test marks a field that exists from vN on.
*/
#include "wire/kafka_proto_impl.h"

#include <string.h>

// ---------------------------------------------------------------- ListOffsets

int
qn_kafka_list_offsets_req_decode (int16_t v, const void *body, size_t len,
                                  qn_karena_t *arena, qn_kafka_list_offsets_req_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->replica_id = qn_kr_i32 (&r);
    if (v >= 2)
        out->isolation_level = qn_kr_i8 (&r);
    out->topic_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++) {
        qn_kafka_lo_topic_t *t = &out->topics [i];
        t->name = qn_kr_string (&r, false);
        t->partition_count = qn_kr_array (&r, false, 12);
        S_ALLOC (arena, t->partitions, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            t->partitions [j].partition_index = qn_kr_i32 (&r);
            t->partitions [j].timestamp = qn_kr_i64 (&r);
        }
    }
    return s_done (&r);
}

void
qn_kafka_list_offsets_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_list_offsets_req_t *in)
{
    qn_kw_i32 (b, in->replica_id);
    if (v >= 2)
        qn_kw_i8 (b, in->isolation_level);
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++) {
        const qn_kafka_lo_topic_t *t = &in->topics [i];
        qn_kw_string (b, t->name);
        qn_kw_i32 (b, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            qn_kw_i32 (b, t->partitions [j].partition_index);
            qn_kw_i64 (b, t->partitions [j].timestamp);
        }
    }
}

void
qn_kafka_list_offsets_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_list_offsets_resp_t *in)
{
    if (v >= 2)
        qn_kw_i32 (b, in->throttle_time_ms);
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++) {
        const qn_kafka_lo_topic_resp_t *t = &in->topics [i];
        qn_kw_string (b, t->name);
        qn_kw_i32 (b, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            const qn_kafka_lo_part_resp_t *p = &t->partitions [j];
            qn_kw_i32 (b, p->partition_index);
            qn_kw_i16 (b, p->error_code);
            qn_kw_i64 (b, p->timestamp);
            qn_kw_i64 (b, p->offset);
        }
    }
}

int
qn_kafka_list_offsets_resp_decode (int16_t v, const void *body, size_t len,
                                   qn_karena_t *arena, qn_kafka_list_offsets_resp_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    if (v >= 2)
        out->throttle_time_ms = qn_kr_i32 (&r);
    out->topic_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++) {
        qn_kafka_lo_topic_resp_t *t = &out->topics [i];
        t->name = qn_kr_string (&r, false);
        t->partition_count = qn_kr_array (&r, false, 22);
        S_ALLOC (arena, t->partitions, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            qn_kafka_lo_part_resp_t *p = &t->partitions [j];
            p->partition_index = qn_kr_i32 (&r);
            p->error_code = qn_kr_i16 (&r);
            p->timestamp = qn_kr_i64 (&r);
            p->offset = qn_kr_i64 (&r);
        }
    }
    return s_done (&r);
}

// ---------------------------------------------------------------- CreateTopics

int
qn_kafka_create_topics_req_decode (int16_t v, const void *body, size_t len,
                                   qn_karena_t *arena, qn_kafka_create_topics_req_t *out)
{
    (void) v;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->topic_count = qn_kr_array (&r, false, 16);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++) {
        qn_kafka_ct_topic_t *t = &out->topics [i];
        t->name = qn_kr_string (&r, false);
        t->num_partitions = qn_kr_i32 (&r);
        t->replication_factor = qn_kr_i16 (&r);
        t->assignment_count = qn_kr_array (&r, false, 8);
        S_ALLOC (arena, t->assignments, t->assignment_count);
        for (int32_t j = 0; j < t->assignment_count; j++) {
            t->assignments [j].partition_index = qn_kr_i32 (&r);
            t->assignments [j].broker_ids = s_read_i32_array (&r, arena, &t->assignments [j].broker_count);
        }
        t->config_count = qn_kr_array (&r, false, 4);
        S_ALLOC (arena, t->configs, t->config_count);
        for (int32_t j = 0; j < t->config_count; j++) {
            t->configs [j].name = qn_kr_string (&r, false);
            t->configs [j].value = qn_kr_string (&r, true);
        }
    }
    out->timeout_ms = qn_kr_i32 (&r);
    out->validate_only = qn_kr_i8 (&r) != 0;
    return s_done (&r);
}

void
qn_kafka_create_topics_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_create_topics_req_t *in)
{
    (void) v;
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++) {
        const qn_kafka_ct_topic_t *t = &in->topics [i];
        qn_kw_string (b, t->name);
        qn_kw_i32 (b, t->num_partitions);
        qn_kw_i16 (b, t->replication_factor);
        qn_kw_i32 (b, t->assignment_count);
        for (int32_t j = 0; j < t->assignment_count; j++) {
            qn_kw_i32 (b, t->assignments [j].partition_index);
            s_write_i32_array (b, t->assignments [j].broker_ids, t->assignments [j].broker_count);
        }
        qn_kw_i32 (b, t->config_count);
        for (int32_t j = 0; j < t->config_count; j++) {
            qn_kw_string (b, t->configs [j].name);
            qn_kw_string (b, t->configs [j].value);
        }
    }
    qn_kw_i32 (b, in->timeout_ms);
    qn_kw_i8 (b, in->validate_only ? 1 : 0);
}

void
qn_kafka_create_topics_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_topics_resp_t *in)
{
    (void) v;
    qn_kw_i32 (b, in->throttle_time_ms);
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++) {
        qn_kw_string (b, in->topics [i].name);
        qn_kw_i16 (b, in->topics [i].error_code);
        qn_kw_string (b, in->topics [i].error_message);
    }
}

int
qn_kafka_create_topics_resp_decode (int16_t v, const void *body, size_t len,
                                    qn_karena_t *arena, qn_kafka_topics_resp_t *out)
{
    (void) v;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->throttle_time_ms = qn_kr_i32 (&r);
    out->topic_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++) {
        out->topics [i].name = qn_kr_string (&r, false);
        out->topics [i].error_code = qn_kr_i16 (&r);
        out->topics [i].error_message = qn_kr_string (&r, true);
    }
    return s_done (&r);
}

// ---------------------------------------------------------------- DeleteTopics

int
qn_kafka_delete_topics_req_decode (int16_t v, const void *body, size_t len,
                                   qn_karena_t *arena, qn_kafka_delete_topics_req_t *out)
{
    (void) v;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->topic_count = qn_kr_array (&r, false, 2);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++)
        out->topics [i] = qn_kr_string (&r, false);
    out->timeout_ms = qn_kr_i32 (&r);
    return s_done (&r);
}

void
qn_kafka_delete_topics_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_delete_topics_req_t *in)
{
    (void) v;
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++)
        qn_kw_string (b, in->topics [i]);
    qn_kw_i32 (b, in->timeout_ms);
}

void
qn_kafka_delete_topics_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_topics_resp_t *in)
{
    if (v >= 1)
        qn_kw_i32 (b, in->throttle_time_ms);
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++) {
        qn_kw_string (b, in->topics [i].name);
        qn_kw_i16 (b, in->topics [i].error_code);
    }
}

int
qn_kafka_delete_topics_resp_decode (int16_t v, const void *body, size_t len,
                                    qn_karena_t *arena, qn_kafka_topics_resp_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    if (v >= 1)
        out->throttle_time_ms = qn_kr_i32 (&r);
    out->topic_count = qn_kr_array (&r, false, 4);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++) {
        out->topics [i].name = qn_kr_string (&r, false);
        out->topics [i].error_code = qn_kr_i16 (&r);
        out->topics [i].error_message = QN_KSTR_NULL;
    }
    return s_done (&r);
}

// ---------------------------------------------------------------- FindCoordinator

int
qn_kafka_find_coordinator_req_decode (int16_t v, const void *body, size_t len,
                                      qn_karena_t *arena, qn_kafka_find_coordinator_req_t *out)
{
    (void) arena;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->key = qn_kr_string (&r, false);
    if (v >= 1)
        out->key_type = qn_kr_i8 (&r);
    return s_done (&r);
}

void
qn_kafka_find_coordinator_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_find_coordinator_req_t *in)
{
    qn_kw_string (b, in->key);
    if (v >= 1)
        qn_kw_i8 (b, in->key_type);
}

void
qn_kafka_find_coordinator_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_find_coordinator_resp_t *in)
{
    if (v >= 1)
        qn_kw_i32 (b, in->throttle_time_ms);
    qn_kw_i16 (b, in->error_code);
    if (v >= 1)
        qn_kw_string (b, in->error_message);
    qn_kw_i32 (b, in->node_id);
    qn_kw_string (b, in->host);
    qn_kw_i32 (b, in->port);
}

int
qn_kafka_find_coordinator_resp_decode (int16_t v, const void *body, size_t len,
                                       qn_karena_t *arena, qn_kafka_find_coordinator_resp_t *out)
{
    (void) arena;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->error_message = QN_KSTR_NULL;
    if (v >= 1)
        out->throttle_time_ms = qn_kr_i32 (&r);
    out->error_code = qn_kr_i16 (&r);
    if (v >= 1)
        out->error_message = qn_kr_string (&r, true);
    out->node_id = qn_kr_i32 (&r);
    out->host = qn_kr_string (&r, false);
    out->port = qn_kr_i32 (&r);
    return s_done (&r);
}

// ---------------------------------------------------------------- InitProducerId

int
qn_kafka_init_producer_id_req_decode (int16_t v, const void *body, size_t len,
                                      qn_karena_t *arena, qn_kafka_init_producer_id_req_t *out)
{
    (void) v;
    (void) arena;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->transactional_id = qn_kr_string (&r, true);
    out->transaction_timeout_ms = qn_kr_i32 (&r);
    return s_done (&r);
}

void
qn_kafka_init_producer_id_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_init_producer_id_req_t *in)
{
    (void) v;
    qn_kw_string (b, in->transactional_id);
    qn_kw_i32 (b, in->transaction_timeout_ms);
}

void
qn_kafka_init_producer_id_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_init_producer_id_resp_t *in)
{
    (void) v;
    qn_kw_i32 (b, in->throttle_time_ms);
    qn_kw_i16 (b, in->error_code);
    qn_kw_i64 (b, in->producer_id);
    qn_kw_i16 (b, in->producer_epoch);
}

int
qn_kafka_init_producer_id_resp_decode (int16_t v, const void *body, size_t len,
                                       qn_karena_t *arena, qn_kafka_init_producer_id_resp_t *out)
{
    (void) v;
    (void) arena;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->throttle_time_ms = qn_kr_i32 (&r);
    out->error_code = qn_kr_i16 (&r);
    out->producer_id = qn_kr_i64 (&r);
    out->producer_epoch = qn_kr_i16 (&r);
    return s_done (&r);
}
