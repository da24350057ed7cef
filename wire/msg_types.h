/*  wire/msg_types.h - every message type, listed once
    Numbers are append-only and never reused. X-macro: one row per type
    gives its number and its name for logs.
    Retired, never to be reused: 3 (ERROR), 22 (PG_PUSH), 24 (PG_PIPELINE),
    41-42 (SPOOL_STATS, SPOOL_REPLAYED), 50 (TICK), 51 (CONFIG), 31-36 (POP_PARK, POP_RETRY, POP_CANCEL,
    POP_EXPIRED, POP_DUE, POP_SETTLED of the former lease_manager actor).
*/
#ifndef QN_WIRE_MSG_TYPES_H
#define QN_WIRE_MSG_TYPES_H

#include <stdint.h>

#define QN_MSG_LIST(X) \
    X (QN_MSG_START,          1)   /* kernel -> actor: loop is ready */ \
    X (QN_MSG_STOP,           2)   /* kernel -> actor: finish and stop */ \
    X (QN_MSG_HTTP_REQUEST,  10)   /* acceptor -> codec_http */ \
    X (QN_MSG_HTTP_RESPONSE, 11)   /* codec_http -> acceptor */ \
    X (QN_MSG_HTTP_CLOSED,   12)   /* acceptor -> codec_http: client gone */ \
    X (QN_MSG_HTTP_DRAINED,  13)   /* acceptor -> codec_http: no more requests */ \
    X (QN_MSG_PG_EXEC,       20)   /* -> pg_writer/pg_reader: run a statement */ \
    X (QN_MSG_PG_RESULT,     21)   /* reply: rows */ \
    X (QN_MSG_DB_HEALTH,     23)   /* event "db": [up] */ \
    X (QN_MSG_COMMITTED,     30)   /* event "committed" (wire/msg_committed.h) */ \
    X (QN_MSG_SPOOL_APPEND,  40)   /* pg_writer -> spool, reply to the codec (wire/msg_spool.h) */ \
    X (QN_MSG_JWKS_KEYS,     60)   /* event "jwks": [generation, jwks json (bin)] */ \
    X (QN_MSG_JWKS_REFRESH,  61)   /* codec_http -> jwks: unknown key id, fetch again soon [] */ \
    X (QN_MSG_TIMER_ARM,     62)   /* codec_http -> timers: timer created (wire/msg_timer_arm.h) */ \
    X (QN_MSG_PUSH,          100)  /* codec / spool replay -> pg_writer (wire/msg_push.h) */ \
    X (QN_MSG_PUSH_ANSWER,   101)  /* pg_writer or spool -> the pusher: one result per item */ \
    X (QN_MSG_MAINT_SET,     102)  /* system routes -> pg_writer (wire/msg_maint.h) */ \
    X (QN_MSG_MAINT_STATE,   103)  /* event "maintenance", reply to MAINT_SET */ \
    X (QN_MSG_SPOOL_STATS_ASK, 104) /* system routes -> spool (wire/msg_spool.h) */ \
    X (QN_MSG_SPOOL_STATS_REPLY, 105) /* spool -> asker: counts */ \
    X (QN_MSG_SPOOL_DRAINED, 106)  /* spool -> pg_writer: all replayed [appends] */ \
    /* kafka (200-219): wire/msg_kafka.h */ \
    X (QN_MSG_KAFKA_REQUEST, 200)  /* kafka_acceptor -> kafka: one frame (wire/msg_kafka.h) */ \
    X (QN_MSG_KAFKA_RESPONSE, 201) /* kafka -> kafka_acceptor: its answer, in order */ \
    X (QN_MSG_KAFKA_CLOSED,  202)  /* kafka_acceptor -> kafka: client gone */ \
    /* mesh (260-279): wire/msg_mesh.h */ \
    X (QN_MSG_MESH_QCONF,    260)  /* event "qconf": a queue's settings changed [tenant, queue] */ \
    X (QN_MSG_MESH_STALE,    261)  /* event "qconf": drop every cached setting [] */ \
    X (QN_MSG_MESH_STATUS,   262)  /* event "mesh": peers and hint counts [json] */ \
    X (QN_MSG_MESH_MAINT_POLL, 263) /* mesh -> pg_writer: read the maintenance flags now [] */ \
    /* 264 reserved, never reuse: EPH_CALL, the retired standalone ephemeral actor's call */ \
    X (QN_MSG_MESH_EPH,      265)  /* ephemeral table (codec_http) <-> mesh: peer operations */ \
    X (QN_MSG_MESH_GROUP,    266)  /* event "group": a consumer group deleted or sought [tenant, queue, group, what] */ \
    /* tenancy (240-259): wire/msg_password.h */ \
    X (QN_MSG_PW_WORK,       240)  /* proxy -> proxy_hasher: verify or hash a password [op, password, hash] */ \
    X (QN_MSG_PW_DONE,       241)  /* proxy_hasher -> proxy: [ok, hash] */

typedef enum {
#define QN_MSG_ENUM(name, num) name = num,
    QN_MSG_LIST (QN_MSG_ENUM)
#undef QN_MSG_ENUM
    QN_MSG_MAX_
} qn_msg_type_t;

//  Name for logs, or "unknown".
static inline const char *
qn_msg_name (uint16_t type)
{
    switch (type) {
#define QN_MSG_CASE(name, num) case num: return #name;
        QN_MSG_LIST (QN_MSG_CASE)
#undef QN_MSG_CASE
        default: return "unknown";
    }
}

#endif
