/*  wire/kafka_proto.h - Kafka request/response layouts (spec kafka.md §2-4)
    Framing (INT32 size prefix with a size limit), request headers v1/v2,
    the table of the 15 advertised APIs and their version ranges, and the
    request/response codecs of ApiVersions, Metadata, Produce, Fetch and
    ListOffsets for every advertised version, both directions (the broker
    decodes requests and encodes responses; tests and load generators do
    the reverse). Pure: no I/O, no logging.

    Decoders read the body after the request header (or after the response
    header's correlation id), put arrays in the caller's arena and slices
    into the input; they return 0, or -1 for a malformed body (short,
    negative lengths, counts larger than the bytes left, trailing bytes).
    Encoders append to a qn_buf_t; fields that do not exist in the version
    asked for are skipped (each field names the versions it exists in).
*/
#ifndef QN_WIRE_KAFKA_PROTO_H
#define QN_WIRE_KAFKA_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "wire/kafka_prim.h"

// ---------------------------------------------------------------- API table

#define QN_KAFKA_PRODUCE            0
#define QN_KAFKA_FETCH              1
#define QN_KAFKA_LIST_OFFSETS       2
#define QN_KAFKA_METADATA           3
#define QN_KAFKA_OFFSET_COMMIT      8
#define QN_KAFKA_OFFSET_FETCH       9
#define QN_KAFKA_FIND_COORDINATOR   10
#define QN_KAFKA_JOIN_GROUP         11
#define QN_KAFKA_HEARTBEAT          12
#define QN_KAFKA_LEAVE_GROUP        13
#define QN_KAFKA_SYNC_GROUP         14
#define QN_KAFKA_API_VERSIONS       18
#define QN_KAFKA_CREATE_TOPICS      19
#define QN_KAFKA_DELETE_TOPICS      20
#define QN_KAFKA_INIT_PRODUCER_ID   22

typedef struct {
    int16_t key;
    int16_t min_version;
    int16_t max_version;
    const char *name;
} qn_kafka_api_t;

//  The advertised table (§3), QN_KAFKA_API_COUNT rows in key order.
#define QN_KAFKA_API_COUNT 15
extern const qn_kafka_api_t qn_kafka_apis [QN_KAFKA_API_COUNT];
//  The row of `key`, or NULL if the key is not advertised.
const qn_kafka_api_t *qn_kafka_api_find (int16_t key);
//  True if (key, version) is inside the advertised range.
bool qn_kafka_version_ok (int16_t key, int16_t version);

// ---------------------------------------------------------------- errors

#define QN_KAFKA_NONE                           0
#define QN_KAFKA_OFFSET_OUT_OF_RANGE            1
#define QN_KAFKA_CORRUPT_MESSAGE                2
#define QN_KAFKA_UNKNOWN_TOPIC_OR_PARTITION     3
#define QN_KAFKA_LEADER_NOT_AVAILABLE           5
#define QN_KAFKA_REQUEST_TIMED_OUT              7
#define QN_KAFKA_MESSAGE_TOO_LARGE              10
#define QN_KAFKA_OFFSET_METADATA_TOO_LARGE      12
#define QN_KAFKA_COORDINATOR_NOT_AVAILABLE      15
#define QN_KAFKA_NOT_COORDINATOR                16
#define QN_KAFKA_INVALID_TOPIC_EXCEPTION        17
#define QN_KAFKA_ILLEGAL_GENERATION             22
#define QN_KAFKA_INCONSISTENT_GROUP_PROTOCOL    23
#define QN_KAFKA_INVALID_GROUP_ID               24
#define QN_KAFKA_UNKNOWN_MEMBER_ID              25
#define QN_KAFKA_INVALID_SESSION_TIMEOUT        26
#define QN_KAFKA_REBALANCE_IN_PROGRESS          27
#define QN_KAFKA_UNSUPPORTED_VERSION            35
#define QN_KAFKA_TOPIC_ALREADY_EXISTS           36
#define QN_KAFKA_INVALID_PARTITIONS             37
#define QN_KAFKA_INVALID_CONFIG                 40
#define QN_KAFKA_INVALID_REQUEST                42
#define QN_KAFKA_OUT_OF_ORDER_SEQUENCE_NUMBER   45
#define QN_KAFKA_DUPLICATE_SEQUENCE_NUMBER      46
#define QN_KAFKA_INVALID_PRODUCER_EPOCH         47
#define QN_KAFKA_TRANSACTIONAL_ID_AUTH_FAILED   53
#define QN_KAFKA_UNKNOWN_PRODUCER_ID            59
#define QN_KAFKA_TOPIC_DELETION_DISABLED        73
#define QN_KAFKA_UNSUPPORTED_COMPRESSION_TYPE   76
#define QN_KAFKA_MEMBER_ID_REQUIRED             79
#define QN_KAFKA_INVALID_RECORD                 87

// ---------------------------------------------------------------- framing

#define QN_KAFKA_FRAME_MIN          8
#define QN_KAFKA_WIRE_MALFORMED     -1
#define QN_KAFKA_WIRE_INCOMPLETE    -2

//  Looks at the frame starting at buf. Returns the frame's total size
//  (4 + payload) when it is all there, QN_KAFKA_WIRE_INCOMPLETE when more
//  bytes are needed (*payload_len is set once the prefix is in), or
//  QN_KAFKA_WIRE_MALFORMED for a size < 8 or > max_payload (close).
int64_t
    qn_kafka_frame (const void *buf, size_t len, size_t max_payload, size_t *payload_len);

typedef struct {
    int16_t api_key;
    int16_t api_version;
    int32_t correlation_id;
    qn_kstr_t client_id;        //  Nullable
} qn_kafka_req_header_t;

//  True if this request uses header v2 (flexible): ApiVersions v3+ only
//  with the advertised table.
bool qn_kafka_header_is_v2 (int16_t api_key, int16_t api_version);

//  Decodes the request header at the start of a frame payload. Returns
//  the header's length (the body starts there), or -1. Only
//  api_key/version/correlation id are needed to decide anything: an
//  unknown key or version still decodes (as header v1).
int
    qn_kafka_req_header_decode (const void *payload, size_t len, qn_kafka_req_header_t *h);
void
    qn_kafka_req_header_encode (qn_buf_t *b, const qn_kafka_req_header_t *h);

//  Starts a frame: reserves the size prefix, returns where it is.
size_t qn_kafka_frame_begin (qn_buf_t *b);
//  Sets the size prefix of the frame started at `at`.
void qn_kafka_frame_end (qn_buf_t *b, size_t at);

// ---------------------------------------------------------------- ApiVersions

typedef struct {
    qn_kstr_t software_name;    //  v3+
    qn_kstr_t software_version; //  v3+
} qn_kafka_apiversions_req_t;

typedef struct {
    int16_t error_code;
    int32_t api_count;
    qn_kafka_api_t *apis;       //  name not set by the decoder
    int32_t throttle_time_ms;   //  v1+
} qn_kafka_apiversions_resp_t;

int qn_kafka_apiversions_req_decode (int16_t v, const void *body, size_t len,
                                     qn_kafka_apiversions_req_t *out);
void qn_kafka_apiversions_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_apiversions_req_t *in);
//  Our answer: the advertised table. A version above our max is answered
//  as a v0 body with error 35 (pass the requested version; §4.1).
void qn_kafka_apiversions_resp_encode (qn_buf_t *b, int16_t v);
int qn_kafka_apiversions_resp_decode (int16_t v, const void *body, size_t len,
                                      qn_karena_t *arena, qn_kafka_apiversions_resp_t *out);

// ---------------------------------------------------------------- Metadata v4-6

typedef struct {
    int32_t topic_count;        //  -1 = all topics
    qn_kstr_t *topics;
    bool allow_auto_topic_creation;
} qn_kafka_metadata_req_t;

typedef struct {
    int32_t node_id;
    qn_kstr_t host;
    int32_t port;
    qn_kstr_t rack;             //  Nullable
} qn_kafka_broker_t;

typedef struct {
    int16_t error_code;
    int32_t partition_index;
    int32_t leader_id;
    int32_t replica_count;
    int32_t *replicas;
    int32_t isr_count;
    int32_t *isr;
    int32_t offline_count;      //  v5+
    int32_t *offline;
} qn_kafka_md_partition_t;

typedef struct {
    int16_t error_code;
    qn_kstr_t name;
    bool is_internal;
    int32_t partition_count;
    qn_kafka_md_partition_t *partitions;
} qn_kafka_md_topic_t;

typedef struct {
    int32_t throttle_time_ms;
    int32_t broker_count;
    qn_kafka_broker_t *brokers;
    qn_kstr_t cluster_id;       //  Nullable
    int32_t controller_id;
    int32_t topic_count;
    qn_kafka_md_topic_t *topics;
} qn_kafka_metadata_resp_t;

int qn_kafka_metadata_req_decode (int16_t v, const void *body, size_t len,
                                  qn_karena_t *arena, qn_kafka_metadata_req_t *out);
void qn_kafka_metadata_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_metadata_req_t *in);
void qn_kafka_metadata_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_metadata_resp_t *in);
int qn_kafka_metadata_resp_decode (int16_t v, const void *body, size_t len,
                                   qn_karena_t *arena, qn_kafka_metadata_resp_t *out);

// ---------------------------------------------------------------- Produce v3-7

typedef struct {
    int32_t index;
    qn_kstr_t records;          //  RECORDS (nullable bytes)
} qn_kafka_produce_part_t;

typedef struct {
    qn_kstr_t name;
    int32_t partition_count;
    qn_kafka_produce_part_t *partitions;
} qn_kafka_produce_topic_t;

typedef struct {
    qn_kstr_t transactional_id; //  Nullable
    int16_t acks;
    int32_t timeout_ms;
    int32_t topic_count;
    qn_kafka_produce_topic_t *topics;
} qn_kafka_produce_req_t;

typedef struct {
    int32_t index;
    int16_t error_code;
    int64_t base_offset;
    int64_t log_append_time_ms;
    int64_t log_start_offset;   //  v5+
} qn_kafka_produce_part_resp_t;

typedef struct {
    qn_kstr_t name;
    int32_t partition_count;
    qn_kafka_produce_part_resp_t *partitions;
} qn_kafka_produce_topic_resp_t;

typedef struct {
    int32_t topic_count;
    qn_kafka_produce_topic_resp_t *topics;
    int32_t throttle_time_ms;   //  At the end
} qn_kafka_produce_resp_t;

int qn_kafka_produce_req_decode (int16_t v, const void *body, size_t len,
                                 qn_karena_t *arena, qn_kafka_produce_req_t *out);
void qn_kafka_produce_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_produce_req_t *in);
void qn_kafka_produce_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_produce_resp_t *in);
int qn_kafka_produce_resp_decode (int16_t v, const void *body, size_t len,
                                  qn_karena_t *arena, qn_kafka_produce_resp_t *out);

// ---------------------------------------------------------------- Fetch v4-11

typedef struct {
    int32_t partition;
    int32_t current_leader_epoch;   //  v9+
    int64_t fetch_offset;
    int64_t log_start_offset;       //  v5+
    int32_t partition_max_bytes;
} qn_kafka_fetch_part_t;

typedef struct {
    qn_kstr_t topic;
    int32_t partition_count;
    qn_kafka_fetch_part_t *partitions;
} qn_kafka_fetch_topic_t;

typedef struct {
    qn_kstr_t topic;
    int32_t partition_count;
    int32_t *partitions;
} qn_kafka_forgotten_t;

typedef struct {
    int32_t replica_id;
    int32_t max_wait_ms;
    int32_t min_bytes;
    int32_t max_bytes;
    int8_t isolation_level;
    int32_t session_id;             //  v7+
    int32_t session_epoch;          //  v7+
    int32_t topic_count;
    qn_kafka_fetch_topic_t *topics;
    int32_t forgotten_count;        //  v7+
    qn_kafka_forgotten_t *forgotten;
    qn_kstr_t rack_id;              //  v11+
} qn_kafka_fetch_req_t;

typedef struct {
    int64_t producer_id;
    int64_t first_offset;
} qn_kafka_aborted_t;

typedef struct {
    int32_t partition_index;
    int16_t error_code;
    int64_t high_watermark;
    int64_t last_stable_offset;
    int64_t log_start_offset;       //  v5+
    int32_t aborted_count;          //  -1 = null
    qn_kafka_aborted_t *aborted;
    int32_t preferred_read_replica; //  v11+
    qn_kstr_t records;              //  RECORDS; len 0 when nothing
} qn_kafka_fetch_part_resp_t;

typedef struct {
    qn_kstr_t topic;
    int32_t partition_count;
    qn_kafka_fetch_part_resp_t *partitions;
} qn_kafka_fetch_topic_resp_t;

typedef struct {
    int32_t throttle_time_ms;
    int16_t error_code;             //  v7+
    int32_t session_id;             //  v7+
    int32_t topic_count;
    qn_kafka_fetch_topic_resp_t *topics;
} qn_kafka_fetch_resp_t;

int qn_kafka_fetch_req_decode (int16_t v, const void *body, size_t len,
                               qn_karena_t *arena, qn_kafka_fetch_req_t *out);
void qn_kafka_fetch_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_fetch_req_t *in);
void qn_kafka_fetch_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_fetch_resp_t *in);
int qn_kafka_fetch_resp_decode (int16_t v, const void *body, size_t len,
                                qn_karena_t *arena, qn_kafka_fetch_resp_t *out);

// ---------------------------------------------------------------- ListOffsets v1-3

typedef struct {
    int32_t partition_index;
    int64_t timestamp;          //  -1 latest, -2 earliest, else ms
} qn_kafka_lo_part_t;

typedef struct {
    qn_kstr_t name;
    int32_t partition_count;
    qn_kafka_lo_part_t *partitions;
} qn_kafka_lo_topic_t;

typedef struct {
    int32_t replica_id;
    int8_t isolation_level;     //  v2+
    int32_t topic_count;
    qn_kafka_lo_topic_t *topics;
} qn_kafka_list_offsets_req_t;

typedef struct {
    int32_t partition_index;
    int16_t error_code;
    int64_t timestamp;
    int64_t offset;
} qn_kafka_lo_part_resp_t;

typedef struct {
    qn_kstr_t name;
    int32_t partition_count;
    qn_kafka_lo_part_resp_t *partitions;
} qn_kafka_lo_topic_resp_t;

typedef struct {
    int32_t throttle_time_ms;   //  v2+
    int32_t topic_count;
    qn_kafka_lo_topic_resp_t *topics;
} qn_kafka_list_offsets_resp_t;

int qn_kafka_list_offsets_req_decode (int16_t v, const void *body, size_t len,
                                      qn_karena_t *arena, qn_kafka_list_offsets_req_t *out);
void qn_kafka_list_offsets_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_list_offsets_req_t *in);
void qn_kafka_list_offsets_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_list_offsets_resp_t *in);
int qn_kafka_list_offsets_resp_decode (int16_t v, const void *body, size_t len,
                                       qn_karena_t *arena, qn_kafka_list_offsets_resp_t *out);

// ---------------------------------------------------------------- CreateTopics v2-4

typedef struct {
    int32_t partition_index;
    int32_t broker_count;
    int32_t *broker_ids;
} qn_kafka_ct_assign_t;

typedef struct {
    qn_kstr_t name;
    qn_kstr_t value;            //  Nullable
} qn_kafka_ct_config_t;

typedef struct {
    qn_kstr_t name;
    int32_t num_partitions;     //  -1 = broker default
    int16_t replication_factor;
    int32_t assignment_count;
    qn_kafka_ct_assign_t *assignments;
    int32_t config_count;
    qn_kafka_ct_config_t *configs;
} qn_kafka_ct_topic_t;

typedef struct {
    int32_t topic_count;
    qn_kafka_ct_topic_t *topics;
    int32_t timeout_ms;
    bool validate_only;
} qn_kafka_create_topics_req_t;

typedef struct {
    qn_kstr_t name;
    int16_t error_code;
    qn_kstr_t error_message;    //  Nullable
} qn_kafka_topic_result_t;

typedef struct {
    int32_t throttle_time_ms;   //  v1+ (CreateTopics: every advertised version)
    int32_t topic_count;
    qn_kafka_topic_result_t *topics;
} qn_kafka_topics_resp_t;

int qn_kafka_create_topics_req_decode (int16_t v, const void *body, size_t len,
                                       qn_karena_t *arena, qn_kafka_create_topics_req_t *out);
void qn_kafka_create_topics_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_create_topics_req_t *in);
void qn_kafka_create_topics_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_topics_resp_t *in);
int qn_kafka_create_topics_resp_decode (int16_t v, const void *body, size_t len,
                                        qn_karena_t *arena, qn_kafka_topics_resp_t *out);

// ---------------------------------------------------------------- FindCoordinator v0-2

typedef struct {
    qn_kstr_t key;
    int8_t key_type;            //  v1+: 0 group, 1 transaction
} qn_kafka_find_coordinator_req_t;

typedef struct {
    int32_t throttle_time_ms;   //  v1+
    int16_t error_code;
    qn_kstr_t error_message;    //  v1+, nullable
    int32_t node_id;
    qn_kstr_t host;
    int32_t port;
} qn_kafka_find_coordinator_resp_t;

int qn_kafka_find_coordinator_req_decode (int16_t v, const void *body, size_t len,
                                          qn_karena_t *arena, qn_kafka_find_coordinator_req_t *out);
void qn_kafka_find_coordinator_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_find_coordinator_req_t *in);
void qn_kafka_find_coordinator_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_find_coordinator_resp_t *in);
int qn_kafka_find_coordinator_resp_decode (int16_t v, const void *body, size_t len,
                                           qn_karena_t *arena, qn_kafka_find_coordinator_resp_t *out);

// ---------------------------------------------------------------- InitProducerId v0-1

typedef struct {
    qn_kstr_t transactional_id; //  Nullable
    int32_t transaction_timeout_ms;
} qn_kafka_init_producer_id_req_t;

typedef struct {
    int32_t throttle_time_ms;
    int16_t error_code;
    int64_t producer_id;
    int16_t producer_epoch;
} qn_kafka_init_producer_id_resp_t;

int qn_kafka_init_producer_id_req_decode (int16_t v, const void *body, size_t len,
                                          qn_karena_t *arena, qn_kafka_init_producer_id_req_t *out);
void qn_kafka_init_producer_id_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_init_producer_id_req_t *in);
void qn_kafka_init_producer_id_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_init_producer_id_resp_t *in);
int qn_kafka_init_producer_id_resp_decode (int16_t v, const void *body, size_t len,
                                           qn_karena_t *arena, qn_kafka_init_producer_id_resp_t *out);

// ---------------------------------------------------------------- DeleteTopics v0-1

typedef struct {
    int32_t topic_count;
    qn_kstr_t *topics;
    int32_t timeout_ms;
} qn_kafka_delete_topics_req_t;

//  The response uses qn_kafka_topics_resp_t without error messages;
//  throttle_time_ms exists from v1.
int qn_kafka_delete_topics_req_decode (int16_t v, const void *body, size_t len,
                                       qn_karena_t *arena, qn_kafka_delete_topics_req_t *out);
void qn_kafka_delete_topics_req_encode (qn_buf_t *b, int16_t v, const qn_kafka_delete_topics_req_t *in);
void qn_kafka_delete_topics_resp_encode (qn_buf_t *b, int16_t v, const qn_kafka_topics_resp_t *in);
int qn_kafka_delete_topics_resp_decode (int16_t v, const void *body, size_t len,
                                        qn_karena_t *arena, qn_kafka_topics_resp_t *out);

#endif
