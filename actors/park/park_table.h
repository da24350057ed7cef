/*  actors/park/park_table.h - the parking table (pure part of park.h)
    Pure bookkeeping for parked long-poll requests (an HTTP pop with
    wait=true today), split out of park.c (which adds timers and
    callbacks) so it can be tested as plain data. No kernel calls:
    operations that wake requests append their ids to a caller's buffer,
    and timers that must go away are listed in dead_timers for the caller
    to cancel.

    Parked pops are grouped in lists by what they wait for (tenant, queue
    or namespace/task, partition, group), oldest request first; lists are
    grouped in topics by what wakes them: (tenant, queue), or all the
    namespace pops of a tenant. A list sends out at most one "scout" (its
    oldest pop, run again) at a time; kicks while the scout is out are
    remembered and acted on when it comes back. See park.h.
*/
#ifndef QN_ACTORS_PARK_TABLE_H
#define QN_ACTORS_PARK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/hashmap.h"
#include "base/buf.h"

#define QN_PARK_SAFETY_MS    3000   //  Safety-net recheck period per list
#define QN_PARK_DUE_SLACK_MS 3      //  Run a time-based retry just after the instant

typedef struct qn_park_list qn_park_list_t;
typedef struct qn_park_topic qn_park_topic_t;
typedef struct qn_park_table qn_park_table_t;

//  One parked request.
typedef struct qn_park_waiter {
    uint64_t ctx_id;            //  The owner's request id
    qn_park_list_t *list;       //  Not owned
    struct qn_park_waiter *prev, *next;     //  In the list, ascending ctx_id
    int64_t deadline_ms;        //  Monotonic: answer empty then
    uint64_t timer_id;          //  Set by the glue
} qn_park_waiter_t;

//  Waiters with the same key, oldest request first, and their scout.
struct qn_park_list {
    char *key;                  //  Owned
    size_t key_len;
    uint64_t hash;
    qn_park_table_t *table;     //  Not owned: the table it belongs to
    char *partition;            //  Owned, NULL for a wildcard pop
    qn_park_topic_t *topic;     //  Not owned
    qn_park_waiter_t *head, *tail;
    uint64_t scout;             //  ctx_id of the woken pop out, or 0
    int64_t scout_until_ms;     //  Forget a scout that never reports
    bool pending;               //  Kicked while the scout was out
    int64_t due_ms;             //  Monotonic; 0 = none
    int64_t check_ms;           //  Monotonic: next safety-net kick
    uint64_t timer_id;          //  Set by the glue
    int64_t timer_at_ms;        //  Set by the glue
    qn_park_list_t *topic_prev, *topic_next;
    qn_park_list_t *hash_next;  //  Same hash, other key
};

//  The lists one committed event may kick.
struct qn_park_topic {
    char *key;                  //  Owned
    size_t key_len;
    uint64_t hash;
    qn_park_list_t *lists;
    qn_park_topic_t *hash_next;
};

struct qn_park_table {
    qn_hashmap_t *waiters;      //  ctx_id -> qn_park_waiter_t *
    qn_hashmap_t *scouts;       //  ctx_id -> qn_park_list_t *
    qn_hashmap_t *lists;        //  hash -> qn_park_list_t * chain
    qn_hashmap_t *topics;       //  hash -> qn_park_topic_t * chain
    qn_hashmap_t *commits;      //  topic hash -> last commit (monotonic us)
    size_t count;               //  Parked pops
    size_t list_count;
    int64_t horizon_us;         //  Commit stamps kept this long
    int64_t scout_ttl_ms;
    qn_buf_t dead_timers;       //  uint64 timer ids the glue must cancel
};

//  What a parked request waits for (slices, not owned).
typedef struct {
    uint64_t ctx_id;
    const char *f [6];          //  QN_PARK_F_*; NULL = nil
    size_t len [6];
    int64_t deadline_ms;        //  Monotonic
    int64_t due_ms;             //  Monotonic; 0 = none
    int64_t started_us;         //  Monotonic: when the pop was sent
} qn_park_req_t;

enum {
    QN_PARK_F_TENANT, QN_PARK_F_QUEUE, QN_PARK_F_PARTITION,
    QN_PARK_F_NS, QN_PARK_F_TASK, QN_PARK_F_GROUP
};

typedef enum {
    QN_PARK_PARKED = 0,
    QN_PARK_EXPIRE_NOW,         //  Deadline passed
    QN_PARK_ALREADY             //  This request is parked already
} qn_park_rc_t;

//  horizon_us: how long commit stamps are kept; scout_ttl_ms: how long a
//  scout may stay silent before it is forgotten.
void qn_park_table_init (qn_park_table_t *t, int64_t horizon_us, int64_t scout_ttl_ms);
void qn_park_table_destroy (qn_park_table_t *t);
//  Parks p. QN_PARK_PARKED with its list in *list_out (p itself may
//  already be in `woken` when it may have missed a commit); otherwise why not.
qn_park_rc_t qn_park_table_park (qn_park_table_t *t, const qn_park_req_t *p, int64_t now_ms,
                                 int64_t now_us, qn_park_list_t **list_out, qn_buf_t *woken);
//  Removes the waiter of ctx_id (client gone, or its deadline). True if
//  it was parked.
bool qn_park_table_take (qn_park_table_t *t, uint64_t ctx_id);
//  A scout ended without parking again, having found messages or not.
void qn_park_table_settled (qn_park_table_t *t, uint64_t ctx_id, bool found, int64_t now_ms,
                            qn_buf_t *woken);
//  A commit on (tenant, queue[, partition]; partition NULL = any):
//  stamps it and kicks every list concerned.
void qn_park_table_committed (qn_park_table_t *t, const char *tenant, size_t tenant_len,
                              const char *queue, size_t queue_len,
                              const char *partition, size_t partition_len,
                              int64_t now_ms, int64_t now_us, qn_buf_t *woken);
//  The instant l's timer should fire (monotonic ms).
int64_t qn_park_list_next_ms (const qn_park_list_t *l);
//  l's timer fired. Returns false if the list was freed.
bool qn_park_list_fire (qn_park_table_t *t, qn_park_list_t *l, int64_t now_ms, qn_buf_t *woken);
//  Takes every waiter (ctx ids into out, may be NULL), forgets every scout.
void qn_park_table_take_all (qn_park_table_t *t, qn_buf_t *out);
//  Forgets commit stamps older than the horizon.
void qn_park_table_prune (qn_park_table_t *t, int64_t now_us);
//  A due instant in wall-clock us (the database's time) as a monotonic
//  instant in ms, a little after it; 0 stays 0 (none).
int64_t qn_park_due_ms (int64_t due_us, int64_t now_ms, int64_t wall_us);

#endif
