/*  actors/sqs/akeys.c - the SQS door's access keys of queen.sqs_keys
    A cache, inside codec_sqs's thread, of the access keys stored per
    tenant (migrations/0017_sqs_keys.sql; docs/sqs.md "Access keys"): key
    id -> secret and tenant. It is reloaded whole every SQS_KEYS_REFRESH_MS
    (catalogue statement sqs_keys_enabled on pg_reader), so a key disabled
    or created elsewhere takes effect within that time; a key the cache
    does not hold is asked for at once (sqs_key_get on pg_reader) while
    its requests wait here as copies of their envelopes, replayed through
    the codec when the answer comes: a key created a moment ago works at
    once, and the codec's loop never blocks. An unknown or disabled key is
    remembered as such for S_NEG_TTL_MS, so a client with a bad key costs
    at most one lookup a second.
    Keys of SQS_CREDENTIALS are not here: the codec checks them first and
    they act for the default tenant.
    Sends     PG_EXEC (sqs_key_get, sqs_keys_enabled) to pg_reader
    Owns      the cache, the lookups in flight and their waiting requests
    Failure   a lookup that fails or times out is remembered for
              S_NEG_TTL_MS as "failed": its requests get ServiceUnavailable;
              a reload that fails keeps the last good cache
*/
#include "actors/sqs/sqs_int.h"
#include "actors/pg/call.h"
#include "actors/pg/statements.h"
#include "base/hashmap.h"
#include "base/log.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_NEG_TTL_MS    1000    //  An unknown, disabled or failed key is asked again after this
#define S_MAX_WAITING   4096    //  Requests waiting for lookups, all keys together
#define S_PG_TIMEOUT_MS 10000

typedef struct s_entry s_entry_t;
struct s_entry {
    s_entry_t *next;            //  Same hash bucket
    char *access_key;           //  Owned
    char *secret;               //  Owned (wiped on free); NULL unless S_OK
    char tenant [QN_SQS_TENANT_MAX];
    int state;                  //  QN_SQS_AKEY_*
    int64_t at_ms;              //  Monotonic: when the database said so
};

typedef struct s_waiter s_waiter_t;
struct s_waiter {
    s_waiter_t *next;
    char *body;                 //  Owned copy of the envelope body
    size_t body_len;
    char *frame;                //  Owned copy of its frame (the HTTP body)
    size_t frame_len;
    bool has_frame;
};

typedef struct s_lookup s_lookup_t;
struct s_lookup {
    s_lookup_t *next;
    qn_sqs_akeys_t *self;       //  Not owned
    char *access_key;           //  Owned
    s_waiter_t *head, *tail;
};

struct qn_sqs_akeys {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    qn_sqs_replay_fn *replay;
    void *replay_arg;
    qn_hashmap_t *cache;        //  shorthash -> s_entry_t chain (owned)
    uint8_t hkey [crypto_shorthash_KEYBYTES];
    s_lookup_t *lookups;        //  In flight (owned)
    uint32_t waiting;
    bool reloading;
    uint64_t timer;
    msgpack_sbuffer exec;       //  Reused PG_EXEC body
};

static uint64_t
s_hash (qn_sqs_akeys_t *self, const char *ak)
{
    uint8_t h [crypto_shorthash_BYTES];
    crypto_shorthash (h, (const uint8_t *) ak, strlen (ak), self->hkey);
    uint64_t v;
    memcpy (&v, h, sizeof v);
    return v;
}

static void
s_entry_free (s_entry_t *e)
{
    if (e->secret) {
        sodium_memzero (e->secret, strlen (e->secret));
        free (e->secret);
    }
    free (e->access_key);
    free (e);
}

static void
s_chain_free (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    for (s_entry_t *e = value, *next; e; e = next) {
        next = e->next;
        s_entry_free (e);
    }
}

static s_entry_t *
s_find (qn_sqs_akeys_t *self, const char *ak)
{
    for (s_entry_t *e = qn_hashmap_get (self->cache, s_hash (self, ak)); e; e = e->next)
        if (!strcmp (e->access_key, ak))
            return e;
    return NULL;
}

//  Sets (or replaces) the entry of ak.
static void
s_put (qn_sqs_akeys_t *self, const char *ak, int state, const char *secret, size_t secret_len,
       const char *tenant, size_t tenant_len)
{
    uint64_t h = s_hash (self, ak);
    s_entry_t *head = qn_hashmap_get (self->cache, h);
    s_entry_t *e = head;
    while (e && strcmp (e->access_key, ak))
        e = e->next;
    if (!e) {
        e = qn_zalloc (sizeof *e);
        e->access_key = qn_strdup (ak);
        e->next = head;
        qn_hashmap_put (self->cache, h, e);
    }
    if (e->secret) {
        sodium_memzero (e->secret, strlen (e->secret));
        free (e->secret);
        e->secret = NULL;
    }
    e->state = state;
    e->at_ms = qn_now_ms ();
    e->tenant [0] = 0;
    if (state == QN_SQS_AKEY_OK) {
        e->secret = qn_strndup (secret, secret_len);
        snprintf (e->tenant, sizeof e->tenant, "%.*s", (int) tenant_len, tenant);
    }
}

// ------------------------------------------------------------------ result cells
static const char *
s_cell_str (const qn_pg_result_t *res, uint32_t r, uint32_t c, size_t *len)
{
    const msgpack_object *o = qn_pg_result_col (res, r, c);
    *len = 0;
    if (o && o->type == MSGPACK_OBJECT_STR) {
        *len = o->via.str.size;
        return o->via.str.ptr;
    }
    if (o && o->type == MSGPACK_OBJECT_BIN) {
        *len = o->via.bin.size;
        return o->via.bin.ptr;
    }
    return NULL;
}

static bool
s_cell_true (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const msgpack_object *o = qn_pg_result_col (res, r, c);
    return o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
}

// ------------------------------------------------------------------ the periodic reload
static void
s_on_reload (void *self_, void *arg, const qn_env_t *env)
{
    (void) self_;
    qn_sqs_akeys_t *self = arg;
    self->reloading = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env? env->body.ptr: NULL, env? env->body.len: 0, &res);
    char why [160];
    if (qn_pg_result_failed (&res, why, sizeof why)) {
        qn_count (self->kernel, "sqs_keys_reload_failed", 1);
        qn_pg_result_free (&res);
        return;                         //  The last good cache stays
    }
    //  The table as it is now: every key not in it is forgotten (a
    //  disabled or removed key is asked for again when next used).
    qn_hashmap_each (self->cache, s_chain_free, NULL);
    qn_hashmap_destroy (&self->cache);
    self->cache = qn_hashmap_new ();
    for (uint32_t i = 0; i < res.row_count; i++) {
        size_t ak_len, sec_len, ten_len;
        const char *ak = s_cell_str (&res, i, 0, &ak_len);
        const char *sec = s_cell_str (&res, i, 1, &sec_len);
        const char *ten = s_cell_str (&res, i, 2, &ten_len);
        if (!ak || !sec || ak_len == 0 || ak_len > QN_SQS_AKEY_MAX || ten_len >= QN_SQS_TENANT_MAX)
            continue;
        char key [QN_SQS_AKEY_MAX + 1];
        snprintf (key, sizeof key, "%.*s", (int) ak_len, ak);
        s_put (self, key, QN_SQS_AKEY_OK, sec, sec_len, ten? ten: "", ten_len);
    }
    qn_gauge_set (self->kernel, "sqs_keys_cached", (int64_t) res.row_count);
    qn_pg_result_free (&res);
}

static void
s_reload (void *self_, void *arg)
{
    (void) self_;
    qn_sqs_akeys_t *self = arg;
    if (self->reloading)
        return;
    if (qn_pg_call (self->kernel, "pg_reader", &self->exec, QN_SQL_SQS_KEYS_ENABLED, NULL, NULL,
                    S_PG_TIMEOUT_MS, s_on_reload, self) == 0)
        self->reloading = true;
}

// ------------------------------------------------------------------ a lookup on a miss
static void
s_waiters_replay (qn_sqs_akeys_t *self, s_waiter_t *w)
{
    while (w) {
        s_waiter_t *next = w->next;
        qn_env_t env = { 0 };
        env.type = QN_MSG_HTTP_REQUEST;
        env.body.ptr = w->body;
        env.body.len = w->body_len;
        if (w->has_frame) {
            env.frames [0].ptr = w->frame;
            env.frames [0].len = w->frame_len;
            env.frame_count = 1;
        }
        self->waiting--;
        self->replay (self->replay_arg, &env);
        free (w->body);
        free (w->frame);
        free (w);
        w = next;
    }
}

static void
s_on_lookup (void *self_, void *arg, const qn_env_t *env)
{
    (void) self_;
    s_lookup_t *l = arg;
    qn_sqs_akeys_t *self = l->self;
    qn_pg_result_t res;
    qn_pg_result_decode (env? env->body.ptr: NULL, env? env->body.len: 0, &res);
    char why [160];
    if (qn_pg_result_failed (&res, why, sizeof why)) {
        qn_warn ("sqs access key lookup failed: reason=%s", why);
        s_put (self, l->access_key, QN_SQS_AKEY_FAILED, NULL, 0, NULL, 0);
    }
    else
    if (res.row_count == 0 || !s_cell_true (&res, 0, 2))
        s_put (self, l->access_key, QN_SQS_AKEY_UNKNOWN, NULL, 0, NULL, 0);
    else {
        size_t sec_len, ten_len;
        const char *sec = s_cell_str (&res, 0, 0, &sec_len);
        const char *ten = s_cell_str (&res, 0, 1, &ten_len);
        if (sec && ten_len < QN_SQS_TENANT_MAX)
            s_put (self, l->access_key, QN_SQS_AKEY_OK, sec, sec_len, ten? ten: "", ten_len);
        else
            s_put (self, l->access_key, QN_SQS_AKEY_UNKNOWN, NULL, 0, NULL, 0);
    }
    qn_pg_result_free (&res);
    //  Off the list first: a replayed request finds the entry, never this.
    s_lookup_t **pp = &self->lookups;
    while (*pp != l)
        pp = &(*pp)->next;
    *pp = l->next;
    s_waiters_replay (self, l->head);
    free (l->access_key);
    free (l);
}

// ------------------------------------------------------------------ API
qn_sqs_akeys_t *
qn_sqs_akeys_new (qn_kernel_t *kernel, const qn_config_t *config, qn_sqs_replay_fn *replay,
                  void *arg)
{
    qn_sqs_akeys_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    self->replay = replay;
    self->replay_arg = arg;
    self->cache = qn_hashmap_new ();
    crypto_shorthash_keygen (self->hkey);
    msgpack_sbuffer_init (&self->exec);
    return self;
}

void
qn_sqs_akeys_start (qn_sqs_akeys_t *self)
{
    uint32_t every = (uint32_t) self->config->sqs_keys_refresh_ms;
    s_reload (self->kernel, self);
    self->timer = qn_timer_add (self->kernel, every, every, s_reload, self);
}

int
qn_sqs_akeys_find (qn_sqs_akeys_t *self, const char *access_key, const char **secret,
                   char tenant [QN_SQS_TENANT_MAX])
{
    s_entry_t *e = s_find (self, access_key);
    if (!e)
        return QN_SQS_AKEY_MISS;
    if (e->state != QN_SQS_AKEY_OK && qn_now_ms () - e->at_ms >= S_NEG_TTL_MS)
        return QN_SQS_AKEY_MISS;
    if (e->state == QN_SQS_AKEY_OK) {
        *secret = e->secret;
        snprintf (tenant, QN_SQS_TENANT_MAX, "%s", e->tenant);
    }
    return e->state;
}

int
qn_sqs_akeys_wait (qn_sqs_akeys_t *self, const char *access_key, const qn_env_t *env)
{
    if (self->waiting >= S_MAX_WAITING || strlen (access_key) > QN_SQS_AKEY_MAX)
        return -1;
    s_lookup_t *l = self->lookups;
    while (l && strcmp (l->access_key, access_key))
        l = l->next;
    if (!l) {
        l = qn_zalloc (sizeof *l);
        l->self = self;
        l->access_key = qn_strdup (access_key);
        qn_pg_args_t a;
        qn_pg_args_init (&a);
        qn_pg_args_cstr (&a, access_key);
        int rc = qn_pg_call (self->kernel, "pg_reader", &self->exec, QN_SQL_SQS_KEY_GET, NULL, &a,
                             S_PG_TIMEOUT_MS, s_on_lookup, l);
        qn_pg_args_free (&a);
        if (rc) {
            free (l->access_key);
            free (l);
            return -1;
        }
        l->next = self->lookups;
        self->lookups = l;
        qn_count (self->kernel, "sqs_keys_lookups", 1);
    }
    s_waiter_t *w = qn_zalloc (sizeof *w);
    w->body = qn_malloc (env->body.len? env->body.len: 1);
    memcpy (w->body, env->body.ptr, env->body.len);
    w->body_len = env->body.len;
    if (env->frame_count) {
        w->has_frame = true;
        w->frame_len = env->frames [0].len;
        w->frame = qn_malloc (w->frame_len? w->frame_len: 1);
        memcpy (w->frame, env->frames [0].ptr, w->frame_len);
    }
    if (l->tail)
        l->tail->next = w;
    else
        l->head = w;
    l->tail = w;
    self->waiting++;
    return 0;
}

void
qn_sqs_akeys_destroy (qn_sqs_akeys_t **self_p)
{
    qn_sqs_akeys_t *self = *self_p;
    if (!self)
        return;
    if (self->timer)
        qn_timer_cancel (self->kernel, self->timer);
    qn_hashmap_each (self->cache, s_chain_free, NULL);
    qn_hashmap_destroy (&self->cache);
    //  Lookups still in flight: their replies find nothing (the kernel
    //  drops replies of a stopped actor); their requests are dropped.
    while (self->lookups) {
        s_lookup_t *l = self->lookups;
        self->lookups = l->next;
        for (s_waiter_t *w = l->head, *next; w; w = next) {
            next = w->next;
            free (w->body);
            free (w->frame);
            free (w);
        }
        free (l->access_key);
        free (l);
    }
    msgpack_sbuffer_destroy (&self->exec);
    sodium_memzero (self->hkey, sizeof self->hkey);
    free (self);
    *self_p = NULL;
}
