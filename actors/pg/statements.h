/*  actors/pg/statements.h - the prepared statements pg_writer runs
    One row per statement: the SQL call (the functions themselves live in
    schema/), and the parameter types, which decide the binary encoding of
    each msgpack parameter. Numbers are append-only.
*/
#ifndef QN_ACTORS_PG_STATEMENTS_H
#define QN_ACTORS_PG_STATEMENTS_H

#include <stdint.h>

#include "wire/pg_codec.h"

#define QN_SQL_MAX_PARAMS 32

typedef enum {
    QN_SQL_RAW = 0,             //  Not prepared: SQL text comes with the request
    QN_SQL_PING,
    QN_SQL_PUSH,
    QN_SQL_POP,
    QN_SQL_POP_NS,
    QN_SQL_ACK,
    QN_SQL_RENEW,
    QN_SQL_CONFIGURE,
    QN_SQL_RETENTION,
    QN_SQL_QUEUE_DELETE,
    QN_SQL_PARTITION_DELETE,
    QN_SQL_ENSURE_SEGMENTS,
    QN_SQL_PUSH_AT,             //  queen.push with not-before instants (delayed items)
    QN_SQL_STREAMS_REGISTER,    //  Streams (schema/functions/40_streams.sql)
    QN_SQL_STREAMS_CYCLE,
    QN_SQL_STREAMS_STATE_GET,
    QN_SQL_KV_PUT,              //  State (schema/functions/30_kv.sql): kv store
    QN_SQL_KV_GET,
    QN_SQL_KV_DELETE,
    QN_SQL_KV_LIST,
    QN_SQL_TIMER_CREATE,        //  Timers
    QN_SQL_TIMER_CANCEL,
    QN_SQL_TIMER_GET,
    QN_SQL_TIMER_LIST,
    QN_SQL_TIMER_DUE,
    QN_SQL_TIMER_FIRE,
    QN_SQL_STATE_SWEEP,         //  Expired kv rows and old fired-timer records
    QN_SQL_BUNDLE,              //  Transactions with riders (schema/functions/32_bundle.sql)
    //  mesh (schema/functions/64_mesh.sql)
    QN_SQL_MESH_BEAT,           //  Register this broker, list live peers
    QN_SQL_MESH_NOTIFY,         //  Hints over LISTEN/NOTIFY when the mesh cannot carry them
    //  Kafka front door (schema/functions/60_kafka.sql)
    QN_SQL_KAFKA_TOPICS,
    QN_SQL_KAFKA_FETCH,
    QN_SQL_KAFKA_LIST_OFFSET,
    QN_SQL_KAFKA_CREATE_TOPIC,
    QN_SQL_KAFKA_DELETE_TOPIC,
    QN_SQL_KAFKA_PUSH,
    //  Kafka idempotent producer (kprod)
    QN_SQL_KAFKA_INIT_PRODUCER,
    //  SQS front door (schema/functions/62_sqs.sql)
    QN_SQL_SQS_CREATE,
    QN_SQL_SQS_QUEUE,
    QN_SQL_SQS_LIST,
    QN_SQL_SQS_SET,
    QN_SQL_SQS_TAGS,
    QN_SQL_SQS_DELETE,
    QN_SQL_SQS_PURGE,
    QN_SQL_SQS_SEND,                //  Retired: SQS sends are push items (QN_SQL_PUSH_SQS)
    QN_SQL_SQS_RECEIVE,
    QN_SQL_SQS_ACK,
    QN_SQL_SQS_VISIBILITY,
    QN_SQL_SQS_DLQ_SOURCES,
    QN_SQL_SQS_SWEEP,               //  retention actor: SQS upkeep (0011_sqs_sweep.sql)
    //  Kafka consumer groups (schema/functions/61_kafka_groups.sql)
    QN_SQL_KAFKA_OFFSET_COMMIT,
    QN_SQL_KAFKA_OFFSET_FETCH,
    //  SQS access keys per tenant (0017_sqs_keys.sql; fin)
    QN_SQL_SQS_KEY_GET,             //  codec_sqs: one key on a cache miss (pg_reader)
    QN_SQL_SQS_KEYS_ENABLED,        //  codec_sqs: every enabled key, periodically (pg_reader)
    QN_SQL_SQS_KEY_CREATE,          //  admin route (pg_writer)
    QN_SQL_SQS_KEY_LIST,            //  admin route (pg_reader)
    QN_SQL_SQS_KEY_DISABLE,         //  admin route (pg_writer)
    QN_SQL_QUEUE_ENCRYPTION,        //  kafka codec: which topics seal their Produce payloads (pg_reader)
    QN_SQL_INGEST_ROLLUP,           //  retention actor: throughput rollup (0019_ops.sql, 20_admin.sql)
    QN_SQL_PUSH_SQS,                //  pg_writer: a push batch with SQS items (63_sqs_push.sql)
    QN_SQL_COUNT_
} qn_sql_id_t;

typedef struct {
    const char *name;           //  Prepared statement name
    const char *sql;
    uint32_t nparams;
    uint32_t types [QN_SQL_MAX_PARAMS];
    //  Statements that commit messages: pg_writer publishes "committed"
    //  for the queue named in result column wake_queue_col (1-based; 0:
    //  none) of every row whose column wake_kind_col (1-based; 0: every
    //  row) says "push" or "ack"; the tenant is parameter 1.
    uint8_t wake_queue_col;
    uint8_t wake_kind_col;
    //  1-based boolean column that must be true for a row to count (0:
    //  none): an ack wakes pops only when it succeeded.
    uint8_t wake_ok_col;
} qn_sql_stmt_t;

//  The statement for `id`, or NULL.
const qn_sql_stmt_t *qn_sql_stmt (uint32_t id);

#endif
