/*  actors/kafka/group.h - the Kafka consumer-group coordinator
    (spec kafka.md §4.6-4.12, §6.4, §7). Runs inside the kafka codec actor
    (actors/kafka/codec.c), on its thread: the codec hands it the group
    APIs' requests and it answers each exactly once through the answer
    callback, at once or later (a held JoinGroup / SyncGroup).
    Receives  FindCoordinator (group keys), JoinGroup, SyncGroup,
              Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch requests
              from the codec; PG_RESULT replies; its own sweep timer
    Sends     PG_EXEC kafka_offset_commit (pg_writer) / kafka_offset_fetch
              (pg_reader); answers through the codec's callback
    Owns      every group's membership and state machine (memory only:
              after a restart members get 25 and rejoin), the held
              requests, the in-flight offset statements
    Failure   a malformed body answers NULL (the codec closes the
              connection); a database error or timeout answers 15
              COORDINATOR_NOT_AVAILABLE (retriable); stopping answers
              every held request with 15
*/
#ifndef QN_ACTORS_KAFKA_GROUP_H
#define QN_ACTORS_KAFKA_GROUP_H

#include "base/buf.h"
#include "kernel/config.h"
#include "kernel/kernel.h"
#include "wire/kafka_proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct qn_kgroup_s qn_kgroup_t;

//  The answer of request `req`: a response payload (correlation id, then
//  the body; the callee may take its bytes), or NULL: close the connection.
typedef void (qn_kgroup_answer_fn) (void *owner, void *req, qn_buf_t *payload);

qn_kgroup_t *qn_kgroup_new (qn_kernel_t *kernel, const qn_config_t *config,
                            qn_kgroup_answer_fn *answer, void *owner);
//  Frees everything without answering (the codec frees the requests).
void qn_kgroup_destroy (qn_kgroup_t **self_p);

//  True if the coordinator serves this request: a group API inside the
//  advertised version range, or FindCoordinator for a group key.
bool qn_kgroup_owns (int16_t api_key, int16_t api_version, const void *body, size_t len);

//  Handles one request; body stays valid until req is answered.
void qn_kgroup_request (qn_kgroup_t *self, void *req, const qn_kafka_req_header_t *h,
                        const void *body, size_t len);

//  Answers every held request with 15; later ones are not held.
void qn_kgroup_stop (qn_kgroup_t *self);

#endif
