/*  actors/pg/statements.c - the statement catalogue (see actors/pg/statements.h)
    Calls only: the logic is in the plpgsql functions of schema/.
*/
#include "actors/pg/statements.h"

#include <stddef.h>

#define T QN_OID_TEXT
#define TA QN_OID_TEXT_ARR

static const qn_sql_stmt_t s_stmts [QN_SQL_COUNT_] = {
    [QN_SQL_PING] = { "ping", "SELECT 1", 0, { 0 } },
    [QN_SQL_PUSH] = { "push",
        "SELECT ord, seq, partition_id, queue_id, duplicate"
        " FROM queen.push ($1, $2, $3, $4, $5, $6, $7, $8, $9)", 9,
        { T, TA, TA, TA, QN_OID_BYTEA_ARR, QN_OID_UUID_ARR, TA, QN_OID_BOOL_ARR, QN_OID_BOOL } },
    //  Pops answer rows of the type queen.pop_row (schema/functions/12_pop.sql).
    [QN_SQL_POP] = { "pop",
        "SELECT * FROM queen.pop ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", 10,
        { T, T, T, T, T, T, QN_OID_INT4, QN_OID_INT4, QN_OID_UUID, QN_OID_BOOL } },
    [QN_SQL_POP_NS] = { "pop_ns",
        "SELECT * FROM queen.pop_ns ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", 10,
        { T, T, T, T, T, T, QN_OID_INT4, QN_OID_INT4, QN_OID_UUID, QN_OID_BOOL } },
    [QN_SQL_ACK] = { "ack",
        "SELECT ord, success, error, queue_name, partition_name, lease_released, dlq"
        " FROM queen.ack ($1, $2, $3, $4, $5, $6, $7, $8)", 8,
        { T, TA, QN_OID_INT8_ARR, TA, QN_OID_INT8_ARR, TA, QN_OID_UUID_ARR, TA },
        .wake_queue_col = 4, .wake_ok_col = 2 },     //  queue_name of successful acks
    [QN_SQL_RENEW] = { "renew",
        "SELECT status, expires_at FROM queen.renew ($1, $2, $3)", 3,
        { QN_OID_UUID, QN_OID_INT4, T } },         //  tenant last (tenancy)
    [QN_SQL_CONFIGURE] = { "configure",
        "SELECT queue_id, partition_id, options::text FROM queen.configure ($1, $2, $3, $4, $5::text::jsonb)", 5,
        { T, T, T, T, T } },
    [QN_SQL_RETENTION] = { "retention",
        "SELECT job, affected FROM queen.retention_run ($1)", 1, { QN_OID_INT4 } },
    [QN_SQL_QUEUE_DELETE] = { "queue_delete",
        "SELECT existed FROM queen.queue_delete ($1, $2)", 2, { T, T } },
    [QN_SQL_PARTITION_DELETE] = { "partition_delete",
        "SELECT existed FROM queen.partition_delete ($1, $2, $3)", 3, { T, T, T } },
    [QN_SQL_ENSURE_SEGMENTS] = { "ensure_segments",
        "SELECT queen.ensure_segments ()", 0, { 0 } },
    //  Not-before instants travel as int8[] of Unix epoch microseconds (the
    //  binary parameter encoder has no timestamptz[]); queen.ts_of_us converts.
    [QN_SQL_PUSH_AT] = { "push_at",
        "SELECT ord, seq, partition_id, queue_id, duplicate"
        " FROM queen.push ($1, $2, $3, $4, $5, $6, $7, $8, $9, queen.ts_of_us ($10))", 10,
        { T, TA, TA, TA, QN_OID_BYTEA_ARR, QN_OID_UUID_ARR, TA, QN_OID_BOOL_ARR, QN_OID_BOOL,
          QN_OID_INT8_ARR } },
    //  A push batch that holds SQS items: queen.push_sqs (63_sqs_push.sql)
    //  with one more array, the items' SQS metadata (JSON text or NULL).
    [QN_SQL_PUSH_SQS] = { "push_sqs",
        "SELECT ord, seq, partition_id, queue_id, duplicate"
        " FROM queen.push_sqs ($1, $2, $3, $4, $5, $6, $7, $8, $9, queen.ts_of_us ($10),"
        " $11::text[]::jsonb[])", 11,
        { T, TA, TA, TA, QN_OID_BYTEA_ARR, QN_OID_UUID_ARR, TA, QN_OID_BOOL_ARR, QN_OID_BOOL,
          QN_OID_INT8_ARR, TA } },
    [QN_SQL_STREAMS_REGISTER] = { "streams_register",
        "SELECT status, query_id, fresh, reset, old_hash FROM queen_streams.register ($1, $2, $3, $4, $5, $6)", 6,
        { T, T, T, T, T, QN_OID_BOOL } },
    [QN_SQL_STREAMS_CYCLE] = { "streams_cycle",
        "SELECT kind, ord, seq, partition_id, duplicate, queue_name, lease_released, dlq"
        " FROM queen_streams.cycle ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,"
        " queen.ts_of_us ($15), $16, $17, $18, $19, $20, $21)", 21,
        { T, QN_OID_UUID, QN_OID_UUID, T, TA, TA, TA,
          TA, TA, TA, QN_OID_BYTEA_ARR, QN_OID_UUID_ARR, TA, QN_OID_BOOL_ARR, QN_OID_INT8_ARR,
          T, QN_OID_INT8, QN_OID_UUID, T, T, QN_OID_BOOL } },
    [QN_SQL_STREAMS_STATE_GET] = { "streams_state_get",
        "SELECT key, value, updated_at FROM queen_streams.state_get ($1, $2, $3, $4, $5, $6::numeric)", 6,
        { T, QN_OID_UUID, QN_OID_UUID, TA, T, T } },
    [QN_SQL_KV_PUT] = { "kv_put",
        "SELECT status, version, expires_at, current_version FROM queen.kv_put ($1, $2, $3, $4, $5, $6)", 6,
        { T, T, T, QN_OID_BYTEA, QN_OID_INT8, QN_OID_INT4 } },
    [QN_SQL_KV_GET] = { "kv_get",
        "SELECT value, version, expires_at, updated_at FROM queen.kv_get ($1, $2, $3)", 3, { T, T, T } },
    [QN_SQL_KV_DELETE] = { "kv_delete",
        "SELECT status, version FROM queen.kv_delete ($1, $2, $3, $4)", 4, { T, T, T, QN_OID_INT8 } },
    [QN_SQL_KV_LIST] = { "kv_list",
        "SELECT key, version, expires_at, updated_at FROM queen.kv_list ($1, $2, $3, $4, $5)", 5,
        { T, T, T, T, QN_OID_INT4 } },
    [QN_SQL_TIMER_CREATE] = { "timer_create",
        "SELECT status, id, due_at, fired_at FROM queen.timer_create ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", 10,
        { T, T, T, T, QN_OID_BYTEA, T, QN_OID_BOOL, QN_OID_INT8, QN_OID_INT8, QN_OID_BYTEA } },
    [QN_SQL_TIMER_CANCEL] = { "timer_cancel",
        "SELECT status, fired_at FROM queen.timer_cancel ($1, $2)", 2, { T, T } },
    [QN_SQL_TIMER_GET] = { "timer_get",
        "SELECT queue, partition, txn_id, payload, due_at, created_at, fired_at, seq, partition_id,"
        " is_encrypted FROM queen.timer_get ($1, $2)", 2, { T, T } },
    [QN_SQL_TIMER_LIST] = { "timer_list",
        "SELECT timer_id, queue, partition, txn_id, payload, due_at, created_at, id, is_encrypted"
        " FROM queen.timer_list ($1, $2, $3, $4, $5)", 5,
        { T, T, QN_OID_INT8, QN_OID_INT8, QN_OID_INT4 } },
    [QN_SQL_TIMER_DUE] = { "timer_due",
        "SELECT id, due_at, db_now FROM queen.timer_due ($1, $2)", 2, { QN_OID_INT4, QN_OID_INT4 } },
    [QN_SQL_TIMER_FIRE] = { "timer_fire",
        "SELECT id, status, due_at, tenant, queue, error FROM queen.timer_fire ($1)", 1,
        { QN_OID_INT8_ARR } },
    [QN_SQL_STATE_SWEEP] = { "state_sweep",
        "SELECT queen.kv_sweep ($1), queen.timer_sweep ($1, $2)", 2, { QN_OID_INT4, QN_OID_INT4 } },
    [QN_SQL_BUNDLE] = { "bundle",
        "SELECT idx, kind, seq, partition_id, queue_name, dlq, version, at, status, timer_row"
        " FROM queen.bundle ($1, $2, $3, $4, $5, $6, $7, $8, $9, queen.ts_of_us ($10),"
        " $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23,"
        " $24, $25, $26, $27, $28, $29, $30, $31, $32)", 32,
        { T, TA,
          TA, TA, TA, QN_OID_BYTEA_ARR, QN_OID_UUID_ARR, TA, QN_OID_BOOL_ARR, QN_OID_INT8_ARR,
          TA, QN_OID_INT8_ARR, TA, QN_OID_INT8_ARR, TA, QN_OID_UUID_ARR, TA, QN_OID_UUID_ARR,
          TA, TA, QN_OID_BYTEA_ARR, QN_OID_INT8_ARR, QN_OID_INT4_ARR,
          TA, TA, TA, QN_OID_BYTEA_ARR, TA, QN_OID_BOOL_ARR, QN_OID_INT8_ARR, QN_OID_INT8_ARR,
          QN_OID_BYTEA_ARR },
        .wake_queue_col = 5, .wake_kind_col = 2 },     //  queue_name of push and ack rows
    //  mesh (actors/mesh/mesh.c)
    [QN_SQL_MESH_BEAT] = { "mesh_beat",
        "SELECT address, epoch, age_ms FROM queen.mesh_beat ($1, $2, $3)", 3,
        { T, QN_OID_INT8, QN_OID_INT4 } },
    [QN_SQL_MESH_NOTIFY] = { "mesh_notify", "SELECT queen.mesh_notify ($1)", 1, { T } },
    //  Kafka front door (schema/functions/60_kafka.sql, actors/kafka/codec.c)
    [QN_SQL_KAFKA_TOPICS] = { "kafka_topics",
        "SELECT name, partitions, err FROM queen.kafka_topics ($1, $2, $3, $4)", 4,
        { T, TA, QN_OID_BOOL, QN_OID_INT4 } },
    [QN_SQL_KAFKA_FETCH] = { "kafka_fetch",
        "SELECT err, hwm, log_start, koffset, ts_ms, key, value, headers, encrypted"
        " FROM queen.kafka_fetch ($1, $2, $3, $4, $5, $6)", 6,
        { T, T, QN_OID_INT4, QN_OID_INT8, QN_OID_INT4, QN_OID_INT4 } },
    [QN_SQL_KAFKA_LIST_OFFSET] = { "kafka_list_offset",
        "SELECT err, koffset, ts_ms FROM queen.kafka_list_offset ($1, $2, $3, $4)", 4,
        { T, T, QN_OID_INT4, QN_OID_INT8 } },
    [QN_SQL_KAFKA_CREATE_TOPIC] = { "kafka_create_topic",
        "SELECT queen.kafka_create_topic ($1, $2, $3, $4, $5)", 5,
        { T, T, QN_OID_INT4, QN_OID_INT4, QN_OID_BOOL } },
    [QN_SQL_KAFKA_DELETE_TOPIC] = { "kafka_delete_topic",
        "SELECT queen.kafka_delete_topic ($1, $2)", 2, { T, T } },
    [QN_SQL_KAFKA_PUSH] = { "kafka_push",
        "SELECT ord, err, queue_name, duplicate, kpart, koffset"
        " FROM queen.kafka_push ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)", 16,
        { T, TA, TA, TA, QN_OID_BYTEA_ARR, QN_OID_INT4_ARR, QN_OID_INT8_ARR, QN_OID_BYTEA_ARR,
          QN_OID_BOOL_ARR, QN_OID_BYTEA_ARR, QN_OID_INT4,
          QN_OID_INT8_ARR, QN_OID_INT4_ARR, QN_OID_INT4_ARR, QN_OID_INT4_ARR,     //  idempotence (kprod)
          QN_OID_BOOL_ARR },                                                      //  sealed payloads (fin)
        .wake_queue_col = 3 },                          //  queue_name of every row
    //  Kafka idempotent producer (kprod)
    [QN_SQL_KAFKA_INIT_PRODUCER] = { "kafka_init_producer",
        "SELECT queen.kafka_init_producer ()", 0, { 0 } },
    //  SQS front door (schema/functions/62_sqs.sql; actors/sqs/). JSON travels as text.
    [QN_SQL_SQS_CREATE] = { "sqs_create",
        "SELECT status, queue_id FROM queen.sqs_create ($1, $2, $3, $4::text::jsonb, $5::text::jsonb)", 5,
        { T, T, QN_OID_BOOL, T, T } },
    [QN_SQL_SQS_QUEUE] = { "sqs_queue",
        "SELECT queue_id, fifo, attrs::text, tags::text, created_at, modified_at, visible, inflight,"
        " delayed, secret, encrypted FROM queen.sqs_queue ($1, $2, $3)", 3, { T, T, QN_OID_BOOL } },
    [QN_SQL_SQS_LIST] = { "sqs_list",
        "SELECT name FROM queen.sqs_list ($1, $2, $3, $4)", 4, { T, T, T, QN_OID_INT4 } },
    [QN_SQL_SQS_SET] = { "sqs_set",
        "SELECT status FROM queen.sqs_set ($1, $2, $3::text::jsonb)", 3, { T, T, T } },
    [QN_SQL_SQS_TAGS] = { "sqs_tags",
        "SELECT status, tags::text FROM queen.sqs_tags ($1, $2, $3::text::jsonb, $4)", 4,
        { T, T, T, TA } },
    [QN_SQL_SQS_DELETE] = { "sqs_delete",
        "SELECT existed FROM queen.sqs_delete ($1, $2)", 2, { T, T } },
    [QN_SQL_SQS_PURGE] = { "sqs_purge",
        "SELECT status FROM queen.sqs_purge ($1, $2)", 2, { T, T } },
    [QN_SQL_SQS_RECEIVE] = { "sqs_receive",
        "SELECT partition_id, partition_name, seq, created_at, payload, receive_count, first_at,"
        " attrs::text, sys_attrs::text, group_id, dedup_id, sender_id, next_due, moved, message_id, sent_at,"
        " is_encrypted, kheaders FROM queen.sqs_receive ($1, $2, $3, $4, $5, $6, $7)", 7,
        { T, T, QN_OID_INT4, QN_OID_INT4, QN_OID_UUID, T, QN_OID_INT4 } },
    [QN_SQL_SQS_ACK] = { "sqs_ack",
        "SELECT ord, status, queue_name, ok FROM queen.sqs_ack ($1, $2, $3, $4, $5)", 5,
        { T, T, QN_OID_INT8_ARR, QN_OID_INT8_ARR, QN_OID_UUID_ARR },
        .wake_queue_col = 3, .wake_ok_col = 4 },        //  acks that released a lease
    [QN_SQL_SQS_VISIBILITY] = { "sqs_visibility",
        "SELECT ord, status, queue_name, wake FROM queen.sqs_visibility ($1, $2, $3, $4, $5, $6)", 6,
        { T, T, QN_OID_INT8_ARR, QN_OID_INT8_ARR, QN_OID_UUID_ARR, QN_OID_INT4_ARR },
        .wake_queue_col = 3, .wake_ok_col = 4 },        //  leases released (visibility 0)
    [QN_SQL_SQS_DLQ_SOURCES] = { "sqs_dlq_sources",
        "SELECT name FROM queen.sqs_dlq_sources ($1, $2)", 2, { T, T } },
    [QN_SQL_SQS_SWEEP] = { "sqs_sweep",
        "SELECT job, affected FROM queen.sqs_sweep ($1)", 1, { QN_OID_INT4 } },
    //  Kafka consumer groups (schema/functions/61_kafka_groups.sql, actors/kafka/group.c)
    [QN_SQL_KAFKA_OFFSET_COMMIT] = { "kafka_offset_commit",
        "SELECT ord, err FROM queen.kafka_offset_commit ($1, $2, $3, $4, $5, $6)", 6,
        { T, T, TA, QN_OID_INT4_ARR, QN_OID_INT8_ARR, QN_OID_BYTEA_ARR } },
    [QN_SQL_KAFKA_OFFSET_FETCH] = { "kafka_offset_fetch",
        "SELECT topic, kpart, err, koffset, metadata FROM queen.kafka_offset_fetch ($1, $2, $3, $4)", 4,
        { T, T, TA, QN_OID_INT4_ARR } },
    //  SQS access keys per tenant (0017_sqs_keys.sql; fin)
    [QN_SQL_QUEUE_ENCRYPTION] = { "queue_encryption",
        "SELECT name, encryption_enabled FROM queen.queue_encryption ($1, $2::text::jsonb)", 2, { T, T } },
    //  Throughput rollup, every 10 s (0019_ops.sql; ops2)
    [QN_SQL_INGEST_ROLLUP] = { "ingest_rollup",
        "SELECT queen._ingest_rollup ()", 0, { 0 } },
    [QN_SQL_SQS_KEY_GET] = { "sqs_key_get",
        "SELECT secret, tenant, enabled FROM queen.sqs_key_get ($1)", 1, { T } },
    [QN_SQL_SQS_KEYS_ENABLED] = { "sqs_keys_enabled",
        "SELECT access_key_id, secret, tenant FROM queen.sqs_keys_enabled ()", 0, { 0 } },
    [QN_SQL_SQS_KEY_CREATE] = { "sqs_key_create",
        "SELECT status, access_key_id, tenant, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') FROM queen.sqs_key_create ($1, $2, $3)", 3,
        { T, T, T } },
    [QN_SQL_SQS_KEY_LIST] = { "sqs_key_list",
        "SELECT access_key_id, tenant, enabled, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), to_char(disabled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') FROM queen.sqs_key_list ($1)", 1, { T } },
    [QN_SQL_SQS_KEY_DISABLE] = { "sqs_key_disable",
        "SELECT access_key_id, tenant, to_char(disabled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') FROM queen.sqs_key_disable ($1)", 1, { T } },
};

const qn_sql_stmt_t *
qn_sql_stmt (uint32_t id)
{
    if (id == 0 || id >= QN_SQL_COUNT_ || !s_stmts [id].name)
        return NULL;
    return &s_stmts [id];
}
