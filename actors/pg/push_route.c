/*  actors/pg/push_route.c - the push routing decision (see push_route.h). Pure. */
#include "actors/pg/push_route.h"

#include <string.h>

void
qn_push_route_init (qn_push_route_t *r)
{
    memset (r, 0, sizeof *r);
    r->db_up = true;
    r->spool_mode = true;
}

qn_push_route_to_t
qn_push_route_push (const qn_push_route_t *r, bool replay)
{
    if (replay)
        return r->maint_known && !r->push_maint ? QN_PUSH_TO_PG : QN_PUSH_TO_WAIT;
    if (r->push_maint || !r->db_up || r->spool_mode)
        return QN_PUSH_TO_SPOOL;
    return QN_PUSH_TO_PG;
}

void
qn_push_route_forwarded (qn_push_route_t *r)
{
    r->forwarded++;
    r->spool_mode = true;
}

void
qn_push_route_drained (qn_push_route_t *r, uint64_t appends)
{
    if (appends >= r->forwarded)
        r->spool_mode = false;
}

bool
qn_push_route_unavailable (const char *sqlstate)
{
    //  08: connection exceptions; 57: operator intervention (shutdown,
    //  cannot connect now), but not 57014 (a statement timeout: the
    //  statement ran and was refused); 53300: no connection slot.
    return !strncmp (sqlstate, "08", 2)
        || (!strncmp (sqlstate, "57", 2) && strcmp (sqlstate, "57014"))
        || !strcmp (sqlstate, "53300");
}
