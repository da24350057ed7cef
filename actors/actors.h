/*  actors/actors.h - one public constructor per actor
    Each returns the spawned actor (owned by the kernel) or NULL.

    Message bodies between actors are msgpack arrays, documented here once:

    pg_writer / pg_reader
      QN_MSG_PG_EXEC     [stmt_id, sql|nil, [params...]]  wire/msg_pg.h
                         (encode with qn_msg_pg_exec_encode and a
                         qn_pg_args_t; decode with qn_msg_pg_exec_decode)
      reply QN_MSG_PG_RESULT [ok, sqlstate, message, detail, [[col...]...]]
                         wire/msg_pg.h: decoded once, by qn_pg_result_decode,
                         into qn_pg_result_t. Timestamps as int64 us since
                         the Unix epoch, uuid as canonical strings, bytea as
                         bin.
      event "db"         QN_MSG_DB_HEALTH [up] (wire/msg_db.h)

    the write path (pg_writer; wire/msg_push.h, msg_spool.h, msg_maint.h)
      QN_MSG_PUSH        [tenant, flags, items] from codec_http (POST
                         /api/v1/push), codec_sqs (SendMessage(Batch),
                         items with SQS metadata) or a spool replay; Kafka
                         Produce does not use it (kafka_push, docs/kafka.md):
                         ONE answer QN_MSG_PUSH_ANSWER, per
                         item queued / duplicate / buffered, or a refusal.
                         pg_writer routes it (actors/pg/push_route.h):
                         batched into queen.push (queen.push_sqs), or
                         forwarded to the spool as QN_MSG_SPOOL_APPEND with
                         the pusher's reply_to (the spool answers the
                         pusher after fdatasync).
      QN_MSG_SPOOL_DRAINED [appends]  spool -> pg_writer: all replayed
      QN_MSG_MAINT_SET   [pop, enabled] -> pg_writer, reply and event
                         "maintenance" QN_MSG_MAINT_STATE [push, pop, gen]
      QN_MSG_SPOOL_STATS_ASK [] -> spool, reply QN_MSG_SPOOL_STATS_REPLY
      event "committed"  QN_MSG_COMMITTED (wire/msg_committed.h), published
                         through actors/pg/committed.h by whoever commits

    long-poll: parked pops live in the codec's own park table
    (actors/park/park.h, no messages); it wakes them on "committed".

    codec_http <-> jwks (access control, actors/http/auth.c): wire/msg_jwks.h
      event "jwks"       QN_MSG_JWKS_KEYS [generation, jwks json (bin)]
      QN_MSG_JWKS_REFRESH []

    codec_http -> timers: wire/msg_timer_arm.h
      QN_MSG_TIMER_ARM   [id, due_us]

    acceptor <-> codec_http: wire/msg_http.h
      QN_MSG_HTTP_REQUEST  [conn_id, seq, method, target, keep_alive,
                           [[name, value]...]] + frame: request body
      QN_MSG_HTTP_RESPONSE [conn_id, seq, close] + frame: the response;
                           at the acceptor's high-water mark the codec holds
                           responses and sends them in order on writable
      QN_MSG_HTTP_CLOSED   [conn_id]
      QN_MSG_HTTP_DRAINED  []              stopping: the codec answers parked pops
*/
#ifndef QN_ACTORS_ACTORS_H
#define QN_ACTORS_ACTORS_H

#include "kernel/kernel.h"

//  The PostgreSQL pool: `name` is "pg_writer" (hot path; batches pushes,
//  watches health and publishes "db" events) or "pg_reader" (admin reads).
qn_actor_t *qn_pg_writer_new (qn_kernel_t *kernel, const qn_config_t *config,
                              const char *name, uint32_t pool_size);
//  The broker's HTTP listener: actor "acceptor" on config->host:PORT,
//  requests to codec_http.
qn_actor_t *qn_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config);
//  Any other door on HTTP framing (SQS, the proxy, the sink's own port): an
//  acceptor actor `name` listening on config->host:`port` that sends
//  QN_MSG_HTTP_REQUEST/CLOSED/DRAINED to the actor `codec`, which answers
//  with QN_MSG_HTTP_RESPONSE to `name`. Limits come from config. Every door
//  is the door engine (actors/door/door.h) with a protocol's table.
typedef struct {
    const char *name;
    const char *codec;
    int64_t port;
} qn_http_door_t;
qn_actor_t *qn_http_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config,
                                  const qn_http_door_t *door);
//  HTTP routing and the JSON API.
qn_actor_t *qn_codec_http_new (qn_kernel_t *kernel, const qn_config_t *config);
//  The SQS front door (docs/sqs.md): codec "codec_sqs" and its acceptor
//  "sqs_acceptor" on config->host:SQS_PORT. main starts both only when
//  SQS_PORT is not 0.
qn_actor_t *qn_codec_sqs_new (qn_kernel_t *kernel, const qn_config_t *config);
qn_actor_t *qn_sqs_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config);
//  Periodic retention, eviction and segment maintenance.
qn_actor_t *qn_retention_new (qn_kernel_t *kernel, const qn_config_t *config);
//  Timers (fires due timers into their queues) and the kv/timer sweeps.
qn_actor_t *qn_timers_new (qn_kernel_t *kernel, const qn_config_t *config);
//  Disk spool for pushes while PostgreSQL is unreachable.
qn_actor_t *qn_spool_new (qn_kernel_t *kernel, const qn_config_t *config);
//  Background JWKS fetcher (JWT_JWKS_URL); idle without it.
qn_actor_t *qn_jwks_new (qn_kernel_t *kernel, const qn_config_t *config);
//  The mesh between replicas (MESH_PORT, MESH_SECRET; docs/mesh.md): latency
//  hints to and from the other brokers of the cell; idle when off.
qn_actor_t *qn_mesh_new (qn_kernel_t *kernel, const qn_config_t *config);

//  queen-proxy's forwarding actor "proxy" (actors/proxy/, proxy_int.h): the
//  codec of the HTTP door named `acceptor`; its PostgreSQL calls go to the
//  actor "proxy_pg" (qn_pg_writer_new). NULL when QUEEN_UPSTREAMS does not
//  parse (logged).
qn_actor_t *qn_proxy_new (qn_kernel_t *kernel, const qn_config_t *config, const char *acceptor);
//  queen-proxy's password hasher "proxy_hasher" (actors/proxy/hasher.c):
//  Argon2id off the proxy's loop (QN_MSG_PW_WORK -> QN_MSG_PW_DONE).
qn_actor_t *qn_proxy_hasher_new (qn_kernel_t *kernel);

//  libpq connection keywords/values for config (static storage inside
//  `store`); used by pg_writer and by main's boot connection.
typedef struct {
    const char *keys [12];
    const char *values [12];
    char port [16];
    char options [256];
    char connect_timeout [16];
} qn_pg_params_t;
void qn_pg_params (const qn_config_t *config, qn_pg_params_t *p, int connect_timeout_s);

//  The Kafka front door (actors/kafka/, docs/kafka.md): its codec
//  ("kafka") and its listener on KAFKA_PORT ("kafka_acceptor"). main
//  starts both only when KAFKA_PORT is not 0.
qn_actor_t *qn_kafka_codec_new (qn_kernel_t *kernel, const qn_config_t *config);
qn_actor_t *qn_kafka_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config);

#endif
