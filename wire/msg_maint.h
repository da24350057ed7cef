/*  wire/msg_maint.h - the maintenance flags
    Their one owner is pg_writer (actors/pg/maint.c): it persists them in
    queen.system_state, applies push maintenance itself (the write path
    routes pushes) and publishes them; everyone else reads the event.

    QN_MSG_MAINT_SET (request, system routes -> pg_writer)
        [pop, enabled]      pop true: pop_maintenance_mode, else
                            maintenance_mode (push)
    QN_MSG_MAINT_STATE (event "maintenance", and the reply to MAINT_SET)
        [push, pop, gen, sqlstate|nil, message|nil]
        gen grows with every change the owner makes, so a reader that
        also gets the reply keeps whichever is newer; sqlstate set: the
        set request failed and the flags are unchanged.
    Pure.
*/
#ifndef QN_WIRE_MSG_MAINT_H
#define QN_WIRE_MSG_MAINT_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    bool pop;
    bool enabled;
} qn_msg_maint_set_t;

typedef struct {
    bool push;
    bool pop;
    uint64_t gen;
    char sqlstate [6];          //  "" when fine
    const char *message;        //  NULL when fine; points into the buffer
    size_t message_len;
} qn_msg_maint_state_t;

void qn_msg_maint_set_encode (msgpack_sbuffer *out, const qn_msg_maint_set_t *m);
int qn_msg_maint_set_decode (const char *buf, size_t len, qn_msg_maint_set_t *out);
void qn_msg_maint_state_encode (msgpack_sbuffer *out, const qn_msg_maint_state_t *m);
int qn_msg_maint_state_decode (const char *buf, size_t len, qn_msg_maint_state_t *out);

#endif
