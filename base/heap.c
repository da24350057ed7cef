/*  base/heap.c - intrusive binary min-heap with index tracking
    See heap.h. Array layout: children of i are 2i+1 and 2i+2.
*/
#include "base/heap.h"
#include "base/buf.h"

#include <stdlib.h>

static inline bool
s_less (const qn_heap_node_t *a, const qn_heap_node_t *b)
{
    return a->key < b->key || (a->key == b->key && a->tie < b->tie);
}

static inline void
s_place (qn_heap_t *self, size_t i, qn_heap_node_t *node)
{
    self->items [i] = node;
    node->index = i;
}

//  Moves `node` up from hole i; returns true if it moved.
static bool
s_up (qn_heap_t *self, size_t i, qn_heap_node_t *node)
{
    size_t start = i;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!s_less (node, self->items [parent]))
            break;
        s_place (self, i, self->items [parent]);
        i = parent;
    }
    s_place (self, i, node);
    return i != start;
}

static void
s_down (qn_heap_t *self, size_t i, qn_heap_node_t *node)
{
    size_t n = self->len;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && s_less (self->items [c + 1], self->items [c]))
            c++;
        if (!s_less (self->items [c], node))
            break;
        s_place (self, i, self->items [c]);
        i = c;
    }
    s_place (self, i, node);
}

void
qn_heap_init (qn_heap_t *self)
{
    self->items = NULL;
    self->len = self->cap = 0;
}

void
qn_heap_free (qn_heap_t *self)
{
    for (size_t i = 0; i < self->len; i++)
        self->items [i]->index = QN_HEAP_NONE;
    free (self->items);
    qn_heap_init (self);
}

size_t
qn_heap_size (const qn_heap_t *self)
{
    return self->len;
}

void
qn_heap_push (qn_heap_t *self, qn_heap_node_t *node)
{
    if (self->len == self->cap) {
        self->cap = self->cap ? self->cap * 2 : 64;
        self->items = qn_realloc (self->items, self->cap * sizeof *self->items);
    }
    s_up (self, self->len++, node);
}

qn_heap_node_t *
qn_heap_peek (const qn_heap_t *self)
{
    return self->len ? self->items [0] : NULL;
}

qn_heap_node_t *
qn_heap_pop (qn_heap_t *self)
{
    if (!self->len)
        return NULL;
    qn_heap_node_t *top = self->items [0];
    qn_heap_remove (self, top);
    return top;
}

void
qn_heap_remove (qn_heap_t *self, qn_heap_node_t *node)
{
    size_t i = node->index;
    node->index = QN_HEAP_NONE;
    qn_heap_node_t *last = self->items [--self->len];
    if (i == self->len)
        return;
    //  The last node fills the hole, then moves whichever way it must.
    if (!s_up (self, i, last))
        s_down (self, i, last);
}

void
qn_heap_update (qn_heap_t *self, qn_heap_node_t *node)
{
    size_t i = node->index;
    if (!s_up (self, i, node))
        s_down (self, i, node);
}
