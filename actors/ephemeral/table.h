/*  actors/ephemeral/table.h - the ephemeral queues' table (docs/ephemeral.md)
    A library run in its host actor's thread (as the park table is): the
    host passes it every call and every peer operation, and it answers
    each call exactly once through def->answer, at once or later (a
    waiting receive, request or poll). Timers go on the host's loop; peer
    operations go to the mesh as QN_MSG_MESH_EPH.
*/
#ifndef QN_ACTORS_EPHEMERAL_TABLE_H
#define QN_ACTORS_EPHEMERAL_TABLE_H

#include "kernel/kernel.h"
#include "wire/msg_ephemeral.h"

typedef struct qn_eph qn_eph_t;

//  Answers the call (reply_to, corr) given to qn_eph_call: an HTTP status
//  and a JSON body ("" for 204).
typedef void (qn_eph_answer_fn) (void *arg, const char *reply_to, uint64_t corr, int status,
                                 const char *json, size_t len);
typedef struct {
    qn_eph_answer_fn *answer;
    void *arg;
    //  true: the peer operations of one pass of the host's loop leave as
    //  one QN_MSG_MESH_EPH at its end (with the WANTs); false: each leaves
    //  at once, in a message of its own.
    bool coalesce;
} qn_eph_def_t;

//  Called from the host's thread (its constructor or START handler).
qn_eph_t *qn_eph_new (qn_kernel_t *kernel, const qn_config_t *config, const qn_eph_def_t *def);
void qn_eph_destroy (qn_eph_t **self_p);
//  Arms the 1 s WANT repeat; from the host's thread (START).
void qn_eph_start (qn_eph_t *self);
//  One operation of docs/ephemeral.md (wire/msg_ephemeral.h). Answers
//  through def->answer with (reply_to, corr), before returning (NULL) or
//  later: then it returns a handle of the waiting call, valid until it is
//  answered, for qn_eph_cancel.
void *qn_eph_call (qn_eph_t *self, const qn_msg_eph_call_t *call, const char *reply_to,
                   uint64_t corr);
//  The caller of a waiting call left: it is forgotten, never answered;
//  messages a receive had taken go back to the queue.
void qn_eph_cancel (qn_eph_t *self, void *handle);
//  A peer's operation (QN_MSG_MESH_EPH body). 0, or QN_EPROTO.
int qn_eph_peer (qn_eph_t *self, const char *body, size_t len);

#endif
