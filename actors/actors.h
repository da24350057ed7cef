/*  actors/actors.h - one public constructor per actor
    Each returns the spawned actor (owned by the kernel) or NULL.

    Message bodies between actors are msgpack arrays, documented here once:

    pg_writer / pg_reader
      QN_MSG_PG_EXEC     [stmt_id, sql|nil, [params...]]  wire/msg_pg.h
                         (encode with qn_msg_pg_exec_encode and a
                         qn_pg_args_t; decode with qn_msg_pg_exec_decode)
      QN_MSG_PG_PUSH     [tenant, [[queue, partition, txn|nil, payload(bin),
                         trace|nil, producer|nil, encrypted], ...]]
                         merged with concurrent pushes into one queen.push.
      reply QN_MSG_PG_RESULT [ok, sqlstate, message, detail, [[col...]...]]
                         wire/msg_pg.h: decoded once, by qn_pg_result_decode,
                         into qn_pg_result_t. For PG_PUSH the
                         rows are [ord, seq, partition_id, queue_id,
                         duplicate] with ord 1-based within the request.
      event "db"         QN_MSG_DB_HEALTH [up]

    codec_http <-> lease_manager (long-poll; details in lease_manager.c)
      QN_MSG_POP_PARK    [ctx_id, tenant, queue|nil, partition|nil,
                         namespace|nil, task|nil, group, deadline_ms,
                         next_due_us|nil, pop_started_us]
      QN_MSG_POP_CANCEL  [ctx_id]           client gone while parked
      QN_MSG_POP_SETTLED [ctx_id, found]    a woken pop ended without parking
      QN_MSG_POP_RETRY   [ctx_id]           run the pop again
      QN_MSG_POP_EXPIRED [ctx_id]           deadline: answer empty
      event "committed"  QN_MSG_COMMITTED [tenant, queue(, partition)]

    codec_http <-> spool
      QN_MSG_SPOOL_APPEND [tenant, items]   items as in PG_PUSH, every txn set;
                         reply PG_RESULT after fdatasync
      event "spool"      QN_MSG_SPOOL_STATS [pending, failed]
      event "maintenance" QN_MSG_CONFIG [push, pop]

    codec_http <-> jwks (access control, actors/http/auth.c): wire/msg_jwks.h
      event "jwks"       QN_MSG_JWKS_KEYS [generation, jwks json (bin)]
      QN_MSG_JWKS_REFRESH []

    codec_http -> timer_wheel: wire/msg_timer.h
      QN_MSG_TIMER_ARM   [id, due_us]

    acceptor <-> codec_http: wire/msg_http.h
      QN_MSG_HTTP_REQUEST  [conn_id, seq, method, target, keep_alive,
                           [[name, value]...]] + frame: request body
      QN_MSG_HTTP_RESPONSE [conn_id, seq, close] + frame: the response;
                           at the acceptor's high-water mark the codec holds
                           responses and sends them in order on writable
      QN_MSG_HTTP_CLOSED   [conn_id]
      QN_MSG_HTTP_DRAINED  []              also the codec's "http.drained"
*/
#ifndef QN_ACTORS_ACTORS_H
#define QN_ACTORS_ACTORS_H

#include "kernel/kernel.h"

//  The PostgreSQL pool: `name` is "pg_writer" (hot path; batches pushes,
//  watches health and publishes "db" events) or "pg_reader" (admin reads).
qn_actor_t *qn_pg_writer_new (qn_kernel_t *kernel, const qn_config_t *config,
                              const char *name, uint32_t pool_size);
//  HTTP listener on config->host:port (or `port` when non-zero).
qn_actor_t *qn_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config);
//  HTTP routing and the JSON API.
qn_actor_t *qn_codec_http_new (qn_kernel_t *kernel, const qn_config_t *config);
//  Parked long-poll pops.
qn_actor_t *qn_lease_manager_new (qn_kernel_t *kernel, const qn_config_t *config);
//  Periodic retention, eviction and segment maintenance.
qn_actor_t *qn_retention_new (qn_kernel_t *kernel, const qn_config_t *config);
//  Timers (fires due timers into their queues) and the kv/timer sweeps.
qn_actor_t *qn_timer_wheel_new (qn_kernel_t *kernel, const qn_config_t *config);
//  Disk spool for pushes while PostgreSQL is unreachable. Still weak only
//  because the codec's spool-state code and push.c test `if (qn_spool_new)`;
//  the write path removes those checks, then this attribute goes.
qn_actor_t *qn_spool_new (qn_kernel_t *kernel, const qn_config_t *config)
    __attribute__ ((weak));
//  Background JWKS fetcher (JWT_JWKS_URL); idle without it.
qn_actor_t *qn_jwks_new (qn_kernel_t *kernel, const qn_config_t *config);

//  libpq connection keywords/values for config (static storage inside
//  `store`); used by pg_writer and by main's boot connection.
typedef struct {
    const char *keys [12];
    const char *values [12];
    char port [16];
    char options [256];
} qn_pg_params_t;
void qn_pg_params (const qn_config_t *config, qn_pg_params_t *p, int connect_timeout_s);

#endif
