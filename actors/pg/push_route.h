/*  actors/pg/push_route.h - where a push goes: PostgreSQL or the disk spool
    The write path's routing decision as a pure state machine (no I/O),
    owned by pg_writer and unit-tested on its own (test/unit/
    test_push_route.c).

    A push goes to the spool while PostgreSQL is down, while push
    maintenance is on, or while the spool may still hold a push this
    broker forwarded to it (spool mode). Ordering rule: once anything goes
    to the spool, pushes keep going there until the spool reports
    (QN_MSG_SPOOL_DRAINED [appends], a direct message) that it has replayed
    everything and has handled at least as many appends as pg_writer
    forwarded: an append still on its way keeps spool mode on, so no push
    overtakes one spooled before it. Spool mode starts on (the spool may
    hold items from before a restart) until its first report.

    A replay from the spool is never re-routed: it runs in PostgreSQL, or
    waits (refused, the spool retries) while push maintenance is on or the
    flags are not known yet.
*/
#ifndef QN_ACTORS_PG_PUSH_ROUTE_H
#define QN_ACTORS_PG_PUSH_ROUTE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
    QN_PUSH_TO_PG = 0,            //  Batch into queen.push
    QN_PUSH_TO_SPOOL,             //  Forward to the spool (it answers the pusher)
    QN_PUSH_TO_WAIT               //  Replay refused for now: the spool retries
} qn_push_route_to_t;

typedef struct {
    bool db_up;                 //  From pg_writer's health connection
    bool maint_known;           //  The flags have been read at least once
    bool push_maint;            //  Push maintenance mode
    bool spool_mode;            //  Something forwarded may be unreplayed
    uint64_t forwarded;         //  Appends forwarded to the spool so far
} qn_push_route_t;

//  Initial state: database up (main connected), flags unknown, spool mode
//  on until the spool's first report.
void qn_push_route_init (qn_push_route_t *r);
//  Where a push goes now.
qn_push_route_to_t qn_push_route_push (const qn_push_route_t *r, bool replay);
//  An append was handed to the spool: spool mode until it is replayed.
void qn_push_route_forwarded (qn_push_route_t *r);
//  The spool reports it replayed everything, having handled `appends`
//  appends. Leaves spool mode only when that covers every forward.
void qn_push_route_drained (qn_push_route_t *r, uint64_t appends);
//  A failure of PostgreSQL rather than of the request (connection lost,
//  server shutting down, no connection slot): a non-replay push that
//  failed so goes to the spool instead of failing.
bool qn_push_route_unavailable (const char *sqlstate);

#endif
