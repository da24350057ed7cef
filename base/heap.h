/*  base/heap.h - intrusive binary min-heap with index tracking
    The one priority queue of the code base: the kernel's per-actor timers
    and the timers actor's due list use it. An item embeds a
    qn_heap_node_t; the heap orders nodes by (key, tie) and keeps each
    node's position in node->index, so removing or re-keying an arbitrary
    node is O(log n). The heap owns only its array of pointers, never the
    nodes. Not thread-safe: one owner. Never fails (qn_realloc aborts).
*/
#ifndef QN_BASE_HEAP_H
#define QN_BASE_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QN_HEAP_NONE SIZE_MAX   //  node->index of a node in no heap

typedef struct {
    int64_t key;                //  Smallest first (a due time, for example)
    uint64_t tie;               //  Then smallest tie (an id: FIFO among equals)
    size_t index;               //  Maintained by the heap; QN_HEAP_NONE when out
} qn_heap_node_t;

typedef struct {
    qn_heap_node_t **items;     //  Owned array; the nodes are not owned
    size_t len, cap;
} qn_heap_t;

#define QN_HEAP_INIT { NULL, 0, 0 }

void qn_heap_init (qn_heap_t *self);
//  Frees the array (not the nodes); the heap is empty and usable after.
void qn_heap_free (qn_heap_t *self);
size_t qn_heap_size (const qn_heap_t *self);
//  Inserts a node whose key and tie are set and which is in no heap.
void qn_heap_push (qn_heap_t *self, qn_heap_node_t *node);
//  The smallest node, or NULL when empty.
qn_heap_node_t *qn_heap_peek (const qn_heap_t *self);
//  Removes and returns the smallest node, or NULL when empty.
qn_heap_node_t *qn_heap_pop (qn_heap_t *self);
//  Removes `node` (which must be in this heap) in O(log n).
void qn_heap_remove (qn_heap_t *self, qn_heap_node_t *node);
//  Restores order after the caller changed node->key or node->tie.
void qn_heap_update (qn_heap_t *self, qn_heap_node_t *node);
//  True if the node is in a heap.
static inline bool
qn_heap_node_queued (const qn_heap_node_t *node)
{
    return node->index != QN_HEAP_NONE;
}

//  The item that embeds `node` as `member`.
#define qn_heap_item(node, type, member) \
    ((type *) (void *) ((char *) (node) - offsetof (type, member)))

#endif
