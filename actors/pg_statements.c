/*  actors/pg_statements.c - the statement catalogue (see pg_statements.h)
    Calls only: the logic is in the plpgsql functions of schema/.
*/
#include "pg_statements.h"

#include <stddef.h>

#define T QN_OID_TEXT
#define TA QN_OID_TEXT_ARR

static const qn_sql_stmt_t s_stmts [QN_SQL_COUNT_] = {
    [QN_SQL_PING] = { "ping", "SELECT 1", 0, { 0 } },
    [QN_SQL_PUSH] = { "push",
        "SELECT ord, seq, partition_id, queue_id, duplicate"
        " FROM queen.push ($1, $2, $3, $4, $5, $6, $7, $8, $9)", 9,
        { T, TA, TA, TA, QN_OID_BYTEA_ARR, QN_OID_UUID_ARR, TA, QN_OID_BOOL_ARR, QN_OID_BOOL } },
    [QN_SQL_POP] = { "pop",
        "SELECT queue_name, partition_id, partition_name, seq, created_at, txn_id, trace_id,"
        " producer, payload, is_encrypted, lease_expires_at, next_due"
        " FROM queen.pop ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", 10,
        { T, T, T, T, T, T, QN_OID_INT4, QN_OID_INT4, QN_OID_UUID, QN_OID_BOOL } },
    [QN_SQL_POP_NS] = { "pop_ns",
        "SELECT queue_name, partition_id, partition_name, seq, created_at, txn_id, trace_id,"
        " producer, payload, is_encrypted, lease_expires_at, next_due"
        " FROM queen.pop_ns ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", 10,
        { T, T, T, T, T, T, QN_OID_INT4, QN_OID_INT4, QN_OID_UUID, QN_OID_BOOL } },
    [QN_SQL_ACK] = { "ack",
        "SELECT ord, success, error, queue_name, partition_name, lease_released, dlq"
        " FROM queen.ack ($1, $2, $3, $4, $5, $6, $7, $8)", 8,
        { T, TA, QN_OID_INT8_ARR, TA, QN_OID_INT8_ARR, TA, QN_OID_UUID_ARR, TA } },
    [QN_SQL_TXN] = { "txn",
        "SELECT kind, ord, seq, partition_id, queue_id, queue_name, success, error, dlq"
        " FROM queen.txn ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)", 16,
        { T, TA, TA, TA, QN_OID_BYTEA_ARR, QN_OID_UUID_ARR, TA, QN_OID_BOOL_ARR,
          TA, QN_OID_INT8_ARR, TA, QN_OID_INT8_ARR, TA, QN_OID_UUID_ARR, TA, QN_OID_UUID_ARR } },
    [QN_SQL_RENEW] = { "renew",
        "SELECT status, expires_at FROM queen.renew ($1, $2)", 2,
        { QN_OID_UUID, QN_OID_INT4 } },
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
};

const qn_sql_stmt_t *
qn_sql_stmt (uint32_t id)
{
    if (id == 0 || id >= QN_SQL_COUNT_ || !s_stmts [id].name)
        return NULL;
    return &s_stmts [id];
}
