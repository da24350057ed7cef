/*  kernel/timers.c - each actor's timers
    qn_timer_add / qn_timer_cancel on the calling actor. Timers sit in a
    base/heap.h min-heap ordered by (due_ms, id), so equal due times fire
    in the order they were added; a map id -> timer makes cancel O(log n).
    The actor loop runs the due ones (qk_timers_run) and sleeps no longer
    than the next due time (qk_timers_wait_ms). Only the actor's own
    thread touches them.
*/
#include "kernel/kernel_impl.h"

#include <stdlib.h>

typedef struct {
    qn_heap_node_t node;        //  key = due_ms, tie = id
    uint64_t id;
    uint32_t interval_ms;
    qn_timer_fn *fn;
    void *arg;
} s_timer_t;

uint64_t
qn_timer_add (qn_kernel_t *self, uint32_t delay_ms, uint32_t interval_ms,
              qn_timer_fn *fn, void *arg)
{
    (void) self;
    qn_actor_t *a = qk_actor ();
    s_timer_t *t = qn_zalloc (sizeof *t);
    t->id = ++a->next_timer_id;
    t->node.key = qn_now_ms () + delay_ms;
    t->node.tie = t->id;
    t->interval_ms = interval_ms;
    t->fn = fn;
    t->arg = arg;
    qn_heap_push (&a->timer_heap, &t->node);
    qn_hashmap_put (a->timers, t->id, t);
    return t->id;
}

void
qn_timer_cancel (qn_kernel_t *self, uint64_t id)
{
    (void) self;
    qn_actor_t *a = qk_actor ();
    s_timer_t *t = qn_hashmap_remove (a->timers, id);
    if (t) {
        qn_heap_remove (&a->timer_heap, &t->node);
        free (t);
    }
}

void
qk_timers_run (qn_actor_t *a)
{
    int64_t now = qn_now_ms ();
    //  Bounded per iteration so a flood of timers can't starve sockets.
    for (int n = 0; n < 1024; n++) {
        qn_heap_node_t *head = qn_heap_peek (&a->timer_heap);
        if (!head || head->key > now)
            break;
        s_timer_t *t = qn_heap_item (head, s_timer_t, node);
        qn_timer_fn *fn = t->fn;
        void *arg = t->arg;
        if (t->interval_ms) {
            t->node.key = now + t->interval_ms;
            qn_heap_update (&a->timer_heap, &t->node);
        }
        else {
            qn_heap_remove (&a->timer_heap, &t->node);
            qn_hashmap_remove (a->timers, t->id);
            free (t);
        }
        fn (a->self, arg);
    }
}

int
qk_timers_wait_ms (qn_actor_t *a, int timeout_ms)
{
    qn_heap_node_t *head = qn_heap_peek (&a->timer_heap);
    if (!head)
        return timeout_ms;
    int64_t until = head->key - qn_now_ms ();
    if (until < 0)
        until = 0;
    if (timeout_ms < 0 || until < timeout_ms)
        return (int) until;
    return timeout_ms;
}

static void
s_free_timer (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    free (value);
}

void
qk_timers_free (qn_actor_t *a)
{
    qn_heap_free (&a->timer_heap);
    if (a->timers)
        qn_hashmap_each (a->timers, s_free_timer, NULL);
    qn_hashmap_destroy (&a->timers);
}
