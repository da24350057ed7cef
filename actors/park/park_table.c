/*  actors/park/park_table.c - the parking table (see park_table.h).
    Pure: no kernel calls, no I/O.
*/
#include "actors/park/park_table.h"

#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ keys
static uint64_t
s_hash (const char *data, size_t len)
{
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= (uint8_t) data [i];
        h *= 1099511628211ULL;
    }
    return h ? h : 1;           //  Key 0 is reserved by the hashmap
}

//  Appends a length-prefixed field (nil = 0xffffffff) so no two field
//  tuples give the same key.
static void
s_key_field (qn_buf_t *key, const char *s, size_t len)
{
    uint32_t n = s ? (uint32_t) len : UINT32_MAX;
    qn_buf_append (key, &n, sizeof n);
    if (s && len)
        qn_buf_append (key, s, len);
}

//  Topic key: (tenant, queue) for queue pops (queue != NULL), the
//  tenant's namespace pops otherwise.
static void
s_topic_key (qn_buf_t *key, const char *tenant, size_t tenant_len,
             const char *queue, size_t queue_len)
{
    qn_buf_append (key, queue ? "q" : "n", 1);
    s_key_field (key, tenant, tenant_len);
    if (queue)
        s_key_field (key, queue, queue_len);
}

static void
s_list_key (qn_buf_t *key, const qn_park_req_t *p)
{
    qn_buf_append (key, "L", 1);
    for (int i = 0; i < 6; i++)
        s_key_field (key, p->f [i], p->len [i]);
}

// ------------------------------------------------------------------ table
void
qn_park_table_init (qn_park_table_t *t, int64_t horizon_us, int64_t scout_ttl_ms)
{
    memset (t, 0, sizeof *t);
    t->waiters = qn_hashmap_new ();
    t->scouts = qn_hashmap_new ();
    t->lists = qn_hashmap_new ();
    t->topics = qn_hashmap_new ();
    t->commits = qn_hashmap_new ();
    t->horizon_us = horizon_us;
    t->scout_ttl_ms = scout_ttl_ms;
}

static void
s_dead_timer (qn_park_table_t *t, uint64_t id)
{
    if (id)
        qn_buf_append (&t->dead_timers, &id, sizeof id);
}

static qn_park_topic_t *
s_topic_find (qn_park_table_t *t, const char *key, size_t len)
{
    qn_park_topic_t *tp = qn_hashmap_get (t->topics, s_hash (key, len));
    for (; tp; tp = tp->hash_next)
        if (tp->key_len == len && !memcmp (tp->key, key, len))
            return tp;
    return NULL;
}

static qn_park_list_t *
s_list_find (qn_park_table_t *t, const char *key, size_t len)
{
    for (qn_park_list_t *l = qn_hashmap_get (t->lists, s_hash (key, len)); l; l = l->hash_next)
        if (l->key_len == len && !memcmp (l->key, key, len))
            return l;
    return NULL;
}

static qn_park_topic_t *
s_topic_get (qn_park_table_t *t, const qn_buf_t *key)
{
    qn_park_topic_t *tp = s_topic_find (t, key->data, key->len);
    if (!tp) {
        tp = qn_zalloc (sizeof *tp);
        tp->key = qn_malloc (key->len);
        memcpy (tp->key, key->data, key->len);
        tp->key_len = key->len;
        tp->hash = s_hash (key->data, key->len);
        tp->hash_next = qn_hashmap_get (t->topics, tp->hash);
        qn_hashmap_put (t->topics, tp->hash, tp);
    }
    return tp;
}

//  Finds or creates the list for p (and its topic).
static qn_park_list_t *
s_list_get (qn_park_table_t *t, const qn_park_req_t *p)
{
    qn_buf_t key = QN_BUF_INIT;
    s_list_key (&key, p);
    qn_park_list_t *l = s_list_find (t, key.data, key.len);
    if (!l) {
        l = qn_zalloc (sizeof *l);
        l->key = qn_malloc (key.len);
        memcpy (l->key, key.data, key.len);
        l->key_len = key.len;
        l->hash = s_hash (key.data, key.len);
        l->table = t;
        if (p->f [QN_PARK_F_PARTITION])
            l->partition = qn_strndup (p->f [QN_PARK_F_PARTITION], p->len [QN_PARK_F_PARTITION]);
        l->hash_next = qn_hashmap_get (t->lists, l->hash);
        qn_hashmap_put (t->lists, l->hash, l);
        qn_buf_reset (&key);
        s_topic_key (&key, p->f [QN_PARK_F_TENANT], p->len [QN_PARK_F_TENANT],
                     p->f [QN_PARK_F_QUEUE], p->len [QN_PARK_F_QUEUE]);
        qn_park_topic_t *tp = s_topic_get (t, &key);
        l->topic = tp;
        l->topic_next = tp->lists;
        if (tp->lists)
            tp->lists->topic_prev = l;
        tp->lists = l;
        t->list_count++;
    }
    qn_buf_free (&key);
    return l;
}

//  Unlinks `node` from the chain stored under `hash` in `map`.
#define S_CHAIN_UNLINK(map, hash, type, node) do { \
    type *first_ = qn_hashmap_get (map, hash); \
    if (first_ == (node)) { \
        if ((node)->hash_next) \
            qn_hashmap_put (map, hash, (node)->hash_next); \
        else \
            qn_hashmap_remove (map, hash); \
    } \
    else { \
        while (first_->hash_next != (node)) \
            first_ = first_->hash_next; \
        first_->hash_next = (node)->hash_next; \
    } \
} while (0)

//  Frees a list that has neither waiters nor a scout out, and its topic
//  when that becomes empty. Returns true if it was freed.
static bool
s_list_maybe_drop (qn_park_table_t *t, qn_park_list_t *l)
{
    if (l->head || l->scout)
        return false;
    qn_park_topic_t *tp = l->topic;
    if (l->topic_prev)
        l->topic_prev->topic_next = l->topic_next;
    else
        tp->lists = l->topic_next;
    if (l->topic_next)
        l->topic_next->topic_prev = l->topic_prev;
    S_CHAIN_UNLINK (t->lists, l->hash, qn_park_list_t, l);
    s_dead_timer (t, l->timer_id);
    free (l->key);
    free (l->partition);
    free (l);
    t->list_count--;
    if (!tp->lists) {
        S_CHAIN_UNLINK (t->topics, tp->hash, qn_park_topic_t, tp);
        free (tp->key);
        free (tp);
    }
    return true;
}

//  Takes w out of its list (which stays, even if empty) and frees it.
static void
s_waiter_unlink (qn_park_table_t *t, qn_park_waiter_t *w)
{
    qn_park_list_t *l = w->list;
    if (w->prev)
        w->prev->next = w->next;
    else
        l->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        l->tail = w->prev;
    qn_hashmap_remove (t->waiters, w->ctx_id);
    s_dead_timer (t, w->timer_id);
    t->count--;
    free (w);
}

//  Sends out l's oldest waiter as its scout (appending its ctx_id to
//  `woken`), or, with a scout already out, remembers to send the next
//  one when it comes back.
static void
s_list_kick (qn_park_table_t *t, qn_park_list_t *l, int64_t now_ms, qn_buf_t *woken)
{
    if (l->scout && now_ms > l->scout_until_ms) {
        qn_hashmap_remove (t->scouts, l->scout);
        l->scout = 0;
    }
    if (l->scout) {
        l->pending = true;
        return;
    }
    l->pending = false;
    if (!l->head)
        return;
    uint64_t id = l->head->ctx_id;
    s_waiter_unlink (t, l->head);
    l->scout = id;
    l->scout_until_ms = now_ms + t->scout_ttl_ms;
    qn_hashmap_put (t->scouts, id, l);
    qn_buf_append (woken, &id, sizeof id);
}

//  Ends ctx_id's scouting (it parked again, or settled). Returns its list
//  (maybe now empty) and whether a kick arrived meanwhile, or NULL.
static qn_park_list_t *
s_scout_return (qn_park_table_t *t, uint64_t ctx_id, bool *pending)
{
    qn_park_list_t *l = qn_hashmap_remove (t->scouts, ctx_id);
    *pending = false;
    if (l) {
        *pending = l->pending;
        l->pending = false;
        l->scout = 0;
    }
    return l;
}

//  Latest commit stamp that concerns p (monotonic us), or 0.
static int64_t
s_last_commit (qn_park_table_t *t, const qn_park_req_t *p)
{
    qn_buf_t key = QN_BUF_INIT;
    s_topic_key (&key, p->f [QN_PARK_F_TENANT], p->len [QN_PARK_F_TENANT],
                 p->f [QN_PARK_F_QUEUE], p->len [QN_PARK_F_QUEUE]);
    int64_t at = (int64_t) (intptr_t) qn_hashmap_get (t->commits, s_hash (key.data, key.len));
    qn_buf_free (&key);
    return at;
}

//  Parks p. Returns QN_PARK_PARKED with its list in *list_out (the pop itself
//  may already be in `woken` when a commit was missed), or says why not.
qn_park_rc_t
qn_park_table_park (qn_park_table_t *t, const qn_park_req_t *p, int64_t now_ms, int64_t now_us,
              qn_park_list_t **list_out, qn_buf_t *woken)
{
    *list_out = NULL;
    if (qn_hashmap_get (t->waiters, p->ctx_id))
        return QN_PARK_ALREADY;
    bool pending;
    qn_park_list_t *from = s_scout_return (t, p->ctx_id, &pending);
    if (p->deadline_ms <= now_ms) {
        if (from && pending)
            s_list_kick (t, from, now_ms, woken);
        if (from)
            s_list_maybe_drop (t, from);
        return QN_PARK_EXPIRE_NOW;
    }
    qn_park_list_t *l = s_list_get (t, p);
    qn_park_waiter_t *w = qn_zalloc (sizeof *w);
    w->ctx_id = p->ctx_id;
    w->list = l;
    w->deadline_ms = p->deadline_ms;
    //  Keep the list ordered by request id: a scout coming back keeps its
    //  place among those that arrived after it.
    qn_park_waiter_t *at = l->tail;
    while (at && at->ctx_id > w->ctx_id)
        at = at->prev;
    w->prev = at;
    w->next = at ? at->next : l->head;
    if (w->next)
        w->next->prev = w;
    else
        l->tail = w;
    if (at)
        at->next = w;
    else
        l->head = w;
    qn_hashmap_put (t->waiters, w->ctx_id, w);
    t->count++;
    if (p->due_ms && (!l->due_ms || p->due_ms < l->due_ms))
        l->due_ms = p->due_ms;
    if (!l->check_ms)
        l->check_ms = now_ms + QN_PARK_SAFETY_MS;
    bool missed = s_last_commit (t, p) >= p->started_us
               || p->started_us < now_us - t->horizon_us;
    if (from && from != l) {
        if (pending)
            s_list_kick (t, from, now_ms, woken);
        s_list_maybe_drop (t, from);
    }
    if (missed || (from == l && pending))
        s_list_kick (t, l, now_ms, woken);
    *list_out = l;
    return QN_PARK_PARKED;
}

//  Removes the waiter of ctx_id (client gone, or its deadline). Returns
//  true if it was parked.
bool
qn_park_table_take (qn_park_table_t *t, uint64_t ctx_id)
{
    qn_park_waiter_t *w = qn_hashmap_get (t->waiters, ctx_id);
    if (!w)
        return false;
    qn_park_list_t *l = w->list;
    s_waiter_unlink (t, w);
    s_list_maybe_drop (t, l);
    return true;
}

//  A scout ended without parking again: found messages (send the next
//  one), or not (send the next only if kicked meanwhile).
void
qn_park_table_settled (qn_park_table_t *t, uint64_t ctx_id, bool found, int64_t now_ms,
                       qn_buf_t *woken)
{
    bool pending;
    qn_park_list_t *l = s_scout_return (t, ctx_id, &pending);
    if (!l)
        return;
    if (found || pending)
        s_list_kick (t, l, now_ms, woken);
    s_list_maybe_drop (t, l);
}

//  A commit on (tenant, queue[, partition]) at now_us: stamps it and kicks
//  every list concerned.
void
qn_park_table_committed (qn_park_table_t *t, const char *tenant, size_t tenant_len,
                   const char *queue, size_t queue_len,
                   const char *partition, size_t partition_len,
                   int64_t now_ms, int64_t now_us, qn_buf_t *woken)
{
    qn_buf_t key = QN_BUF_INIT;
    for (int ns = 0; ns < 2; ns++) {
        qn_buf_reset (&key);
        s_topic_key (&key, tenant, tenant_len, ns ? NULL : queue, queue_len);
        qn_hashmap_put (t->commits, s_hash (key.data, key.len), (void *) (intptr_t) now_us);
        qn_park_topic_t *tp = s_topic_find (t, key.data, key.len);
        //  Kicking never frees a list: the woken pop is its scout.
        for (qn_park_list_t *l = tp ? tp->lists : NULL; l; l = l->topic_next) {
            bool match = ns || !l->partition || !partition
                      || (strlen (l->partition) == partition_len
                          && !memcmp (l->partition, partition, partition_len));
            if (match)
                s_list_kick (t, l, now_ms, woken);
        }
    }
    qn_buf_free (&key);
}

//  The instant l's timer should fire (monotonic ms).
int64_t
qn_park_list_next_ms (const qn_park_list_t *l)
{
    return l->due_ms && l->due_ms < l->check_ms ? l->due_ms : l->check_ms;
}

//  l's timer fired: a due instant or the safety net. Returns false if the
//  list was freed.
bool
qn_park_list_fire (qn_park_table_t *t, qn_park_list_t *l, int64_t now_ms, qn_buf_t *woken)
{
    bool kick = false;
    if (l->due_ms && l->due_ms <= now_ms) {
        l->due_ms = 0;
        kick = true;
    }
    if (l->check_ms <= now_ms) {
        l->check_ms = now_ms + QN_PARK_SAFETY_MS;
        kick = true;
    }
    if (kick)
        s_list_kick (t, l, now_ms, woken);
    return !s_list_maybe_drop (t, l);
}

static void
s_collect_id (void *arg, uint64_t key, void *value)
{
    (void) value;
    qn_buf_append (arg, &key, sizeof key);
}

//  Takes every waiter (ctx ids into out) and forgets every scout.
void
qn_park_table_take_all (qn_park_table_t *t, qn_buf_t *out)
{
    qn_buf_t ids = QN_BUF_INIT;
    qn_hashmap_each (t->waiters, s_collect_id, &ids);
    for (size_t i = 0; i < ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, ids.data + i * sizeof id, sizeof id);
        if (qn_park_table_take (t, id) && out)
            qn_buf_append (out, &id, sizeof id);
    }
    qn_buf_reset (&ids);
    qn_hashmap_each (t->scouts, s_collect_id, &ids);
    for (size_t i = 0; i < ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        bool pending;
        memcpy (&id, ids.data + i * sizeof id, sizeof id);
        qn_park_list_t *l = s_scout_return (t, id, &pending);
        if (l)
            s_list_maybe_drop (t, l);
    }
    qn_buf_free (&ids);
}

typedef struct {
    int64_t before_us;
    qn_buf_t old;
} s_prune_t;

static void
s_prune_one (void *arg, uint64_t key, void *value)
{
    s_prune_t *pr = arg;
    if ((int64_t) (intptr_t) value < pr->before_us)
        qn_buf_append (&pr->old, &key, sizeof key);
}

//  Forgets commit stamps older than the horizon (a pop parked that
//  old counts as having missed a commit anyway).
void
qn_park_table_prune (qn_park_table_t *t, int64_t now_us)
{
    s_prune_t pr = { now_us - t->horizon_us, QN_BUF_INIT };
    qn_hashmap_each (t->commits, s_prune_one, &pr);
    for (size_t i = 0; i < pr.old.len / sizeof (uint64_t); i++) {
        uint64_t key;
        memcpy (&key, pr.old.data + i * sizeof key, sizeof key);
        qn_hashmap_remove (t->commits, key);
    }
    qn_buf_free (&pr.old);
}

void
qn_park_table_destroy (qn_park_table_t *t)
{
    qn_park_table_take_all (t, NULL);
    qn_hashmap_destroy (&t->waiters);
    qn_hashmap_destroy (&t->scouts);
    qn_hashmap_destroy (&t->lists);
    qn_hashmap_destroy (&t->topics);
    qn_hashmap_destroy (&t->commits);
    qn_buf_free (&t->dead_timers);
}

// ------------------------------------------------------------------ due instants
//  Database time to our clock; an instant already past still waits a
//  little, so clock skew cannot spin the request.
int64_t
qn_park_due_ms (int64_t due_us, int64_t now_ms, int64_t wall_us)
{
    if (!due_us)
        return 0;
    int64_t in_ms = (due_us - wall_us + 999) / 1000;
    return now_ms + (in_ms > 0 ? in_ms : 0) + QN_PARK_DUE_SLACK_MS;
}
