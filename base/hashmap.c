/*  base/hashmap.c - uint64 -> pointer map, linear probing with
    backward-shift deletion (no tombstones).
*/
#include "base/hashmap.h"
#include "base/buf.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct {
    uint64_t key;               //  0 = empty
    void *value;
} s_slot_t;

struct qn_hashmap {
    s_slot_t *slots;
    size_t cap;                 //  Power of two
    size_t size;
};

static inline size_t
s_hash (uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t) k & (cap - 1);
}

qn_hashmap_t *
qn_hashmap_new (void)
{
    qn_hashmap_t *self = qn_zalloc (sizeof *self);
    self->cap = 16;
    self->slots = qn_zalloc (self->cap * sizeof *self->slots);
    return self;
}

void
qn_hashmap_destroy (qn_hashmap_t **self_p)
{
    if (*self_p) {
        free ((*self_p)->slots);
        free (*self_p);
        *self_p = NULL;
    }
}

static void
s_grow (qn_hashmap_t *self)
{
    s_slot_t *old = self->slots;
    size_t old_cap = self->cap;
    self->cap *= 2;
    self->slots = qn_zalloc (self->cap * sizeof *self->slots);
    self->size = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old [i].key)
            qn_hashmap_put (self, old [i].key, old [i].value);
    free (old);
}

void
qn_hashmap_put (qn_hashmap_t *self, uint64_t key, void *value)
{
    assert (key);
    if ((self->size + 1) * 4 > self->cap * 3)
        s_grow (self);
    size_t i = s_hash (key, self->cap);
    while (self->slots [i].key && self->slots [i].key != key)
        i = (i + 1) & (self->cap - 1);
    if (!self->slots [i].key)
        self->size++;
    self->slots [i].key = key;
    self->slots [i].value = value;
}

void *
qn_hashmap_get (const qn_hashmap_t *self, uint64_t key)
{
    size_t i = s_hash (key, self->cap);
    while (self->slots [i].key) {
        if (self->slots [i].key == key)
            return self->slots [i].value;
        i = (i + 1) & (self->cap - 1);
    }
    return NULL;
}

void *
qn_hashmap_remove (qn_hashmap_t *self, uint64_t key)
{
    size_t mask = self->cap - 1;
    size_t i = s_hash (key, self->cap);
    while (self->slots [i].key && self->slots [i].key != key)
        i = (i + 1) & mask;
    if (!self->slots [i].key)
        return NULL;
    void *value = self->slots [i].value;
    self->size--;
    //  Shift later members of the cluster back into the hole.
    size_t hole = i;
    for (size_t j = (i + 1) & mask; self->slots [j].key; j = (j + 1) & mask) {
        size_t home = s_hash (self->slots [j].key, self->cap);
        bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
            self->slots [hole] = self->slots [j];
            hole = j;
        }
    }
    self->slots [hole].key = 0;
    self->slots [hole].value = NULL;
    return value;
}

size_t
qn_hashmap_size (const qn_hashmap_t *self)
{
    return self->size;
}

void
qn_hashmap_each (qn_hashmap_t *self, void (*fn) (void *, uint64_t, void *), void *arg)
{
    for (size_t i = 0; i < self->cap; i++)
        if (self->slots [i].key)
            fn (arg, self->slots [i].key, self->slots [i].value);
}
