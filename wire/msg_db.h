/*  wire/msg_db.h - the "db" event
    QN_MSG_DB_HEALTH, published on topic "db" by pg_writer when it learns
    whether the database is reachable (actors/pg/conn.c); the HTTP codec
    (GET /health) and the spool (replay) listen.
        [up]
    Pure.
*/
#ifndef QN_WIRE_MSG_DB_H
#define QN_WIRE_MSG_DB_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>

//  Appends the body to out.
void qn_msg_db_health_encode (msgpack_sbuffer *out, bool up);
//  0, or -1 when malformed.
int qn_msg_db_health_decode (const char *buf, size_t len, bool *up);

#endif
