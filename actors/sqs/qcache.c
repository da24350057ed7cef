/*  actors/sqs/qcache.c - the last SQS settings codec_sqs read per queue
    Every successful settings read (sqs_queue, ops.c) is kept here, by
    (tenant, queue). They are used only while the database cannot be
    reached: a SendMessage(Batch) then runs on them, and its push goes to
    the disk spool like any push (docs/sqs.md, "Outage"). A queue this
    broker has not looked up since it started is not here: such a send is
    answered ServiceUnavailable. Deleting or changing a queue through this
    codec drops its entry; other changes are seen at the next read.
    A module of codec_sqs, run on its thread: receives and sends nothing.
    Owns      the entries (copies of the settings, without the attribute
              and tag texts)
    Failure   none: beyond S_MAX entries the cache starts again empty
*/
#include "actors/sqs/sqs_int.h"
#include "base/hashmap.h"

#include <stdlib.h>
#include <string.h>

#define S_MAX 10000

typedef struct {
    char *key;                  //  Owned: tenant, NUL, queue, NUL
    size_t key_len;
    qn_sqs_queue_t q;           //  attrs_json, tags_json NULL
} s_entry_t;

struct qn_sqs_qcache {
    qn_hashmap_t *entries;      //  hash of key -> s_entry_t (owned)
    uint32_t count;
};

//  The key "tenant\0queue\0" into buf; its length.
static size_t
s_key (const char *tenant, const char *queue, char *buf, size_t cap)
{
    size_t t = strnlen (tenant, cap / 2 - 1), q = strnlen (queue, cap / 2 - 1);
    memcpy (buf, tenant, t);
    buf [t] = 0;
    memcpy (buf + t + 1, queue, q);
    buf [t + 1 + q] = 0;
    return t + q + 2;
}

static uint64_t
s_hash (const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t) key [i]) * 1099511628211ULL;
    return h;
}

static void
s_entry_free (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    s_entry_t *e = value;
    free (e->key);
    free (e);
}

qn_sqs_qcache_t *
qn_sqs_qcache_new (void)
{
    qn_sqs_qcache_t *self = qn_zalloc (sizeof *self);
    self->entries = qn_hashmap_new ();
    return self;
}

void
qn_sqs_qcache_destroy (qn_sqs_qcache_t **self_p)
{
    qn_sqs_qcache_t *self = *self_p;
    if (!self)
        return;
    qn_hashmap_each (self->entries, s_entry_free, NULL);
    qn_hashmap_destroy (&self->entries);
    free (self);
    *self_p = NULL;
}

void
qn_sqs_qcache_drop (qn_sqs_qcache_t *self, const char *tenant, const char *queue)
{
    char key [256];
    uint64_t h = s_hash (key, s_key (tenant, queue, key, sizeof key));
    s_entry_t *e = qn_hashmap_get (self->entries, h);
    if (!e)
        return;
    qn_hashmap_remove (self->entries, h);
    s_entry_free (NULL, h, e);
    self->count--;
}

void
qn_sqs_qcache_put (qn_sqs_qcache_t *self, const char *tenant, const char *queue,
                   const qn_sqs_queue_t *q)
{
    //  (An entry of another key with the same hash goes too: it is read again.)
    qn_sqs_qcache_drop (self, tenant, queue);
    if (self->count >= S_MAX) {
        qn_hashmap_each (self->entries, s_entry_free, NULL);
        qn_hashmap_destroy (&self->entries);
        self->entries = qn_hashmap_new ();
        self->count = 0;
    }
    char key [256];
    size_t len = s_key (tenant, queue, key, sizeof key);
    uint64_t h = s_hash (key, len);
    s_entry_t *e = qn_zalloc (sizeof *e);
    e->key = qn_malloc (len);
    memcpy (e->key, key, len);
    e->key_len = len;
    e->q = *q;
    e->q.attrs_json = NULL;
    e->q.tags_json = NULL;
    qn_hashmap_put (self->entries, h, e);
    self->count++;
}

bool
qn_sqs_qcache_get (qn_sqs_qcache_t *self, const char *tenant, const char *queue, qn_sqs_queue_t *out)
{
    char key [256];
    size_t len = s_key (tenant, queue, key, sizeof key);
    s_entry_t *e = qn_hashmap_get (self->entries, s_hash (key, len));
    if (!e || e->key_len != len || memcmp (e->key, key, len))
        return false;
    free (out->attrs_json);
    free (out->tags_json);
    *out = e->q;
    return true;
}
