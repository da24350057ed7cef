/*  kernel/counters.c - process-wide named counters
    qn_count is on every hot path (each request, push, batch), from every
    actor thread at once, so an increment takes no lock: the name is hashed
    (FNV-1a) and looked up in an open-addressed table whose slots are
    atomic pointers to counters that never move or go away, then the value
    gets an atomic add. Only the first use of a name takes the mutex, to
    claim the next counter of a fixed array and publish it in the table
    (release store; lookups load with acquire, so a counter is seen only
    fully written). qn_counters_each walks the array up to the published
    count, so a reader never sees a half-made counter either.
    Names are copied (a caller may pass a stack buffer) and cut at
    S_NAME_MAX - 1 bytes; lookups cut the same way. When S_MAX_COUNTERS
    names exist, new names are dropped (counted nowhere).
*/
#include "kernel/kernel_impl.h"

#include <stdlib.h>
#include <string.h>

#define S_MAX_COUNTERS   512
#define S_TABLE_SIZE     1024       //  Power of two, > S_MAX_COUNTERS: probes end
#define S_NAME_MAX       64

typedef struct {
    char name [S_NAME_MAX];
    uint64_t hash;
    atomic_llong value;
} s_counter_t;

struct qk_counters {
    pthread_mutex_t lock;                       //  Inserts only
    _Atomic (s_counter_t *) table [S_TABLE_SIZE];
    atomic_uint count;                          //  Counters published
    s_counter_t counters [S_MAX_COUNTERS];
};

qk_counters_t *
qk_counters_new (void)
{
    qk_counters_t *self = qn_zalloc (sizeof *self);
    pthread_mutex_init (&self->lock, NULL);
    for (size_t i = 0; i < S_TABLE_SIZE; i++)
        atomic_init (&self->table [i], NULL);
    atomic_init (&self->count, 0);
    return self;
}

void
qk_counters_destroy (qk_counters_t **self_p)
{
    qk_counters_t *self = *self_p;
    if (!self)
        return;
    pthread_mutex_destroy (&self->lock);
    free (self);
    *self_p = NULL;
}

//  FNV-1a over the name as stored (at most S_NAME_MAX - 1 bytes); sets
//  *len to that length.
static uint64_t
s_hash (const char *name, size_t *len)
{
    uint64_t h = 14695981039346656037ull;
    size_t n = 0;
    while (n < S_NAME_MAX - 1 && name [n]) {
        h ^= (uint8_t) name [n++];
        h *= 1099511628211ull;
    }
    *len = n;
    return h;
}

static bool
s_matches (const s_counter_t *c, uint64_t hash, const char *name, size_t len)
{
    return c->hash == hash && !memcmp (c->name, name, len) && c->name [len] == 0;
}

//  Lock-free: the counter for name, or NULL if it is not in the table.
static s_counter_t *
s_find (qk_counters_t *self, uint64_t hash, const char *name, size_t len)
{
    for (size_t i = 0; i < S_TABLE_SIZE; i++) {
        size_t slot = (hash + i) & (S_TABLE_SIZE - 1);
        s_counter_t *c = atomic_load_explicit (&self->table [slot], memory_order_acquire);
        if (!c)
            return NULL;
        if (s_matches (c, hash, name, len))
            return c;
    }
    return NULL;
}

static s_counter_t *
s_counter (qn_kernel_t *kernel, const char *name)
{
    qk_counters_t *self = kernel->counters;
    size_t len;
    uint64_t hash = s_hash (name, &len);
    s_counter_t *c = s_find (self, hash, name, len);
    if (c)
        return c;
    pthread_mutex_lock (&self->lock);
    //  Another thread may have added it since the lookup above.
    c = s_find (self, hash, name, len);
    uint32_t n = atomic_load_explicit (&self->count, memory_order_relaxed);
    if (!c && n < S_MAX_COUNTERS) {
        c = &self->counters [n];
        memcpy (c->name, name, len);
        c->name [len] = 0;
        c->hash = hash;
        atomic_init (&c->value, 0);
        size_t slot = hash & (S_TABLE_SIZE - 1);
        while (atomic_load_explicit (&self->table [slot], memory_order_relaxed))
            slot = (slot + 1) & (S_TABLE_SIZE - 1);
        atomic_store_explicit (&self->table [slot], c, memory_order_release);
        atomic_store_explicit (&self->count, n + 1, memory_order_release);
    }
    pthread_mutex_unlock (&self->lock);
    return c;
}

void
qn_count (qn_kernel_t *self, const char *name, int64_t delta)
{
    s_counter_t *c = s_counter (self, name);
    if (c)
        atomic_fetch_add_explicit (&c->value, delta, memory_order_relaxed);
}

void
qn_gauge_set (qn_kernel_t *self, const char *name, int64_t value)
{
    s_counter_t *c = s_counter (self, name);
    if (c)
        atomic_store_explicit (&c->value, value, memory_order_relaxed);
}

int64_t
qn_counter (qn_kernel_t *self, const char *name)
{
    s_counter_t *c = s_counter (self, name);
    return c ? atomic_load (&c->value) : 0;
}

void
qn_counters_each (qn_kernel_t *self, void (*fn) (void *, const char *, int64_t), void *arg)
{
    qk_counters_t *counters = self->counters;
    uint32_t n = atomic_load_explicit (&counters->count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        fn (arg, counters->counters [i].name, atomic_load (&counters->counters [i].value));
}
