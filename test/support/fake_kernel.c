/*  test/support/fake_kernel.c - the kernel, faked (see fake_kernel.h)
    Single-threaded: every "actor" runs inline on the test's thread. The
    calling actor is a file-static pointer set while one of its handlers,
    timers or reply callbacks runs ("main" otherwise), as the real
    kernel's thread-local one.
*/
#include "test/support/fake_kernel.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define S_MAX_ACTORS 32
#define S_MAX_SUBS   16
#define S_MAX_COUNTERS 1024

typedef struct s_writable {
    char to [QN_ENV_MAX_NAME + 1];
    qn_writable_fn *cb;
    void *arg;
    struct qn_actor *actor;
    struct s_writable *next;
} s_writable_t;

struct qn_actor {
    char name [QN_ENV_MAX_NAME + 1];
    const qn_route_t *routes;
    void *self;
    qn_destroy_fn *destroy;
    char *subs [S_MAX_SUBS];    //  Owned topic prefixes
    size_t sub_count;
    bool full;                  //  Inbox refuses messages
    bool done;
};

typedef struct {
    uint64_t id;
    int64_t due_ms;
    uint32_t interval_ms;
    qn_timer_fn *fn;
    void *arg;
    struct qn_actor *actor;     //  NULL = main
    bool internal;              //  A request's deadline
} s_timer_t;

typedef struct {
    uint64_t corr;
    qn_reply_fn *cb;
    void *arg;
    struct qn_actor *actor;
    uint64_t timer_id;
} s_pending_t;

struct qn_kernel {
    const qn_config_t *config;  //  Not owned
    struct qn_actor *actors [S_MAX_ACTORS];
    size_t actor_count;
    struct qn_actor main;       //  The test itself ("main")
    qn_fake_msg_t **msgs;       //  Owned, recorded in order
    size_t msg_count, msg_cap;
    s_timer_t **timers;         //  Owned, unordered
    size_t timer_count, timer_cap;
    uint64_t next_timer_id;
    s_pending_t **pending;      //  Owned
    size_t pending_count, pending_cap;
    s_writable_t *writable;     //  Owned list
    uint64_t corr;
    bool stopping;
    struct {
        char name [64];
        int64_t value;
    } counters [S_MAX_COUNTERS];
    size_t counter_count;
};

static qn_fake_t *s_fake;           //  The one fake alive
static struct qn_actor *s_current;  //  NULL = main
static int64_t s_clock_us = 1000000000;     //  Monotonic: starts at 1000 s
static const int64_t s_wall_base_us = 1764500000000000;

// ------------------------------------------------------------------ helpers
//  Grows *array (of pointers) to hold one more.
static void
s_push (void ***array, size_t *count, size_t *cap, void *item)
{
    if (*count == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *array = qn_realloc (*array, *cap * sizeof (void *));
    }
    (*array) [(*count)++] = item;
}

static void
s_remove_at (void **array, size_t *count, size_t i)
{
    memmove (&array [i], &array [i + 1], (*count - i - 1) * sizeof (void *));
    (*count)--;
}

static struct qn_actor *
s_actor (qn_fake_t *self, const char *name)
{
    for (size_t i = 0; i < self->actor_count; i++)
        if (!strcmp (self->actors [i]->name, name))
            return self->actors [i];
    return NULL;
}

static const char *
s_name (void)
{
    return s_current ? s_current->name : "main";
}

static void *
s_self_of (struct qn_actor *a)
{
    return a ? a->self : NULL;
}

//  Runs the handler of env's type in actor a as the current actor.
static int
s_dispatch (struct qn_actor *a, const qn_env_t *env)
{
    for (const qn_route_t *r = a->routes; r && r->fn; r++)
        if (r->type == env->type) {
            struct qn_actor *was = s_current;
            s_current = a;
            int rc = r->fn (a->self, env);
            s_current = was;
            return rc;
        }
    return QN_ENOENT;
}

static void
s_env (qn_env_t *env, uint16_t type, const void *body, size_t len)
{
    memset (env, 0, sizeof *env);
    env->version = QN_ENV_VERSION;
    env->type = type;
    env->from = (qn_slice_t) { "test", 4 };
    env->reply_to = (qn_slice_t) { "test", 4 };
    env->body = (qn_slice_t) { body, len };
    env->received_ms = qn_now_ms ();
}

//  Records a message; takes the frames (their data is set to NULL).
static qn_fake_msg_t *
s_record (qn_fake_t *self, qn_fake_kind_t kind, const char *to, const qn_msg_t *msg)
{
    qn_fake_msg_t *m = qn_zalloc (sizeof *m);
    m->kind = kind;
    snprintf (m->from, sizeof m->from, "%s", s_name ());
    snprintf (m->to, sizeof m->to, "%s", to);
    m->type = msg->type;
    m->corr = msg->corr;
    m->flags = msg->flags;
    qn_buf_append (&m->body, msg->body ? msg->body : "", msg->body_len);
    for (uint32_t i = 0; i < msg->frame_count && i < 8; i++) {
        qn_frame_t *f = &msg->frames [i];
        qn_buf_append (&m->frames [i], f->data ? f->data : "", f->len);
        free (f->data);
        f->data = NULL;
        m->frame_count++;
    }
    s_push ((void ***) &self->msgs, &self->msg_count, &self->msg_cap, m);
    return m;
}

static void
s_msg_free (qn_fake_msg_t *m)
{
    qn_buf_free (&m->body);
    for (uint32_t i = 0; i < 8; i++)
        qn_buf_free (&m->frames [i]);
    free (m);
}

// ------------------------------------------------------------------ clock
int64_t
qn_now_us (void)
{
    return s_clock_us;
}

int64_t
qn_now_ms (void)
{
    return s_clock_us / 1000;
}

int64_t
qn_wall_us (void)
{
    return s_wall_base_us + s_clock_us;
}

const char *
qn_actor_name (void)
{
    return s_name ();
}

// ------------------------------------------------------------------ counters
static int64_t *
s_counter (qn_kernel_t *self, const char *name)
{
    for (size_t i = 0; i < self->counter_count; i++)
        if (!strcmp (self->counters [i].name, name))
            return &self->counters [i].value;
    assert (self->counter_count < S_MAX_COUNTERS);
    snprintf (self->counters [self->counter_count].name, 64, "%s", name);
    self->counters [self->counter_count].value = 0;
    return &self->counters [self->counter_count++].value;
}

void
qn_count (qn_kernel_t *self, const char *name, int64_t delta)
{
    *s_counter (self, name) += delta;
}

void
qn_gauge_set (qn_kernel_t *self, const char *name, int64_t value)
{
    *s_counter (self, name) = value;
}

int64_t
qn_counter (qn_kernel_t *self, const char *name)
{
    for (size_t i = 0; i < self->counter_count; i++)
        if (!strcmp (self->counters [i].name, name))
            return self->counters [i].value;
    return 0;
}

void
qn_counters_each (qn_kernel_t *self, void (*fn) (void *, const char *, int64_t), void *arg)
{
    for (size_t i = 0; i < self->counter_count; i++)
        fn (arg, self->counters [i].name, self->counters [i].value);
}

//  Series: plain counters of the fake named "family{labels}" (cut at 63
//  bytes); a histogram counts observations. Handles are the counters.
struct qn_metric {
    int64_t value;
};

const int64_t qn_metric_bounds_us [QN_METRIC_BUCKETS] = {
    500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000,
    1000000, 2500000, 5000000, 10000000, 30000000, 60000000
};

qn_metric_t *
qn_metric (qn_kernel_t *self, qn_metric_kind_t kind, const char *family, const char *labels)
{
    (void) kind;
    char name [256];
    snprintf (name, sizeof name, labels && labels [0] ? "%s{%s}" : "%s", family, labels);
    name [63] = 0;
    return (qn_metric_t *) s_counter (self, name);
}

qn_metric_t *
qn_metric_queue (qn_kernel_t *self, qn_metric_kind_t kind, const char *family,
                 const char *queue, size_t queue_len)
{
    char labels [192];
    snprintf (labels, sizeof labels, "queue=\"%.*s\"", (int) queue_len, queue);
    return qn_metric (self, kind, family, labels);
}

void
qn_metric_add (qn_metric_t *m, int64_t delta)
{
    if (m)
        m->value += delta;
}

void
qn_metric_set (qn_metric_t *m, int64_t value)
{
    if (m)
        m->value = value;
}

void
qn_metric_observe_us (qn_metric_t *m, int64_t us)
{
    (void) us;
    if (m)
        m->value++;
}

size_t
qn_metric_label_escape (char *out, size_t size, const char *value, size_t len)
{
    size_t n = len < size ? len : size - 1;
    memcpy (out, value, n);
    out [n] = 0;
    return n;
}

void
qn_metrics_each (qn_kernel_t *self, qn_metric_each_fn *fn, void *arg)
{
    for (size_t i = 0; i < self->counter_count; i++) {
        const char *brace = strchr (self->counters [i].name, '{');
        qn_metric_info_t info = {
            .kind = QN_METRIC_COUNTER, .name = self->counters [i].name,
            .family_len = brace ? (size_t) (brace - self->counters [i].name)
                                : strlen (self->counters [i].name),
            .value = self->counters [i].value
        };
        fn (arg, &info);
    }
}

// ------------------------------------------------------------------ timers
static uint64_t
s_timer_add (qn_kernel_t *self, int64_t delay_ms, uint32_t interval_ms, qn_timer_fn *fn,
             void *arg, bool internal)
{
    s_timer_t *t = qn_zalloc (sizeof *t);
    t->id = ++self->next_timer_id;
    t->due_ms = qn_now_ms () + delay_ms;
    t->interval_ms = interval_ms;
    t->fn = fn;
    t->arg = arg;
    t->actor = s_current;
    t->internal = internal;
    s_push ((void ***) &self->timers, &self->timer_count, &self->timer_cap, t);
    return t->id;
}

uint64_t
qn_timer_add (qn_kernel_t *self, uint32_t delay_ms, uint32_t interval_ms,
              qn_timer_fn *fn, void *arg)
{
    return s_timer_add (self, delay_ms, interval_ms, fn, arg, false);
}

void
qn_timer_cancel (qn_kernel_t *self, uint64_t id)
{
    for (size_t i = 0; i < self->timer_count; i++)
        if (self->timers [i]->id == id) {
            free (self->timers [i]);
            s_remove_at ((void **) self->timers, &self->timer_count, i);
            return;
        }
}

//  The earliest timer due at or before until_ms (ties: the older), or -1.
static ssize_t
s_timer_due (qn_fake_t *self, int64_t until_ms)
{
    ssize_t best = -1;
    for (size_t i = 0; i < self->timer_count; i++) {
        s_timer_t *t = self->timers [i];
        if (t->due_ms > until_ms)
            continue;
        if (best < 0 || t->due_ms < self->timers [best]->due_ms
        ||  (t->due_ms == self->timers [best]->due_ms && t->id < self->timers [best]->id))
            best = (ssize_t) i;
    }
    return best;
}

void
qn_fake_advance (qn_fake_t *self, int64_t ms)
{
    int64_t until_ms = qn_now_ms () + ms;
    ssize_t i;
    while ((i = s_timer_due (self, until_ms)) >= 0) {
        s_timer_t *t = self->timers [i];
        if (t->due_ms * 1000 > s_clock_us)
            s_clock_us = t->due_ms * 1000;
        qn_timer_fn *fn = t->fn;
        void *arg = t->arg;
        struct qn_actor *a = t->actor;
        if (t->interval_ms)
            t->due_ms += t->interval_ms;
        else {
            free (t);
            s_remove_at ((void **) self->timers, &self->timer_count, (size_t) i);
        }
        struct qn_actor *was = s_current;
        s_current = a;
        fn (s_self_of (a), arg);
        s_current = was;
    }
    if (until_ms * 1000 > s_clock_us)
        s_clock_us = until_ms * 1000;
}

size_t
qn_fake_timers (qn_fake_t *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->timer_count; i++)
        n += !self->timers [i]->internal;
    return n;
}

// ------------------------------------------------------------------ messaging
int
qn_send (qn_kernel_t *self, const qn_msg_t *msg)
{
    struct qn_actor *to = s_actor (self, msg->to);
    if (to && to->full)
        return QN_EAGAIN;
    s_record (self, QN_FAKE_SEND, msg->to, msg);
    return 0;
}

int
qn_send_body (qn_kernel_t *self, const char *to, uint16_t type,
              uint64_t corr, const void *body, size_t len)
{
    qn_msg_t msg = { .to = to, .type = type, .corr = corr, .body = body, .body_len = len };
    return qn_send (self, &msg);
}

int
qn_reply (qn_kernel_t *self, const qn_env_t *req, uint16_t type,
          const void *body, size_t len, qn_frame_t *frames, uint32_t frame_count)
{
    char to [QN_ENV_MAX_NAME + 1];
    snprintf (to, sizeof to, "%.*s", (int) req->reply_to.len, req->reply_to.ptr);
    if (!to [0])
        return 0;
    struct qn_actor *dest = s_actor (self, to);
    if (dest && dest->full)
        return QN_EAGAIN;
    qn_msg_t msg = {
        .to = to, .type = type, .corr = req->corr, .flags = QN_ENV_FLAG_REPLY,
        .body = body, .body_len = len, .frames = frames, .frame_count = frame_count
    };
    s_record (self, QN_FAKE_REPLY, to, &msg);
    return 0;
}

uint64_t
qn_corr_next (qn_kernel_t *self)
{
    return ++self->corr;
}

static ssize_t
s_pending_find (qn_fake_t *self, uint64_t corr)
{
    for (size_t i = 0; i < self->pending_count; i++)
        if (self->pending [i]->corr == corr)
            return (ssize_t) i;
    return -1;
}

//  A request's deadline: its callback runs with no envelope.
static void
s_request_expired (void *actor_self, void *arg)
{
    (void) actor_self;
    qn_fake_t *self = s_fake;
    uint64_t corr = (uint64_t) (uintptr_t) arg;
    ssize_t i = s_pending_find (self, corr);
    if (i < 0)
        return;
    s_pending_t *p = self->pending [i];
    s_remove_at ((void **) self->pending, &self->pending_count, (size_t) i);
    qn_count (self, "kernel_request_timeouts", 1);
    p->cb (s_self_of (p->actor), p->arg, NULL);
    free (p);
}

int
qn_request (qn_kernel_t *self, qn_msg_t *msg, uint32_t timeout_ms, qn_reply_fn *cb, void *arg)
{
    struct qn_actor *to = s_actor (self, msg->to);
    if (to && to->full)
        return QN_EAGAIN;
    if (!msg->corr)
        msg->corr = qn_corr_next (self);
    if (!msg->ttl_ms)
        msg->ttl_ms = timeout_ms;
    s_record (self, QN_FAKE_REQUEST, msg->to, msg);
    s_pending_t *p = qn_zalloc (sizeof *p);
    p->corr = msg->corr;
    p->cb = cb;
    p->arg = arg;
    p->actor = s_current;
    p->timer_id = s_timer_add (self, timeout_ms, 0, s_request_expired,
                               (void *) (uintptr_t) msg->corr, true);
    s_push ((void ***) &self->pending, &self->pending_count, &self->pending_cap, p);
    return 0;
}

int
qn_fake_answer (qn_fake_t *self, size_t i, uint16_t type, const void *body, size_t len)
{
    if (i >= self->msg_count || self->msgs [i]->kind != QN_FAKE_REQUEST)
        return QN_ENOENT;
    ssize_t at = s_pending_find (self, self->msgs [i]->corr);
    if (at < 0)
        return QN_ENOENT;
    s_pending_t *p = self->pending [at];
    s_remove_at ((void **) self->pending, &self->pending_count, (size_t) at);
    qn_timer_cancel (self, p->timer_id);
    qn_env_t env;
    s_env (&env, type, body, len);
    env.corr = p->corr;
    env.flags = QN_ENV_FLAG_REPLY;
    env.from = (qn_slice_t) { self->msgs [i]->to, strlen (self->msgs [i]->to) };
    struct qn_actor *was = s_current;
    s_current = p->actor;
    p->cb (s_self_of (p->actor), p->arg, &env);
    s_current = was;
    free (p);
    return 0;
}

size_t
qn_fake_pending (qn_fake_t *self)
{
    return self->pending_count;
}

int
qn_on_writable (qn_kernel_t *self, const char *to, qn_writable_fn *cb, void *arg)
{
    s_writable_t *w = qn_zalloc (sizeof *w);
    snprintf (w->to, sizeof w->to, "%s", to);
    w->cb = cb;
    w->arg = arg;
    w->actor = s_current;
    w->next = self->writable;
    self->writable = w;
    return 0;
}

void
qn_fake_full (qn_fake_t *self, const char *to, bool full)
{
    struct qn_actor *a = s_actor (self, to);
    assert (a);
    a->full = full;
    if (full)
        return;
    //  Take the waiters for `to` first: a callback may wait again.
    s_writable_t *ready = NULL, **at = &self->writable;
    while (*at) {
        s_writable_t *w = *at;
        if (!strcmp (w->to, to)) {
            *at = w->next;
            w->next = ready;
            ready = w;
        }
        else
            at = &w->next;
    }
    while (ready) {
        s_writable_t *w = ready;
        ready = w->next;
        struct qn_actor *was = s_current;
        s_current = w->actor;
        w->cb (s_self_of (w->actor), w->arg);
        s_current = was;
        free (w);
    }
}

// ------------------------------------------------------------------ event bus
int
qn_publish (qn_kernel_t *self, const char *topic, uint16_t type, const void *body, size_t len)
{
    qn_msg_t msg = { .type = type, .body = body, .body_len = len };
    s_record (self, QN_FAKE_PUBLISH, topic, &msg);
    return 0;
}

int
qn_subscribe (qn_kernel_t *self, const char *prefix)
{
    struct qn_actor *a = s_current ? s_current : &self->main;
    assert (a->sub_count < S_MAX_SUBS);
    a->subs [a->sub_count++] = qn_strdup (prefix);
    return 0;
}

static bool
s_subscribed (const struct qn_actor *a, const char *topic)
{
    for (size_t i = 0; i < a->sub_count; i++)
        if (!strncmp (topic, a->subs [i], strlen (a->subs [i])))
            return true;
    return false;
}

bool
qn_fake_subscribed (qn_fake_t *self, const char *name, const char *topic)
{
    struct qn_actor *a = s_actor (self, name);
    return a && s_subscribed (a, topic);
}

int
qn_fake_publish (qn_fake_t *self, const char *topic, uint16_t type, const void *body, size_t len)
{
    int n = 0;
    qn_env_t env;
    s_env (&env, type, body, len);
    env.reply_to = (qn_slice_t) { "", 0 };
    for (size_t i = 0; i < self->actor_count; i++)
        if (s_subscribed (self->actors [i], topic) && s_dispatch (self->actors [i], &env) != QN_ENOENT)
            n++;
    if (s_subscribed (&self->main, topic) && s_dispatch (&self->main, &env) != QN_ENOENT)
        n++;
    return n;
}

// ------------------------------------------------------------------ fds (ignored)
int
qn_fd_watch (qn_kernel_t *self, int fd, uint32_t events, qn_fd_fn *fn)
{
    (void) self, (void) fd, (void) events, (void) fn;
    return 0;
}

int
qn_fd_modify (qn_kernel_t *self, int fd, uint32_t events)
{
    (void) self, (void) fd, (void) events;
    return 0;
}

int
qn_fd_unwatch (qn_kernel_t *self, int fd)
{
    (void) self, (void) fd;
    return 0;
}

// ------------------------------------------------------------------ actors
qn_actor_t *
qn_actor_spawn (qn_kernel_t *self, const qn_actor_def_t *def)
{
    struct qn_actor *a = qn_zalloc (sizeof *a);
    snprintf (a->name, sizeof a->name, "%s", def->name);
    a->routes = def->routes;
    a->self = def->self;
    a->destroy = def->destroy;
    if (s_actor (self, def->name) || self->actor_count == S_MAX_ACTORS) {
        if (a->destroy)
            a->destroy (&a->self);
        free (a);
        return NULL;
    }
    self->actors [self->actor_count++] = a;
    qn_env_t env;
    s_env (&env, QN_MSG_START, "\x90", 1);
    int rc = s_dispatch (a, &env);
    if (rc < 0 && rc != QN_ENOENT) {
        self->actor_count--;
        if (a->destroy)
            a->destroy (&a->self);
        for (size_t i = 0; i < a->sub_count; i++)
            free (a->subs [i]);
        free (a);
        return NULL;
    }
    return a;
}

void
qn_actor_done (qn_kernel_t *self)
{
    (void) self;
    if (s_current)
        s_current->done = true;
}

void *
qn_fake_actor_self (qn_fake_t *self, const char *name)
{
    struct qn_actor *a = s_actor (self, name);
    return a ? a->self : NULL;
}

int
qn_fake_deliver (qn_fake_t *self, const char *to, uint16_t type,
                 const void *body, size_t len, const void *frame, size_t frame_len)
{
    struct qn_actor *a = s_actor (self, to);
    if (!a)
        return QN_ENOENT;
    qn_env_t env;
    s_env (&env, type, body, len);
    if (frame) {
        env.frames [0] = (qn_slice_t) { frame, frame_len };
        env.frame_count = 1;
    }
    return s_dispatch (a, &env);
}

// ------------------------------------------------------------------ observing
size_t
qn_fake_count (qn_fake_t *self)
{
    return self->msg_count;
}

const qn_fake_msg_t *
qn_fake_msg (qn_fake_t *self, size_t i)
{
    return i < self->msg_count ? self->msgs [i] : NULL;
}

int
qn_fake_next (qn_fake_t *self, uint16_t type)
{
    for (size_t i = 0; i < self->msg_count; i++)
        if (!self->msgs [i]->seen && self->msgs [i]->type == type) {
            self->msgs [i]->seen = true;
            return (int) i;
        }
    return -1;
}

void
qn_fake_clear (qn_fake_t *self)
{
    for (size_t i = 0; i < self->msg_count; i++)
        s_msg_free (self->msgs [i]);
    self->msg_count = 0;
}

// ------------------------------------------------------------------ kernel
qn_fake_t *
qn_fake_new (const qn_config_t *config)
{
    qn_fake_t *self = qn_zalloc (sizeof *self);
    self->config = config;
    snprintf (self->main.name, sizeof self->main.name, "main");
    assert (!s_fake);
    s_fake = self;
    s_current = NULL;
    return self;
}

qn_kernel_t *
qn_fake_kernel (qn_fake_t *self)
{
    return self;
}

qn_kernel_t *
qn_kernel_new (const qn_config_t *config)
{
    return qn_fake_new (config);
}

const qn_config_t *
qn_kernel_config (qn_kernel_t *self)
{
    return self->config;
}

void
qn_kernel_main_routes (qn_kernel_t *self, const qn_route_t *routes, void *state)
{
    self->main.routes = routes;
    self->main.self = state;
}

//  Fires what is due now; never waits.
void
qn_kernel_poll (qn_kernel_t *self, int timeout_ms)
{
    (void) timeout_ms;
    qn_fake_advance (self, 0);
}

bool
qn_kernel_stopping (qn_kernel_t *self)
{
    return self->stopping;
}

void
qn_kernel_shutdown (qn_kernel_t *self)
{
    self->stopping = true;
}

//  STOP to every actor in reverse spawn order, then their destroy.
int
qn_kernel_stop_all (qn_kernel_t *self, uint32_t deadline_ms)
{
    (void) deadline_ms;
    self->stopping = true;
    qn_env_t env;
    s_env (&env, QN_MSG_STOP, "\x90", 1);
    while (self->actor_count) {
        struct qn_actor *a = self->actors [--self->actor_count];
        s_dispatch (a, &env);
        //  The kernel frees an actor's timers and pending requests.
        for (size_t i = self->timer_count; i-- > 0; )
            if (self->timers [i]->actor == a) {
                free (self->timers [i]);
                s_remove_at ((void **) self->timers, &self->timer_count, i);
            }
        for (size_t i = self->pending_count; i-- > 0; )
            if (self->pending [i]->actor == a) {
                free (self->pending [i]);
                s_remove_at ((void **) self->pending, &self->pending_count, i);
            }
        if (a->destroy)
            a->destroy (&a->self);
        for (size_t i = 0; i < a->sub_count; i++)
            free (a->subs [i]);
        free (a);
    }
    return 0;
}

int
qn_kernel_run (qn_kernel_t *self, uint32_t stop_deadline_ms)
{
    return qn_kernel_stop_all (self, stop_deadline_ms);
}

void
qn_kernel_destroy (qn_kernel_t **self_p)
{
    qn_fake_destroy (self_p);
}

void
qn_fake_destroy (qn_fake_t **self_p)
{
    qn_fake_t *self = *self_p;
    if (!self)
        return;
    qn_kernel_stop_all (self, 0);
    qn_fake_clear (self);
    free (self->msgs);
    for (size_t i = 0; i < self->timer_count; i++)
        free (self->timers [i]);
    free (self->timers);
    for (size_t i = 0; i < self->pending_count; i++)
        free (self->pending [i]);
    free (self->pending);
    while (self->writable) {
        s_writable_t *w = self->writable;
        self->writable = w->next;
        free (w);
    }
    for (size_t i = 0; i < self->main.sub_count; i++)
        free (self->main.subs [i]);
    free (self);
    s_fake = NULL;
    *self_p = NULL;
}

qn_fake_world_t *
qn_fake_world_new (const char *(*env) (const char *name))
{
    qn_fake_world_t *self = qn_zalloc (sizeof *self);
    char err [256];
    if (qn_config_load_from (&self->config, env, err, sizeof err)) {
        fprintf (stderr, "fake world: %s\n", err);
        free (self);
        return NULL;
    }
    self->fake = qn_fake_new (&self->config);
    return self;
}

qn_fake_world_t *
qn_fake_world_start (const char *(*env) (const char *name),
                     qn_actor_t *(*spawn) (qn_kernel_t *kernel, const qn_config_t *config))
{
    qn_fake_world_t *self = qn_fake_world_new (env);
    if (self && !spawn (qn_fake_kernel (self->fake), &self->config)) {
        fprintf (stderr, "fake world: the actor did not start\n");
        qn_fake_world_destroy (&self);
    }
    return self;
}

void
qn_fake_world_destroy (qn_fake_world_t **self_p)
{
    qn_fake_world_t *self = *self_p;
    if (!self)
        return;
    qn_fake_destroy (&self->fake);
    qn_config_free (&self->config);
    free (self);
    *self_p = NULL;
}
