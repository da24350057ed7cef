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
    Series (qn_metric): a second table of the same kind, keyed by
    "family{labels}" (longer names), each a counter, a gauge or a
    histogram (fixed buckets in microseconds, from a pool of
    S_MAX_HISTOGRAMS). A caller may keep the handle: then an update is one
    atomic add. Series labelled by queue are capped per family
    (METRICS_QUEUE_SERIES): past the cap a new queue counts in
    queue="_other", so a million queues cannot make a million series.
*/
#include "kernel/kernel_impl.h"

#include <stdlib.h>
#include <string.h>

#define S_MAX_COUNTERS   512
#define S_TABLE_SIZE     1024       //  Power of two, > S_MAX_COUNTERS: probes end
#define S_NAME_MAX       64
#define S_MAX_SERIES     4096
#define S_SERIES_TABLE   8192       //  Power of two, > S_MAX_SERIES
#define S_SERIES_NAME    192
#define S_MAX_HISTOGRAMS 512
#define S_QUEUE_SERIES_DEFAULT 100

typedef struct {
    atomic_llong buckets [QN_METRIC_BUCKETS + 1];  //  Last: +Inf
    atomic_llong sum_us;
} s_histo_t;

typedef struct {
    char name [S_SERIES_NAME];  //  Plain counters use the first S_NAME_MAX
    uint64_t hash;
    atomic_llong value;         //  Histograms: the observation count
    atomic_int kind;            //  qn_metric_kind_t
    size_t family_len;          //  Series: bytes before '{' (or all)
    s_histo_t *histo;           //  Histograms only
} s_counter_t;

struct qn_metric {
    s_counter_t c;
};

//  One table: a fixed array of entries published through an
//  open-addressed index of atomic pointers.
typedef struct {
    size_t name_max, slots, max;
    _Atomic (s_counter_t *) *table;
    atomic_uint count;          //  Entries published
    s_counter_t *entries;
} s_table_t;

struct qk_counters {
    pthread_mutex_t lock;       //  Inserts only (both tables)
    s_table_t plain;
    s_table_t series;
    s_histo_t *histos;          //  Pool, S_MAX_HISTOGRAMS
    uint32_t histo_count;
};

const int64_t qn_metric_bounds_us [QN_METRIC_BUCKETS] = {
    500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
    1000000, 2500000, 5000000, 10000000, 30000000, 60000000
};

static void
s_table_init (s_table_t *t, size_t name_max, size_t slots, size_t max)
{
    t->name_max = name_max;
    t->slots = slots;
    t->max = max;
    t->table = qn_zalloc (slots * sizeof *t->table);
    for (size_t i = 0; i < slots; i++)
        atomic_init (&t->table [i], NULL);
    atomic_init (&t->count, 0);
    t->entries = qn_zalloc (max * sizeof *t->entries);
}

qk_counters_t *
qk_counters_new (void)
{
    qk_counters_t *self = qn_zalloc (sizeof *self);
    pthread_mutex_init (&self->lock, NULL);
    s_table_init (&self->plain, S_NAME_MAX, S_TABLE_SIZE, S_MAX_COUNTERS);
    s_table_init (&self->series, S_SERIES_NAME, S_SERIES_TABLE, S_MAX_SERIES);
    self->histos = qn_zalloc (S_MAX_HISTOGRAMS * sizeof *self->histos);
    return self;
}

void
qk_counters_destroy (qk_counters_t **self_p)
{
    qk_counters_t *self = *self_p;
    if (!self)
        return;
    pthread_mutex_destroy (&self->lock);
    free (self->plain.table);
    free (self->plain.entries);
    free (self->series.table);
    free (self->series.entries);
    free (self->histos);
    free (self);
    *self_p = NULL;
}

//  FNV-1a over the name as stored (at most name_max - 1 bytes); sets
//  *len to that length.
static uint64_t
s_hash (const char *name, size_t name_max, size_t *len)
{
    uint64_t h = 14695981039346656037ull;
    size_t n = 0;
    while (n < name_max - 1 && name [n]) {
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

//  Lock-free: the entry for name, or NULL if it is not in the table.
static s_counter_t *
s_find (s_table_t *t, uint64_t hash, const char *name, size_t len)
{
    for (size_t i = 0; i < t->slots; i++) {
        size_t slot = (hash + i) & (t->slots - 1);
        s_counter_t *c = atomic_load_explicit (&t->table [slot], memory_order_acquire);
        if (!c)
            return NULL;
        if (s_matches (c, hash, name, len))
            return c;
    }
    return NULL;
}

//  Claims and publishes a new entry; under the lock. NULL when full.
static s_counter_t *
s_insert (qk_counters_t *self, s_table_t *t, uint64_t hash, const char *name, size_t len,
          int kind)
{
    uint32_t n = atomic_load_explicit (&t->count, memory_order_relaxed);
    if (n >= t->max)
        return NULL;
    s_histo_t *histo = NULL;
    if (kind == QN_METRIC_HISTOGRAM) {
        if (self->histo_count >= S_MAX_HISTOGRAMS)
            return NULL;
        histo = &self->histos [self->histo_count++];
    }
    s_counter_t *c = &t->entries [n];
    memcpy (c->name, name, len);
    c->name [len] = 0;
    c->hash = hash;
    atomic_init (&c->value, 0);
    atomic_init (&c->kind, kind);
    const char *brace = memchr (name, '{', len);
    c->family_len = brace ? (size_t) (brace - name) : len;
    c->histo = histo;
    size_t slot = hash & (t->slots - 1);
    while (atomic_load_explicit (&t->table [slot], memory_order_relaxed))
        slot = (slot + 1) & (t->slots - 1);
    atomic_store_explicit (&t->table [slot], c, memory_order_release);
    atomic_store_explicit (&t->count, n + 1, memory_order_release);
    return c;
}

static s_counter_t *
s_counter (qn_kernel_t *kernel, const char *name)
{
    qk_counters_t *self = kernel->counters;
    s_table_t *t = &self->plain;
    size_t len;
    uint64_t hash = s_hash (name, t->name_max, &len);
    s_counter_t *c = s_find (t, hash, name, len);
    if (c)
        return c;
    pthread_mutex_lock (&self->lock);
    //  Another thread may have added it since the lookup above.
    c = s_find (t, hash, name, len);
    if (!c)
        c = s_insert (self, t, hash, name, len, QN_METRIC_COUNTER);
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
    if (c) {
        atomic_store_explicit (&c->value, value, memory_order_relaxed);
        if (atomic_load_explicit (&c->kind, memory_order_relaxed) != QN_METRIC_GAUGE)
            atomic_store_explicit (&c->kind, QN_METRIC_GAUGE, memory_order_relaxed);
    }
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
    s_table_t *t = &self->counters->plain;
    uint32_t n = atomic_load_explicit (&t->count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++)
        fn (arg, t->entries [i].name, atomic_load (&t->entries [i].value));
}

// ------------------------------------------------------------------ series
//  Number of published series of `family` (under the lock).
static uint32_t
s_family_count (s_table_t *t, const char *family, size_t flen)
{
    uint32_t n = atomic_load_explicit (&t->count, memory_order_relaxed), k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (t->entries [i].family_len == flen && !memcmp (t->entries [i].name, family, flen))
            k++;
    return k;
}

static qn_metric_t *
s_series (qn_kernel_t *kernel, int kind, const char *family, const char *labels,
          const char *capped_labels, uint32_t cap)
{
    qk_counters_t *self = kernel->counters;
    s_table_t *t = &self->series;
    char name [S_SERIES_NAME];
    if (labels && labels [0])
        snprintf (name, sizeof name, "%s{%s}", family, labels);
    else
        snprintf (name, sizeof name, "%s", family);
    size_t len;
    uint64_t hash = s_hash (name, t->name_max, &len);
    s_counter_t *c = s_find (t, hash, name, len);
    if (c)
        return (qn_metric_t *) c;
    pthread_mutex_lock (&self->lock);
    c = s_find (t, hash, name, len);
    if (!c && capped_labels && s_family_count (t, family, strlen (family)) >= cap) {
        //  Past the cap: the overflow series (created once, not counted)
        snprintf (name, sizeof name, "%s{%s}", family, capped_labels);
        hash = s_hash (name, t->name_max, &len);
        c = s_find (t, hash, name, len);
    }
    if (!c)
        c = s_insert (self, t, hash, name, len, kind);
    pthread_mutex_unlock (&self->lock);
    return (qn_metric_t *) c;
}

qn_metric_t *
qn_metric (qn_kernel_t *self, qn_metric_kind_t kind, const char *family, const char *labels)
{
    return s_series (self, (int) kind, family, labels, NULL, 0);
}

size_t
qn_metric_label_escape (char *out, size_t size, const char *value, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 3 < size; i++) {
        char ch = value [i];
        if (ch == '\\' || ch == '"') {
            out [o++] = '\\';
            out [o++] = ch;
        }
        else
        if (ch == '\n') {
            out [o++] = '\\';
            out [o++] = 'n';
        }
        else
            out [o++] = ch;
    }
    if (size)
        out [o < size ? o : size - 1] = 0;
    return o;
}

qn_metric_t *
qn_metric_queue (qn_kernel_t *self, qn_metric_kind_t kind, const char *family,
                 const char *queue, size_t queue_len)
{
    char labels [S_SERIES_NAME];
    memcpy (labels, "queue=\"", 7);
    size_t n = 7 + qn_metric_label_escape (labels + 7, sizeof labels - 9, queue, queue_len);
    labels [n++] = '"';
    labels [n] = 0;
    int64_t cap = self->config ? self->config->metrics_queue_series : 0;
    return s_series (self, (int) kind, family, labels, "queue=\"_other\"",
                     cap > 0 ? (uint32_t) cap : S_QUEUE_SERIES_DEFAULT);
}

void
qn_metric_add (qn_metric_t *m, int64_t delta)
{
    if (m)
        atomic_fetch_add_explicit (&m->c.value, delta, memory_order_relaxed);
}

void
qn_metric_set (qn_metric_t *m, int64_t value)
{
    if (m)
        atomic_store_explicit (&m->c.value, value, memory_order_relaxed);
}

void
qn_metric_observe_us (qn_metric_t *m, int64_t us)
{
    if (!m || !m->c.histo)
        return;
    size_t b = 0;
    while (b < QN_METRIC_BUCKETS && us > qn_metric_bounds_us [b])
        b++;
    atomic_fetch_add_explicit (&m->c.histo->buckets [b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit (&m->c.histo->sum_us, us, memory_order_relaxed);
    atomic_fetch_add_explicit (&m->c.value, 1, memory_order_relaxed);
}

static void
s_each (s_table_t *t, qn_metric_each_fn *fn, void *arg)
{
    uint32_t n = atomic_load_explicit (&t->count, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        s_counter_t *c = &t->entries [i];
        qn_metric_info_t info = {
            .kind = (qn_metric_kind_t) atomic_load (&c->kind),
            .name = c->name, .family_len = c->family_len,
            .value = atomic_load (&c->value)
        };
        int64_t buckets [QN_METRIC_BUCKETS + 1];
        if (c->histo) {
            for (size_t b = 0; b <= QN_METRIC_BUCKETS; b++)
                buckets [b] = atomic_load (&c->histo->buckets [b]);
            info.buckets = buckets;
            info.sum_us = atomic_load (&c->histo->sum_us);
        }
        fn (arg, &info);
    }
}

void
qn_metrics_each (qn_kernel_t *self, qn_metric_each_fn *fn, void *arg)
{
    s_each (&self->counters->plain, fn, arg);
    s_each (&self->counters->series, fn, arg);
}
