/*  wire/mesh.c - the mesh frame and hint coalescing (see mesh.h). Pure. */
#include "wire/mesh.h"
#include "base/hashmap.h"

#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ reading
typedef struct {
    const unsigned char *p;
    size_t left;
} s_rd_t;

static int
s_u8 (s_rd_t *r, uint8_t *v)
{
    if (r->left < 1)
        return -1;
    *v = r->p [0];
    r->p++, r->left--;
    return 0;
}

static int
s_u16 (s_rd_t *r, uint16_t *v)
{
    if (r->left < 2)
        return -1;
    *v = (uint16_t) ((r->p [0] << 8) | r->p [1]);
    r->p += 2, r->left -= 2;
    return 0;
}

static int
s_u64 (s_rd_t *r, uint64_t *v)
{
    if (r->left < 8)
        return -1;
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x = (x << 8) | r->p [i];
    *v = x;
    r->p += 8, r->left -= 8;
    return 0;
}

static int
s_str (s_rd_t *r, qn_mesh_str_t *s)
{
    uint16_t n;
    if (s_u16 (r, &n) || n > QN_MESH_MAX_STR || r->left < n)
        return -1;
    s->ptr = (const char *) r->p;
    s->len = n;
    r->p += n, r->left -= n;
    return 0;
}

int
qn_mesh_decode (const char *buf, size_t len, qn_mesh_frame_t *out,
                qn_mesh_hint_t *hints, size_t max_hints,
                qn_mesh_str_t *parts, size_t max_parts)
{
    memset (out, 0, sizeof *out);
    s_rd_t r = { (const unsigned char *) buf, buf ? len : 0 };
    uint8_t version;
    if (r.left < 2 || r.p [0] != 'Q' || r.p [1] != 'M')
        return -1;
    r.p += 2, r.left -= 2;
    if (s_u8 (&r, &version) || version != QN_MESH_VERSION || s_u8 (&r, &out->kind)
    ||  s_str (&r, &out->sender) || s_u64 (&r, &out->epoch))
        return -1;
    if (out->kind == QN_MESH_HELLO)
        return s_u64 (&r, &out->seq) || r.left ? -1 : 0;
    if (out->kind == QN_MESH_EPH) {
        uint64_t n;
        uint16_t a, b;
        if (s_u16 (&r, &a) || s_u16 (&r, &b))
            return -1;
        n = ((uint64_t) a << 16) | b;
        if (n > QN_MESH_MAX_EPH || r.left != n)
            return -1;
        out->payload.ptr = (const char *) r.p;
        out->payload.len = (size_t) n;
        return 0;
    }
    if (out->kind != QN_MESH_HINTS)
        return -1;
    uint16_t count;
    if (s_u16 (&r, &count) || count > QN_MESH_MAX_HINTS || count > max_hints)
        return -1;
    size_t part_used = 0;
    for (uint16_t i = 0; i < count; i++) {
        qn_mesh_hint_t *h = &hints [i];
        memset (h, 0, sizeof *h);
        uint8_t b;
        if (s_u8 (&r, &h->type))
            return -1;
        switch (h->type) {
            case QN_MESH_H_COMMITTED: {
                uint16_t n;
                if (s_str (&r, &h->tenant) || s_str (&r, &h->queue) || s_u16 (&r, &n)
                ||  n > QN_MESH_MAX_PARTS || n > max_parts - part_used)
                    return -1;
                h->part_first = (uint32_t) part_used;
                h->part_count = n;
                for (uint16_t k = 0; k < n; k++)
                    if (s_str (&r, &parts [part_used++]))
                        return -1;
                break;
            }
            case QN_MESH_H_QCONF:
                if (s_str (&r, &h->tenant) || s_str (&r, &h->queue))
                    return -1;
                break;
            case QN_MESH_H_MAINT:
                if (s_u8 (&r, &b) || b > 1)
                    return -1;
                h->push = b;
                if (s_u8 (&r, &b) || b > 1)
                    return -1;
                h->pop = b;
                break;
            case QN_MESH_H_GROUP:
                if (s_str (&r, &h->tenant) || s_str (&r, &h->queue) || s_str (&r, &h->group)
                ||  s_u8 (&r, &h->what)
                ||  (h->what != QN_MESH_GROUP_DELETED && h->what != QN_MESH_GROUP_SOUGHT))
                    return -1;
                break;
            case QN_MESH_H_STALE:
                break;
            default:
                return -1;
        }
    }
    if (r.left)
        return -1;
    out->hint_count = count;
    return 0;
}

// ------------------------------------------------------------------ writing
static void
s_put_u8 (qn_buf_t *b, uint8_t v)
{
    qn_buf_append (b, &v, 1);
}

static void
s_put_u16 (qn_buf_t *b, uint16_t v)
{
    unsigned char x [2] = { (unsigned char) (v >> 8), (unsigned char) v };
    qn_buf_append (b, x, 2);
}

static void
s_put_u64 (qn_buf_t *b, uint64_t v)
{
    unsigned char x [8];
    for (int i = 7; i >= 0; i--, v >>= 8)
        x [i] = (unsigned char) v;
    qn_buf_append (b, x, 8);
}

static void
s_put_str (qn_buf_t *b, const char *s, size_t len)
{
    if (len > QN_MESH_MAX_STR)
        len = QN_MESH_MAX_STR;
    s_put_u16 (b, (uint16_t) len);
    if (len)
        qn_buf_append (b, s, len);
}

static void
s_put_head (qn_buf_t *out, uint8_t kind, const char *sender, size_t sender_len, uint64_t epoch)
{
    qn_buf_append (out, "QM", 2);
    s_put_u8 (out, QN_MESH_VERSION);
    s_put_u8 (out, kind);
    s_put_str (out, sender, sender_len);
    s_put_u64 (out, epoch);
}

void
qn_mesh_encode_hello (qn_buf_t *out, const char *sender, size_t sender_len,
                      uint64_t epoch, uint64_t seq)
{
    s_put_head (out, QN_MESH_HELLO, sender, sender_len, epoch);
    s_put_u64 (out, seq);
}

void
qn_mesh_encode_eph (qn_buf_t *out, const char *sender, size_t sender_len, uint64_t epoch,
                    const char *payload, size_t len)
{
    s_put_head (out, QN_MESH_EPH, sender, sender_len, epoch);
    s_put_u16 (out, (uint16_t) (len >> 16));
    s_put_u16 (out, (uint16_t) len);
    if (len)
        qn_buf_append (out, payload, len);
}

static void
s_put_hint (qn_buf_t *out, const qn_mesh_hint_t *h, const qn_mesh_str_t *parts)
{
    s_put_u8 (out, h->type);
    switch (h->type) {
        case QN_MESH_H_COMMITTED: {
            s_put_str (out, h->tenant.ptr, h->tenant.len);
            s_put_str (out, h->queue.ptr, h->queue.len);
            uint32_t n = h->part_count > QN_MESH_MAX_PARTS ? 0 : h->part_count;
            s_put_u16 (out, (uint16_t) n);
            for (uint32_t k = 0; k < n; k++)
                s_put_str (out, parts [h->part_first + k].ptr, parts [h->part_first + k].len);
            break;
        }
        case QN_MESH_H_QCONF:
            s_put_str (out, h->tenant.ptr, h->tenant.len);
            s_put_str (out, h->queue.ptr, h->queue.len);
            break;
        case QN_MESH_H_MAINT:
            s_put_u8 (out, h->push ? 1 : 0);
            s_put_u8 (out, h->pop ? 1 : 0);
            break;
        case QN_MESH_H_GROUP:
            s_put_str (out, h->tenant.ptr, h->tenant.len);
            s_put_str (out, h->queue.ptr, h->queue.len);
            s_put_str (out, h->group.ptr, h->group.len);
            s_put_u8 (out, h->what);
            break;
        default:
            break;
    }
}

void
qn_mesh_encode_hints (qn_buf_t *out, const char *sender, size_t sender_len, uint64_t epoch,
                      const qn_mesh_hint_t *hints, size_t count, const qn_mesh_str_t *parts)
{
    if (count > QN_MESH_MAX_HINTS)
        count = QN_MESH_MAX_HINTS;
    s_put_head (out, QN_MESH_HINTS, sender, sender_len, epoch);
    s_put_u16 (out, (uint16_t) count);
    for (size_t i = 0; i < count; i++)
        s_put_hint (out, &hints [i], parts);
}

// ------------------------------------------------------------------ coalescing
typedef struct {
    uint8_t type;
    uint8_t what;
    bool push, pop;
    bool whole;                 //  COMMITTED: the whole queue
    char *tenant, *queue, *group;   //  Owned
    size_t tenant_len, queue_len, group_len;
    char *parts [QN_MESH_MAX_PARTS];    //  Owned
    size_t part_lens [QN_MESH_MAX_PARTS];
    uint32_t part_count;
} s_entry_t;

struct qn_mesh_coalesce {
    s_entry_t *entries;
    size_t count, cap;
    qn_hashmap_t *index;        //  Key hash -> entry index + 1
    uint64_t added, merged;
};

static uint64_t
s_fnv (uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p [i]) * 1099511628211ULL;
    return (h ^ 0xff) * 1099511628211ULL;       //  Separator: "a","bc" != "ab","c"
}

static uint64_t
s_key (const qn_mesh_hint_t *h)
{
    uint8_t kind [2] = { h->type, h->type == QN_MESH_H_GROUP ? h->what : 0 };
    uint64_t k = s_fnv (14695981039346656037ULL, kind, 2);
    if (h->type != QN_MESH_H_MAINT && h->type != QN_MESH_H_STALE) {
        k = s_fnv (k, h->tenant.ptr, h->tenant.len);
        k = s_fnv (k, h->queue.ptr, h->queue.len);
    }
    if (h->type == QN_MESH_H_GROUP)
        k = s_fnv (k, h->group.ptr, h->group.len);
    return k ? k : 1;
}

static bool
s_eq (const char *a, size_t al, const char *b, size_t bl)
{
    return al == bl && (!al || !memcmp (a, b, al));
}

static bool
s_same (const s_entry_t *e, const qn_mesh_hint_t *h)
{
    if (e->type != h->type)
        return false;
    if (h->type == QN_MESH_H_MAINT || h->type == QN_MESH_H_STALE)
        return true;
    if (!s_eq (e->tenant, e->tenant_len, h->tenant.ptr, h->tenant.len)
    ||  !s_eq (e->queue, e->queue_len, h->queue.ptr, h->queue.len))
        return false;
    return h->type != QN_MESH_H_GROUP
        || (e->what == h->what && s_eq (e->group, e->group_len, h->group.ptr, h->group.len));
}

static char *
s_dup (const char *s, size_t len)
{
    if (len > QN_MESH_MAX_STR)
        len = QN_MESH_MAX_STR;
    return s ? qn_strndup (s, len) : qn_strndup ("", 0);
}

qn_mesh_coalesce_t *
qn_mesh_coalesce_new (void)
{
    qn_mesh_coalesce_t *self = qn_zalloc (sizeof *self);
    self->index = qn_hashmap_new ();
    return self;
}

static void
s_clear (qn_mesh_coalesce_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        s_entry_t *e = &self->entries [i];
        free (e->tenant);
        free (e->queue);
        free (e->group);
        for (uint32_t k = 0; k < e->part_count; k++)
            free (e->parts [k]);
    }
    self->count = 0;
    qn_hashmap_destroy (&self->index);
    self->index = qn_hashmap_new ();
}

void
qn_mesh_coalesce_destroy (qn_mesh_coalesce_t **self_p)
{
    if (!*self_p)
        return;
    qn_mesh_coalesce_t *self = *self_p;
    s_clear (self);
    qn_hashmap_destroy (&self->index);
    free (self->entries);
    free (self);
    *self_p = NULL;
}

static void
s_add_part (s_entry_t *e, const char *partition, size_t len)
{
    if (e->whole)
        return;
    if (!partition) {
        for (uint32_t k = 0; k < e->part_count; k++)
            free (e->parts [k]);
        e->part_count = 0;
        e->whole = true;
        return;
    }
    if (len > QN_MESH_MAX_STR)
        len = QN_MESH_MAX_STR;
    for (uint32_t k = 0; k < e->part_count; k++)
        if (s_eq (e->parts [k], e->part_lens [k], partition, len))
            return;
    if (e->part_count == QN_MESH_MAX_PARTS) {
        s_add_part (e, NULL, 0);        //  Too many: wake the whole queue
        return;
    }
    e->parts [e->part_count] = s_dup (partition, len);
    e->part_lens [e->part_count++] = len;
}

void
qn_mesh_coalesce_add (qn_mesh_coalesce_t *self, const qn_mesh_hint_t *h,
                      const char *partition, size_t partition_len)
{
    self->added++;
    uint64_t key = s_key (h);
    size_t at = (size_t) (uintptr_t) qn_hashmap_get (self->index, key);
    s_entry_t *e = at ? &self->entries [at - 1] : NULL;
    if (e && s_same (e, h)) {
        self->merged++;
        if (h->type == QN_MESH_H_COMMITTED)
            s_add_part (e, partition, partition_len);
        else if (h->type == QN_MESH_H_MAINT)
            e->push = h->push, e->pop = h->pop;         //  The latest wins
        return;
    }
    if (self->count == self->cap) {
        self->cap = self->cap ? self->cap * 2 : 16;
        self->entries = qn_realloc (self->entries, self->cap * sizeof *self->entries);
    }
    e = &self->entries [self->count++];
    memset (e, 0, sizeof *e);
    e->type = h->type;
    e->what = h->what;
    e->push = h->push;
    e->pop = h->pop;
    if (h->type != QN_MESH_H_MAINT && h->type != QN_MESH_H_STALE) {
        e->tenant = s_dup (h->tenant.ptr, h->tenant.len);
        e->tenant_len = h->tenant.len > QN_MESH_MAX_STR ? QN_MESH_MAX_STR : h->tenant.len;
        e->queue = s_dup (h->queue.ptr, h->queue.len);
        e->queue_len = h->queue.len > QN_MESH_MAX_STR ? QN_MESH_MAX_STR : h->queue.len;
    }
    if (h->type == QN_MESH_H_GROUP) {
        e->group = s_dup (h->group.ptr, h->group.len);
        e->group_len = h->group.len > QN_MESH_MAX_STR ? QN_MESH_MAX_STR : h->group.len;
    }
    if (h->type == QN_MESH_H_COMMITTED)
        s_add_part (e, partition, partition_len);
    //  A hash collision with another key keeps the first one indexed: the
    //  newcomer is simply sent unmerged.
    if (!at)
        qn_hashmap_put (self->index, key, (void *) (uintptr_t) self->count);
}

size_t
qn_mesh_coalesce_count (const qn_mesh_coalesce_t *self)
{
    return self->count;
}

uint64_t
qn_mesh_coalesce_added (const qn_mesh_coalesce_t *self)
{
    return self->added;
}

uint64_t
qn_mesh_coalesce_merged (const qn_mesh_coalesce_t *self)
{
    return self->merged;
}

static size_t
s_entry_size (const s_entry_t *e)
{
    size_t n = 1 + 2 + e->tenant_len + 2 + e->queue_len + 2 + e->group_len + 4;
    for (uint32_t k = 0; k < e->part_count; k++)
        n += 2 + e->part_lens [k];
    return n;
}

size_t
qn_mesh_coalesce_flush (qn_mesh_coalesce_t *self, const char *sender, size_t sender_len,
                        uint64_t epoch, void (*fn) (void *arg, const qn_buf_t *frame), void *arg)
{
    size_t frames = 0, i = 0;
    qn_mesh_hint_t *hints = qn_malloc (QN_MESH_MAX_HINTS * sizeof *hints);
    qn_mesh_str_t *parts = qn_malloc (QN_MESH_MAX_HINTS * QN_MESH_MAX_PARTS * sizeof *parts);
    qn_buf_t out;
    qn_buf_init (&out);
    while (i < self->count) {
        size_t n = 0, np = 0, bytes = 64 + sender_len;
        while (i < self->count && n < QN_MESH_MAX_HINTS) {
            const s_entry_t *e = &self->entries [i];
            size_t sz = s_entry_size (e);
            if (n && bytes + sz > QN_MESH_MAX_FRAME)
                break;
            bytes += sz;
            qn_mesh_hint_t *h = &hints [n++];
            memset (h, 0, sizeof *h);
            h->type = e->type;
            h->what = e->what;
            h->push = e->push;
            h->pop = e->pop;
            h->tenant = (qn_mesh_str_t) { e->tenant, e->tenant_len };
            h->queue = (qn_mesh_str_t) { e->queue, e->queue_len };
            h->group = (qn_mesh_str_t) { e->group, e->group_len };
            h->part_first = (uint32_t) np;
            h->part_count = e->whole ? 0 : e->part_count;
            for (uint32_t k = 0; k < h->part_count; k++)
                parts [np++] = (qn_mesh_str_t) { e->parts [k], e->part_lens [k] };
            i++;
        }
        qn_buf_reset (&out);
        qn_mesh_encode_hints (&out, sender, sender_len, epoch, hints, n, parts);
        fn (arg, &out);
        frames++;
    }
    qn_buf_free (&out);
    free (hints);
    free (parts);
    s_clear (self);
    return frames;
}
