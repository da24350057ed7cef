/*  base/hashmap.h - uint64 -> pointer map (open addressing)
    Used for timers, pending requests and connection tables. Not
    thread-safe: one owner. Key 0 is reserved.
*/
#ifndef QN_BASE_HASHMAP_H
#define QN_BASE_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct qn_hashmap qn_hashmap_t;

qn_hashmap_t *qn_hashmap_new (void);
void qn_hashmap_destroy (qn_hashmap_t **self_p);
//  Inserts or replaces. key must not be 0.
void qn_hashmap_put (qn_hashmap_t *self, uint64_t key, void *value);
void *qn_hashmap_get (const qn_hashmap_t *self, uint64_t key);
//  Removes and returns the value, or NULL.
void *qn_hashmap_remove (qn_hashmap_t *self, uint64_t key);
size_t qn_hashmap_size (const qn_hashmap_t *self);
//  Calls fn for each entry; fn must not modify the map.
void qn_hashmap_each (qn_hashmap_t *self, void (*fn) (void *arg, uint64_t key, void *value), void *arg);

#endif
