/*  actors/park/park.h - parked long-poll requests, in the codec's thread
    A library, not an actor: a front door's codec actor owns one qn_park_t
    and parks there the requests that found nothing and may wait (an HTTP
    pop with wait=true; a Kafka fetch with max_wait or an SQS
    ReceiveMessage with WaitTimeSeconds the same way). The park knows what
    a request waits for and until when, never how it is answered: it calls
    the owner back to run a request again ("wake") or to answer it empty
    ("expire"). One owner for each parked request: the codec that holds
    its client.

    Parked requests are grouped in lists by what they wait for: (tenant,
    queue or namespace/task, partition, group), oldest request first.
    Wake-ups go to lists, not to single requests, and each list sends out
    at most one "scout" at a time: its oldest request, woken.
      - A "committed" event for (tenant, queue[, partition]) kicks every
        list waiting on it (namespace lists: every one of the tenant,
        since a queue's namespace is not known here).
      - A list's next-due instant (delay, window buffer, retry backoff,
        lease expiry: what an empty attempt reports) and a slow safety-net
        recheck (QN_PARK_SAFETY_MS, for lost events) kick it too: one
        timer per list, so requests parked on a delayed queue do not all
        wake at once.
      - A kick while the scout is out only marks the list; when the scout
        comes back empty (it parks again) the next one goes out.
      - A scout that found something (qn_park_settled found=true) sends
        out the next: wake-ups chain while they are useful and stop at the
        first request that comes back empty. No thundering herd.
    Deadlines are per request: one timer each, "expire" when it passes.

    Lost wake-ups: a push may commit after an attempt's snapshot but
    before the request parks. The park remembers when it last saw a
    commit per queue; a request whose attempt started before that instant
    is woken at once instead of parked.

    Protocol of the owner (an actor; every call on its thread):
      - its START handler calls qn_park_start (subscribes the actor to
        "committed"); its route table sends QN_MSG_COMMITTED to
        qn_park_on_committed;
      - an attempt that found nothing: qn_park_wait. The request is
        parked (maybe woken at once), or must be answered empty now;
      - "wake" (id): the request is out of the table and is its list's
        scout: run it again, then qn_park_wait again (empty) or
        qn_park_settled (answered, failed or its client gone);
      - "expire" (id): out of the table; answer it empty;
      - the client went away while parked: qn_park_cancel;
      - shutting down: qn_park_drain expires everything at once, and
        every later qn_park_wait returns QN_PARK_EXPIRE_NOW.
    Callbacks run after the park's own bookkeeping is done: they may call
    back into the park.
    Counters <prefix>_wakeups, _expired, _cancelled, _park_races; gauge
    `gauge` = requests parked now.
*/
#ifndef QN_ACTORS_PARK_H
#define QN_ACTORS_PARK_H

#include "actors/park/park_table.h"
#include "kernel/kernel.h"

typedef struct qn_park qn_park_t;

//  A callback to the owner about request `id`.
typedef void (qn_park_fn) (void *arg, uint64_t id);

typedef struct {
    const char *counter_prefix; //  "pop": counters pop_wakeups, ...
    const char *gauge;          //  "parked_pops"
    qn_park_fn *wake;           //  Run the request again now
    qn_park_fn *expire;         //  Deadline (or drain): answer it empty
    void *arg;                  //  Passed to both (the owner's state)
    int64_t attempt_ms;         //  Longest an attempt may take: a scout
                                //  silent longer than this is forgotten
} qn_park_def_t;

//  What a request waits for and until when. Strings are NUL-terminated
//  and only read during the call; NULL = nil (any partition, no queue
//  for a namespace/task request).
typedef struct {
    uint64_t id;                //  The owner's request id, > 0, unique
    const char *tenant;         //  Required ("" = default tenant)
    const char *queue;          //  NULL for a namespace/task request
    const char *partition;      //  NULL = any
    const char *ns;
    const char *task;
    const char *group;          //  Required
    int64_t deadline_ms;        //  Monotonic (qn_now_ms)
    int64_t next_due_us;        //  Wall clock (the database's), 0 = none
    int64_t started_us;         //  Monotonic (qn_now_us): when the empty
                                //  attempt was sent
} qn_park_wait_t;

//  Copies def. Call from the owner's constructor (no kernel call here).
qn_park_t *qn_park_new (qn_kernel_t *kernel, const qn_park_def_t *def);
//  Forgets everything without calling back or cancelling timers (the
//  owner's thread has stopped; the kernel frees its timers).
void qn_park_destroy (qn_park_t **self_p);
//  From the owner's START handler: subscribes to "committed", starts the
//  commit-stamp pruning timer, publishes the gauge.
int qn_park_start (qn_park_t *self);
//  Parks w. Returns QN_PARK_PARKED (the request may have been woken
//  already, through "wake", when it may have missed a commit: the owner
//  must not touch it after this call), QN_PARK_EXPIRE_NOW (deadline
//  passed or draining: answer it empty now; no callback for it) or
//  QN_PARK_ALREADY (it is parked: a bug in the owner).
qn_park_rc_t qn_park_wait (qn_park_t *self, const qn_park_wait_t *w);
//  A woken request ended without parking again: `found` when it got
//  something (the next in its list goes out).
void qn_park_settled (qn_park_t *self, uint64_t id, bool found);
//  The client of a parked request went away. Returns true if it was parked.
bool qn_park_cancel (qn_park_t *self, uint64_t id);
//  A commit on (tenant, queue[, partition]; partition NULL = any).
void qn_park_committed (qn_park_t *self, const char *tenant, size_t tenant_len,
                        const char *queue, size_t queue_len,
                        const char *partition, size_t partition_len);
//  Event "committed" QN_MSG_COMMITTED [tenant, queue(, partition)].
//  Returns 0 or QN_EPROTO.
int qn_park_on_committed (qn_park_t *self, const qn_env_t *env);
//  Expires every parked request now, and every later one at once.
void qn_park_drain (qn_park_t *self);
//  Requests parked now (scouts out not counted).
size_t qn_park_count (const qn_park_t *self);

#endif
