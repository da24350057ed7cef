/*  wire/kafka_proto.c - Kafka request/response layouts (see kafka_proto.h):
    the API table, framing, headers, ApiVersions, Metadata, Produce and
    Fetch (the offset, topic and coordinator APIs are in kafka_proto_admin.c).
    Pure: no I/O, no logging. Field order and version ranges follow spec
    kafka.md §4; a `v >= N` test marks a field that exists from vN on.
*/
#include "wire/kafka_proto_impl.h"

#include <string.h>

const qn_kafka_api_t qn_kafka_apis [QN_KAFKA_API_COUNT] = {
    { QN_KAFKA_PRODUCE,          3,  7, "Produce" },
    { QN_KAFKA_FETCH,            4, 11, "Fetch" },
    { QN_KAFKA_LIST_OFFSETS,     1,  3, "ListOffsets" },
    { QN_KAFKA_METADATA,         4,  6, "Metadata" },
    { QN_KAFKA_OFFSET_COMMIT,    2,  5, "OffsetCommit" },
    { QN_KAFKA_OFFSET_FETCH,     1,  4, "OffsetFetch" },
    { QN_KAFKA_FIND_COORDINATOR, 0,  2, "FindCoordinator" },
    { QN_KAFKA_JOIN_GROUP,       2,  5, "JoinGroup" },
    { QN_KAFKA_HEARTBEAT,        0,  3, "Heartbeat" },
    { QN_KAFKA_LEAVE_GROUP,      0,  1, "LeaveGroup" },
    { QN_KAFKA_SYNC_GROUP,       0,  3, "SyncGroup" },
    { QN_KAFKA_API_VERSIONS,     0,  3, "ApiVersions" },
    { QN_KAFKA_CREATE_TOPICS,    2,  4, "CreateTopics" },
    { QN_KAFKA_DELETE_TOPICS,    0,  1, "DeleteTopics" },
    { QN_KAFKA_INIT_PRODUCER_ID, 0,  1, "InitProducerId" },
};

const qn_kafka_api_t *
qn_kafka_api_find (int16_t key)
{
    for (int i = 0; i < QN_KAFKA_API_COUNT; i++)
        if (qn_kafka_apis [i].key == key)
            return &qn_kafka_apis [i];
    return NULL;
}

bool
qn_kafka_version_ok (int16_t key, int16_t version)
{
    const qn_kafka_api_t *api = qn_kafka_api_find (key);
    return api && version >= api->min_version && version <= api->max_version;
}

// ---------------------------------------------------------------- framing

int64_t
qn_kafka_frame (const void *buf, size_t len, size_t max_payload, size_t *payload_len)
{
    if (len < 4)
        return QN_KAFKA_WIRE_INCOMPLETE;
    const uint8_t *p = buf;
    int32_t size = (int32_t) ((uint32_t) p [0] << 24 | (uint32_t) p [1] << 16
                            | (uint32_t) p [2] << 8 | p [3]);
    if (size < QN_KAFKA_FRAME_MIN || (size_t) size > max_payload)
        return QN_KAFKA_WIRE_MALFORMED;
    *payload_len = (size_t) size;
    if (len - 4 < (size_t) size)
        return QN_KAFKA_WIRE_INCOMPLETE;
    return 4 + (int64_t) size;
}

bool
qn_kafka_header_is_v2 (int16_t api_key, int16_t api_version)
{
    return api_key == QN_KAFKA_API_VERSIONS && api_version >= 3;
}

int
qn_kafka_req_header_decode (const void *payload, size_t len, qn_kafka_req_header_t *h)
{
    qn_kr_t r;
    qn_kr_init (&r, payload, len);
    h->api_key = qn_kr_i16 (&r);
    h->api_version = qn_kr_i16 (&r);
    h->correlation_id = qn_kr_i32 (&r);
    h->client_id = qn_kr_string (&r, true);
    if (!r.err && qn_kafka_header_is_v2 (h->api_key, h->api_version))
        qn_kr_tags (&r);
    return r.err ? -1 : (int) r.at;
}

void
qn_kafka_req_header_encode (qn_buf_t *b, const qn_kafka_req_header_t *h)
{
    qn_kw_i16 (b, h->api_key);
    qn_kw_i16 (b, h->api_version);
    qn_kw_i32 (b, h->correlation_id);
    qn_kw_string (b, h->client_id);
    if (qn_kafka_header_is_v2 (h->api_key, h->api_version))
        qn_kw_uvarint (b, 0);
}

size_t
qn_kafka_frame_begin (qn_buf_t *b)
{
    size_t at = b->len;
    qn_kw_i32 (b, 0);
    return at;
}

void
qn_kafka_frame_end (qn_buf_t *b, size_t at)
{
    qn_kw_put32_at (b, at, (uint32_t) (b->len - at - 4));
}

// ---------------------------------------------------------------- ApiVersions

int
qn_kafka_apiversions_req_decode (int16_t v, const void *body, size_t len,
                                 qn_kafka_apiversions_req_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->software_name = out->software_version = QN_KSTR_NULL;
    if (v >= 3) {
        out->software_name = qn_kr_compact_string (&r, false);
        out->software_version = qn_kr_compact_string (&r, false);
        qn_kr_tags (&r);
    }
    return s_done (&r);
}

void
qn_kafka_apiversions_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_apiversions_req_t *in)
{
    if (v >= 3) {
        qn_kw_compact_string (b, in->software_name);
        qn_kw_compact_string (b, in->software_version);
        qn_kw_uvarint (b, 0);
    }
}

void
qn_kafka_apiversions_resp_encode (qn_buf_t *b, int16_t v)
{
    const qn_kafka_api_t *self = qn_kafka_api_find (QN_KAFKA_API_VERSIONS);
    bool unsupported = v < 0 || v > self->max_version;
    if (unsupported)
        v = 0;
    qn_kw_i16 (b, unsupported ? QN_KAFKA_UNSUPPORTED_VERSION : QN_KAFKA_NONE);
    if (v >= 3)
        qn_kw_uvarint (b, QN_KAFKA_API_COUNT + 1);
    else
        qn_kw_i32 (b, QN_KAFKA_API_COUNT);
    for (int i = 0; i < QN_KAFKA_API_COUNT; i++) {
        qn_kw_i16 (b, qn_kafka_apis [i].key);
        qn_kw_i16 (b, qn_kafka_apis [i].min_version);
        qn_kw_i16 (b, qn_kafka_apis [i].max_version);
        if (v >= 3)
            qn_kw_uvarint (b, 0);
    }
    if (v >= 1)
        qn_kw_i32 (b, 0);
    if (v >= 3)
        qn_kw_uvarint (b, 0);
}

int
qn_kafka_apiversions_resp_decode (int16_t v, const void *body, size_t len,
                                  qn_karena_t *arena, qn_kafka_apiversions_resp_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->error_code = qn_kr_i16 (&r);
    int32_t n;
    if (v >= 3) {
        uint64_t c = qn_kr_uvarint (&r);
        if (c == 0 || c - 1 > qn_kr_left (&r) / 7) {
            r.err = true;
            c = 1;
        }
        n = (int32_t) (c - 1);
    }
    else
        n = qn_kr_array (&r, false, 6);
    out->api_count = n;
    S_ALLOC (arena, out->apis, n);
    for (int32_t i = 0; i < n; i++) {
        out->apis [i].key = qn_kr_i16 (&r);
        out->apis [i].min_version = qn_kr_i16 (&r);
        out->apis [i].max_version = qn_kr_i16 (&r);
        if (v >= 3)
            qn_kr_tags (&r);
    }
    if (v >= 1)
        out->throttle_time_ms = qn_kr_i32 (&r);
    if (v >= 3)
        qn_kr_tags (&r);
    return s_done (&r);
}

// ---------------------------------------------------------------- Metadata

int
qn_kafka_metadata_req_decode (int16_t v, const void *body, size_t len,
                              qn_karena_t *arena, qn_kafka_metadata_req_t *out)
{
    (void) v;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->topic_count = qn_kr_array (&r, true, 2);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++)
        out->topics [i] = qn_kr_string (&r, false);
    out->allow_auto_topic_creation = qn_kr_i8 (&r) != 0;
    return s_done (&r);
}

void
qn_kafka_metadata_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_metadata_req_t *in)
{
    (void) v;
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++)
        qn_kw_string (b, in->topics [i]);
    qn_kw_i8 (b, in->allow_auto_topic_creation ? 1 : 0);
}

void
qn_kafka_metadata_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_metadata_resp_t *in)
{
    qn_kw_i32 (b, in->throttle_time_ms);
    qn_kw_i32 (b, in->broker_count);
    for (int32_t i = 0; i < in->broker_count; i++) {
        const qn_kafka_broker_t *br = &in->brokers [i];
        qn_kw_i32 (b, br->node_id);
        qn_kw_string (b, br->host);
        qn_kw_i32 (b, br->port);
        qn_kw_string (b, br->rack);
    }
    qn_kw_string (b, in->cluster_id);
    qn_kw_i32 (b, in->controller_id);
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++) {
        const qn_kafka_md_topic_t *t = &in->topics [i];
        qn_kw_i16 (b, t->error_code);
        qn_kw_string (b, t->name);
        qn_kw_i8 (b, t->is_internal ? 1 : 0);
        qn_kw_i32 (b, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            const qn_kafka_md_partition_t *p = &t->partitions [j];
            qn_kw_i16 (b, p->error_code);
            qn_kw_i32 (b, p->partition_index);
            qn_kw_i32 (b, p->leader_id);
            s_write_i32_array (b, p->replicas, p->replica_count);
            s_write_i32_array (b, p->isr, p->isr_count);
            if (v >= 5)
                s_write_i32_array (b, p->offline, p->offline_count);
        }
    }
}

int
qn_kafka_metadata_resp_decode (int16_t v, const void *body, size_t len,
                               qn_karena_t *arena, qn_kafka_metadata_resp_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->throttle_time_ms = qn_kr_i32 (&r);
    out->broker_count = qn_kr_array (&r, false, 12);
    S_ALLOC (arena, out->brokers, out->broker_count);
    for (int32_t i = 0; i < out->broker_count; i++) {
        qn_kafka_broker_t *br = &out->brokers [i];
        br->node_id = qn_kr_i32 (&r);
        br->host = qn_kr_string (&r, false);
        br->port = qn_kr_i32 (&r);
        br->rack = qn_kr_string (&r, true);
    }
    out->cluster_id = qn_kr_string (&r, true);
    out->controller_id = qn_kr_i32 (&r);
    out->topic_count = qn_kr_array (&r, false, 9);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++) {
        qn_kafka_md_topic_t *t = &out->topics [i];
        t->error_code = qn_kr_i16 (&r);
        t->name = qn_kr_string (&r, false);
        t->is_internal = qn_kr_i8 (&r) != 0;
        t->partition_count = qn_kr_array (&r, false, 18);
        S_ALLOC (arena, t->partitions, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            qn_kafka_md_partition_t *p = &t->partitions [j];
            p->error_code = qn_kr_i16 (&r);
            p->partition_index = qn_kr_i32 (&r);
            p->leader_id = qn_kr_i32 (&r);
            p->replicas = s_read_i32_array (&r, arena, &p->replica_count);
            p->isr = s_read_i32_array (&r, arena, &p->isr_count);
            if (v >= 5)
                p->offline = s_read_i32_array (&r, arena, &p->offline_count);
        }
    }
    return s_done (&r);
}

// ---------------------------------------------------------------- Produce

int
qn_kafka_produce_req_decode (int16_t v, const void *body, size_t len,
                             qn_karena_t *arena, qn_kafka_produce_req_t *out)
{
    (void) v;
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->transactional_id = qn_kr_string (&r, true);
    out->acks = qn_kr_i16 (&r);
    out->timeout_ms = qn_kr_i32 (&r);
    out->topic_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++) {
        qn_kafka_produce_topic_t *t = &out->topics [i];
        t->name = qn_kr_string (&r, false);
        t->partition_count = qn_kr_array (&r, false, 8);
        S_ALLOC (arena, t->partitions, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            t->partitions [j].index = qn_kr_i32 (&r);
            t->partitions [j].records = qn_kr_bytes (&r, true);
        }
    }
    return s_done (&r);
}

void
qn_kafka_produce_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_produce_req_t *in)
{
    (void) v;
    qn_kw_string (b, in->transactional_id);
    qn_kw_i16 (b, in->acks);
    qn_kw_i32 (b, in->timeout_ms);
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++) {
        const qn_kafka_produce_topic_t *t = &in->topics [i];
        qn_kw_string (b, t->name);
        qn_kw_i32 (b, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            qn_kw_i32 (b, t->partitions [j].index);
            qn_kw_bytes (b, t->partitions [j].records);
        }
    }
}

void
qn_kafka_produce_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_produce_resp_t *in)
{
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++) {
        const qn_kafka_produce_topic_resp_t *t = &in->topics [i];
        qn_kw_string (b, t->name);
        qn_kw_i32 (b, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            const qn_kafka_produce_part_resp_t *p = &t->partitions [j];
            qn_kw_i32 (b, p->index);
            qn_kw_i16 (b, p->error_code);
            qn_kw_i64 (b, p->base_offset);
            qn_kw_i64 (b, p->log_append_time_ms);
            if (v >= 5)
                qn_kw_i64 (b, p->log_start_offset);
        }
    }
    qn_kw_i32 (b, in->throttle_time_ms);
}

int
qn_kafka_produce_resp_decode (int16_t v, const void *body, size_t len,
                              qn_karena_t *arena, qn_kafka_produce_resp_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->topic_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++) {
        qn_kafka_produce_topic_resp_t *t = &out->topics [i];
        t->name = qn_kr_string (&r, false);
        t->partition_count = qn_kr_array (&r, false, 22);
        S_ALLOC (arena, t->partitions, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            qn_kafka_produce_part_resp_t *p = &t->partitions [j];
            p->index = qn_kr_i32 (&r);
            p->error_code = qn_kr_i16 (&r);
            p->base_offset = qn_kr_i64 (&r);
            p->log_append_time_ms = qn_kr_i64 (&r);
            if (v >= 5)
                p->log_start_offset = qn_kr_i64 (&r);
        }
    }
    out->throttle_time_ms = qn_kr_i32 (&r);
    return s_done (&r);
}

// ---------------------------------------------------------------- Fetch

int
qn_kafka_fetch_req_decode (int16_t v, const void *body, size_t len,
                           qn_karena_t *arena, qn_kafka_fetch_req_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->rack_id = QN_KSTR_NULL;
    out->replica_id = qn_kr_i32 (&r);
    out->max_wait_ms = qn_kr_i32 (&r);
    out->min_bytes = qn_kr_i32 (&r);
    out->max_bytes = qn_kr_i32 (&r);
    out->isolation_level = qn_kr_i8 (&r);
    if (v >= 7) {
        out->session_id = qn_kr_i32 (&r);
        out->session_epoch = qn_kr_i32 (&r);
    }
    out->topic_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++) {
        qn_kafka_fetch_topic_t *t = &out->topics [i];
        t->topic = qn_kr_string (&r, false);
        t->partition_count = qn_kr_array (&r, false, 16);
        S_ALLOC (arena, t->partitions, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            qn_kafka_fetch_part_t *p = &t->partitions [j];
            p->partition = qn_kr_i32 (&r);
            p->current_leader_epoch = v >= 9 ? qn_kr_i32 (&r) : -1;
            p->fetch_offset = qn_kr_i64 (&r);
            p->log_start_offset = v >= 5 ? qn_kr_i64 (&r) : -1;
            p->partition_max_bytes = qn_kr_i32 (&r);
        }
    }
    if (v >= 7) {
        out->forgotten_count = qn_kr_array (&r, false, 6);
        S_ALLOC (arena, out->forgotten, out->forgotten_count);
        for (int32_t i = 0; i < out->forgotten_count; i++) {
            qn_kafka_forgotten_t *f = &out->forgotten [i];
            f->topic = qn_kr_string (&r, false);
            f->partitions = s_read_i32_array (&r, arena, &f->partition_count);
        }
    }
    if (v >= 11)
        out->rack_id = qn_kr_string (&r, false);
    return s_done (&r);
}

void
qn_kafka_fetch_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_fetch_req_t *in)
{
    qn_kw_i32 (b, in->replica_id);
    qn_kw_i32 (b, in->max_wait_ms);
    qn_kw_i32 (b, in->min_bytes);
    qn_kw_i32 (b, in->max_bytes);
    qn_kw_i8 (b, in->isolation_level);
    if (v >= 7) {
        qn_kw_i32 (b, in->session_id);
        qn_kw_i32 (b, in->session_epoch);
    }
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++) {
        const qn_kafka_fetch_topic_t *t = &in->topics [i];
        qn_kw_string (b, t->topic);
        qn_kw_i32 (b, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            const qn_kafka_fetch_part_t *p = &t->partitions [j];
            qn_kw_i32 (b, p->partition);
            if (v >= 9)
                qn_kw_i32 (b, p->current_leader_epoch);
            qn_kw_i64 (b, p->fetch_offset);
            if (v >= 5)
                qn_kw_i64 (b, p->log_start_offset);
            qn_kw_i32 (b, p->partition_max_bytes);
        }
    }
    if (v >= 7) {
        qn_kw_i32 (b, in->forgotten_count);
        for (int32_t i = 0; i < in->forgotten_count; i++) {
            qn_kw_string (b, in->forgotten [i].topic);
            s_write_i32_array (b, in->forgotten [i].partitions, in->forgotten [i].partition_count);
        }
    }
    if (v >= 11)
        qn_kw_string (b, in->rack_id.len < 0 ? QN_KSTR ("") : in->rack_id);
}

void
qn_kafka_fetch_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_fetch_resp_t *in)
{
    qn_kw_i32 (b, in->throttle_time_ms);
    if (v >= 7) {
        qn_kw_i16 (b, in->error_code);
        qn_kw_i32 (b, in->session_id);
    }
    qn_kw_i32 (b, in->topic_count);
    for (int32_t i = 0; i < in->topic_count; i++) {
        const qn_kafka_fetch_topic_resp_t *t = &in->topics [i];
        qn_kw_string (b, t->topic);
        qn_kw_i32 (b, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            const qn_kafka_fetch_part_resp_t *p = &t->partitions [j];
            qn_kw_i32 (b, p->partition_index);
            qn_kw_i16 (b, p->error_code);
            qn_kw_i64 (b, p->high_watermark);
            qn_kw_i64 (b, p->last_stable_offset);
            if (v >= 5)
                qn_kw_i64 (b, p->log_start_offset);
            qn_kw_i32 (b, p->aborted_count < 0 ? -1 : p->aborted_count);
            for (int32_t k = 0; k < p->aborted_count; k++) {
                qn_kw_i64 (b, p->aborted [k].producer_id);
                qn_kw_i64 (b, p->aborted [k].first_offset);
            }
            if (v >= 11)
                qn_kw_i32 (b, p->preferred_read_replica);
            //  Zero-length, never null, when there is nothing (§4.4).
            qn_kw_bytes (b, p->records.len < 0 ? QN_KSTR ("") : p->records);
        }
    }
}

int
qn_kafka_fetch_resp_decode (int16_t v, const void *body, size_t len,
                            qn_karena_t *arena, qn_kafka_fetch_resp_t *out)
{
    qn_kr_t r;
    qn_kr_init (&r, body, len);
    memset (out, 0, sizeof *out);
    out->throttle_time_ms = qn_kr_i32 (&r);
    if (v >= 7) {
        out->error_code = qn_kr_i16 (&r);
        out->session_id = qn_kr_i32 (&r);
    }
    out->topic_count = qn_kr_array (&r, false, 6);
    S_ALLOC (arena, out->topics, out->topic_count);
    for (int32_t i = 0; i < out->topic_count; i++) {
        qn_kafka_fetch_topic_resp_t *t = &out->topics [i];
        t->topic = qn_kr_string (&r, false);
        t->partition_count = qn_kr_array (&r, false, 34);
        S_ALLOC (arena, t->partitions, t->partition_count);
        for (int32_t j = 0; j < t->partition_count; j++) {
            qn_kafka_fetch_part_resp_t *p = &t->partitions [j];
            p->partition_index = qn_kr_i32 (&r);
            p->error_code = qn_kr_i16 (&r);
            p->high_watermark = qn_kr_i64 (&r);
            p->last_stable_offset = qn_kr_i64 (&r);
            if (v >= 5)
                p->log_start_offset = qn_kr_i64 (&r);
            p->aborted_count = qn_kr_array (&r, true, 16);
            S_ALLOC (arena, p->aborted, p->aborted_count);
            for (int32_t k = 0; k < p->aborted_count; k++) {
                p->aborted [k].producer_id = qn_kr_i64 (&r);
                p->aborted [k].first_offset = qn_kr_i64 (&r);
            }
            p->preferred_read_replica = v >= 11 ? qn_kr_i32 (&r) : -1;
            p->records = qn_kr_bytes (&r, true);
        }
    }
    return s_done (&r);
}

