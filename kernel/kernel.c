/*  kernel/kernel.c - actor runtime: spawn, loop, messaging, bus, supervisor
    See kernel.h for the contract. Each actor owns its sockets; the only
    state shared between threads is the actor list (spawn/stop happen on
    the supervisor's thread), the counters (mutex) and the stop flag.
*/
#include "kernel/kernel.h"
#include "base/hashmap.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#define S_MAX_ACTORS     64
#define S_MAX_OUT        32
#define S_MAX_COUNTERS   512
#define S_RECV_BURST     256
#define S_DEFAULT_HWM    10000
#define S_BUS_IN         "inproc://qn.events.in"
#define S_BUS_OUT        "inproc://qn.events"
#define S_BUS_CTL        "inproc://qn.events.ctl"

enum { S_EV_FD = 0, S_EV_INBOUND = 1, S_EV_SUB = 2, S_EV_OUT = 3, S_EV_WAKE = 4 };

typedef struct s_waiter {
    qn_writable_fn *cb;
    void *arg;
    struct s_waiter *next;
} s_waiter_t;

typedef struct {
    char name [QN_ENV_MAX_NAME + 1];
    void *socket;
    s_waiter_t *waiters;        //  Owned list: callbacks for POLLOUT
    bool in_epoll;
} s_out_t;

typedef struct {
    uint64_t id;
    int64_t due_ms;
    uint32_t interval_ms;
    qn_timer_fn *fn;
    void *arg;
    size_t heap_index;
} s_timer_t;

typedef struct {
    qn_reply_fn *cb;
    void *arg;
    uint64_t timer_id;
} s_pending_t;

struct qn_actor {
    qn_kernel_t *kernel;
    char name [QN_ENV_MAX_NAME + 1];
    const qn_route_t *routes;
    void *self;
    qn_destroy_fn *destroy;
    pthread_t thread;
    bool has_thread;
    void *inbound;              //  PULL, bound at inproc://qn.<name>
    void *pub;                  //  PUB to the bus, created lazily
    void *sub;                  //  SUB from the bus, created lazily
    s_out_t out [S_MAX_OUT];
    uint32_t out_count;
    int epfd;
    int wake_fd;                //  eventfd: forced stop
    qn_fd_fn **fd_fns;          //  Indexed by fd
    size_t fd_cap;
    s_timer_t **heap;           //  Min-heap by due_ms
    size_t heap_len, heap_cap;
    qn_hashmap_t *timers;       //  id -> s_timer_t *
    qn_hashmap_t *pending;      //  corr -> s_pending_t *
    uint64_t next_timer_id;
    sem_t ready;
    atomic_bool stopping;       //  STOP delivered
    atomic_bool done;           //  Loop should exit
    atomic_bool exited;
    int start_rc;
};

typedef struct {
    char name [64];
    atomic_llong value;
} s_counter_t;

struct qn_kernel {
    void *zctx;
    const qn_config_t *config;  //  Not owned
    qn_actor_t *actors [S_MAX_ACTORS];
    uint32_t actor_count;
    qn_actor_t *main;           //  Pseudo-actor for the creating thread
    void *ctl [S_MAX_ACTORS];   //  Supervisor PUSH sockets to each actor
    pthread_t bus_thread;
    void *bus_ctl;
    atomic_ullong corr;
    atomic_bool stop_requested;
    atomic_bool stopping;
    int stop_pipe [2];
    pthread_mutex_t counters_lock;
    s_counter_t counters [S_MAX_COUNTERS];
    uint32_t counter_count;
};

static __thread qn_actor_t *s_current;

// ------------------------------------------------------------------ clock
int64_t
qn_now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
qn_now_ms (void)
{
    return qn_now_us () / 1000;
}

int64_t
qn_wall_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

const char *
qn_strerror (int rc)
{
    switch (rc) {
        case QN_OK: return "ok";
        case QN_EAGAIN: return "destination full";
        case QN_EPROTO: return "malformed message";
        case QN_ENOENT: return "not found";
        case QN_ETIMEDOUT: return "timed out";
        case QN_EINVAL: return "invalid argument";
        case QN_ESHUTDOWN: return "shutting down";
        case QN_EIO: return "i/o error";
        case QN_EDB: return "database unavailable";
        default: return "unknown error";
    }
}

const char *
qn_actor_name (void)
{
    return s_current ? s_current->name : "main";
}

// ------------------------------------------------------------------ counters
static s_counter_t *
s_counter (qn_kernel_t *self, const char *name)
{
    pthread_mutex_lock (&self->counters_lock);
    s_counter_t *c = NULL;
    for (uint32_t i = 0; i < self->counter_count; i++)
        if (!strcmp (self->counters [i].name, name)) {
            c = &self->counters [i];
            break;
        }
    if (!c && self->counter_count < S_MAX_COUNTERS) {
        c = &self->counters [self->counter_count++];
        snprintf (c->name, sizeof c->name, "%s", name);
        atomic_store (&c->value, 0);
    }
    pthread_mutex_unlock (&self->counters_lock);
    return c;
}

void
qn_count (qn_kernel_t *self, const char *name, int64_t delta)
{
    s_counter_t *c = s_counter (self, name);
    if (c)
        atomic_fetch_add (&c->value, delta);
}

void
qn_gauge_set (qn_kernel_t *self, const char *name, int64_t value)
{
    s_counter_t *c = s_counter (self, name);
    if (c)
        atomic_store (&c->value, value);
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
    pthread_mutex_lock (&self->counters_lock);
    uint32_t n = self->counter_count;
    pthread_mutex_unlock (&self->counters_lock);
    for (uint32_t i = 0; i < n; i++)
        fn (arg, self->counters [i].name, atomic_load (&self->counters [i].value));
}

// ------------------------------------------------------------------ timers (min-heap)
static void
s_heap_swap (qn_actor_t *a, size_t i, size_t j)
{
    s_timer_t *t = a->heap [i];
    a->heap [i] = a->heap [j];
    a->heap [j] = t;
    a->heap [i]->heap_index = i;
    a->heap [j]->heap_index = j;
}

static void
s_heap_up (qn_actor_t *a, size_t i)
{
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (a->heap [p]->due_ms <= a->heap [i]->due_ms)
            break;
        s_heap_swap (a, i, p);
        i = p;
    }
}

static void
s_heap_down (qn_actor_t *a, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < a->heap_len && a->heap [l]->due_ms < a->heap [m]->due_ms)
            m = l;
        if (r < a->heap_len && a->heap [r]->due_ms < a->heap [m]->due_ms)
            m = r;
        if (m == i)
            break;
        s_heap_swap (a, i, m);
        i = m;
    }
}

static void
s_heap_push (qn_actor_t *a, s_timer_t *t)
{
    if (a->heap_len == a->heap_cap) {
        a->heap_cap = a->heap_cap ? a->heap_cap * 2 : 64;
        a->heap = qn_realloc (a->heap, a->heap_cap * sizeof *a->heap);
    }
    t->heap_index = a->heap_len;
    a->heap [a->heap_len++] = t;
    s_heap_up (a, t->heap_index);
}

static void
s_heap_remove (qn_actor_t *a, s_timer_t *t)
{
    size_t i = t->heap_index;
    a->heap_len--;
    if (i != a->heap_len) {
        a->heap [i] = a->heap [a->heap_len];
        a->heap [i]->heap_index = i;
        s_heap_down (a, i);
        s_heap_up (a, i);
    }
}

//  The calling actor. Kernel calls from a thread that is not an actor are
//  programmer errors.
static qn_actor_t *
s_actor (void)
{
    if (!s_current) {
        fputs ("queen: kernel call outside an actor thread\n", stderr);
        abort ();
    }
    return s_current;
}

uint64_t
qn_timer_add (qn_kernel_t *self, uint32_t delay_ms, uint32_t interval_ms,
              qn_timer_fn *fn, void *arg)
{
    (void) self;
    qn_actor_t *a = s_actor ();
    s_timer_t *t = qn_zalloc (sizeof *t);
    t->id = ++a->next_timer_id;
    t->due_ms = qn_now_ms () + delay_ms;
    t->interval_ms = interval_ms;
    t->fn = fn;
    t->arg = arg;
    s_heap_push (a, t);
    qn_hashmap_put (a->timers, t->id, t);
    return t->id;
}

void
qn_timer_cancel (qn_kernel_t *self, uint64_t id)
{
    (void) self;
    qn_actor_t *a = s_actor ();
    s_timer_t *t = qn_hashmap_remove (a->timers, id);
    if (t) {
        s_heap_remove (a, t);
        free (t);
    }
}

static void
s_run_timers (qn_actor_t *a)
{
    int64_t now = qn_now_ms ();
    //  Bounded per iteration so a flood of timers can't starve sockets.
    for (int n = 0; n < 1024 && a->heap_len && a->heap [0]->due_ms <= now; n++) {
        s_timer_t *t = a->heap [0];
        qn_timer_fn *fn = t->fn;
        void *arg = t->arg;
        if (t->interval_ms) {
            t->due_ms = now + t->interval_ms;
            s_heap_down (a, 0);
        }
        else {
            s_heap_remove (a, t);
            qn_hashmap_remove (a->timers, t->id);
            free (t);
        }
        fn (a->self, arg);
    }
}

// ------------------------------------------------------------------ fds
int
qn_fd_watch (qn_kernel_t *self, int fd, uint32_t events, qn_fd_fn *fn)
{
    (void) self;
    qn_actor_t *a = s_actor ();
    if (fd < 0)
        return QN_EINVAL;
    if ((size_t) fd >= a->fd_cap) {
        size_t cap = a->fd_cap ? a->fd_cap : 64;
        while (cap <= (size_t) fd)
            cap *= 2;
        a->fd_fns = qn_realloc (a->fd_fns, cap * sizeof *a->fd_fns);
        memset (a->fd_fns + a->fd_cap, 0, (cap - a->fd_cap) * sizeof *a->fd_fns);
        a->fd_cap = cap;
    }
    struct epoll_event ev = { .events = events, .data.u64 = (uint64_t) fd };
    if (epoll_ctl (a->epfd, EPOLL_CTL_ADD, fd, &ev))
        return QN_EIO;
    a->fd_fns [fd] = fn;
    return 0;
}

int
qn_fd_modify (qn_kernel_t *self, int fd, uint32_t events)
{
    (void) self;
    qn_actor_t *a = s_actor ();
    struct epoll_event ev = { .events = events, .data.u64 = (uint64_t) fd };
    return epoll_ctl (a->epfd, EPOLL_CTL_MOD, fd, &ev) ? QN_EIO : 0;
}

int
qn_fd_unwatch (qn_kernel_t *self, int fd)
{
    (void) self;
    qn_actor_t *a = s_actor ();
    if (fd >= 0 && (size_t) fd < a->fd_cap)
        a->fd_fns [fd] = NULL;
    return epoll_ctl (a->epfd, EPOLL_CTL_DEL, fd, NULL) ? QN_EIO : 0;
}

static int
s_epoll_add_zmq (qn_actor_t *a, void *socket, uint32_t kind, uint32_t index)
{
    int zfd;
    size_t size = sizeof zfd;
    if (zmq_getsockopt (socket, ZMQ_FD, &zfd, &size))
        return QN_EIO;
    struct epoll_event ev = {
        .events = EPOLLIN,
        .data.u64 = ((uint64_t) kind << 32) | index
    };
    return epoll_ctl (a->epfd, EPOLL_CTL_ADD, zfd, &ev) ? QN_EIO : 0;
}

// ------------------------------------------------------------------ sending
static void
s_free_frame (void *data, void *hint)
{
    (void) hint;
    free (data);
}

static s_out_t *
s_out (qn_actor_t *a, const char *to)
{
    for (uint32_t i = 0; i < a->out_count; i++)
        if (!strcmp (a->out [i].name, to))
            return &a->out [i];
    if (a->out_count == S_MAX_OUT || strlen (to) > QN_ENV_MAX_NAME)
        return NULL;
    void *s = zmq_socket (a->kernel->zctx, ZMQ_PUSH);
    int hwm = S_DEFAULT_HWM, linger = 0;
    zmq_setsockopt (s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt (s, ZMQ_LINGER, &linger, sizeof linger);
    char endpoint [128];
    snprintf (endpoint, sizeof endpoint, "inproc://qn.%s", to);
    if (zmq_connect (s, endpoint)) {
        zmq_close (s);
        return NULL;
    }
    s_out_t *o = &a->out [a->out_count++];
    memset (o, 0, sizeof *o);
    snprintf (o->name, sizeof o->name, "%s", to);
    o->socket = s;
    return o;
}

//  Sends header + body + frames as one multipart message. Only the first
//  part can meet the high-water mark; later parts of an accepted message
//  are always taken, so a message is all-or-nothing.
static int
s_send_parts (void *socket, const qn_env_t *head, const void *body, size_t body_len,
              qn_frame_t *frames, uint32_t frame_count)
{
    qn_buf_t hb = QN_BUF_INIT;
    qn_env_encode_header (head, &hb);
    int more = (body || body_len || frame_count) ? ZMQ_SNDMORE : 0;
    int rc = zmq_send (socket, hb.data, hb.len, ZMQ_DONTWAIT | more);
    qn_buf_free (&hb);
    if (rc < 0)
        return errno == EAGAIN ? QN_EAGAIN : QN_EIO;
    if (more) {
        more = frame_count ? ZMQ_SNDMORE : 0;
        if (zmq_send (socket, body ? body : "", body_len, more) < 0)
            return QN_EIO;
        for (uint32_t i = 0; i < frame_count; i++) {
            zmq_msg_t m;
            if (frames [i].data)
                zmq_msg_init_data (&m, frames [i].data, frames [i].len, s_free_frame, NULL);
            else
                zmq_msg_init (&m);
            frames [i].data = NULL;
            if (zmq_msg_send (&m, socket, i + 1 < frame_count ? ZMQ_SNDMORE : 0) < 0) {
                zmq_msg_close (&m);
                return QN_EIO;
            }
        }
    }
    return 0;
}

static int
s_send (qn_actor_t *a, const qn_msg_t *msg, uint32_t extra_flags)
{
    if (!msg->to || !msg->to [0])
        return QN_EINVAL;
    s_out_t *o = s_out (a, msg->to);
    if (!o)
        return QN_ENOENT;
    const char *reply_to = msg->reply_to ? msg->reply_to : a->name;
    qn_env_t head = {
        .version = QN_ENV_VERSION, .type = msg->type, .corr = msg->corr,
        .from = { a->name, strlen (a->name) },
        .reply_to = { reply_to, strlen (reply_to) },
        .ttl_ms = msg->ttl_ms, .flags = msg->flags | extra_flags
    };
    int rc = s_send_parts (o->socket, &head, msg->body, msg->body_len,
                           msg->frames, msg->frame_count);
    if (rc == QN_EAGAIN)
        qn_count (a->kernel, "kernel_send_eagain", 1);
    return rc;
}

int
qn_send (qn_kernel_t *self, const qn_msg_t *msg)
{
    (void) self;
    return s_send (s_actor (), msg, 0);
}

int
qn_send_body (qn_kernel_t *self, const char *to, uint16_t type, uint64_t corr,
              const void *body, size_t len)
{
    qn_msg_t msg = { .to = to, .type = type, .corr = corr, .body = body, .body_len = len };
    return qn_send (self, &msg);
}

int
qn_reply (qn_kernel_t *self, const qn_env_t *req, uint16_t type, const void *body,
          size_t len, qn_frame_t *frames, uint32_t frame_count)
{
    (void) self;
    if (!req->reply_to.len)
        return QN_EINVAL;
    char to [QN_ENV_MAX_NAME + 1];
    memcpy (to, req->reply_to.ptr, req->reply_to.len);
    to [req->reply_to.len] = 0;
    qn_msg_t msg = {
        .to = to, .type = type, .corr = req->corr, .body = body, .body_len = len,
        .frames = frames, .frame_count = frame_count
    };
    return s_send (s_actor (), &msg, QN_ENV_FLAG_REPLY);
}

uint64_t
qn_corr_next (qn_kernel_t *self)
{
    return atomic_fetch_add (&self->corr, 1) + 1;
}

static void
s_request_expired (void *self_, void *arg)
{
    (void) self_;
    qn_actor_t *a = s_current;
    uint64_t corr = (uint64_t) (uintptr_t) arg;
    s_pending_t *p = qn_hashmap_remove (a->pending, corr);
    if (p) {
        qn_count (a->kernel, "kernel_request_timeouts", 1);
        p->cb (a->self, p->arg, NULL);
        free (p);
    }
}

int
qn_request (qn_kernel_t *self, qn_msg_t *msg, uint32_t timeout_ms, qn_reply_fn *cb, void *arg)
{
    qn_actor_t *a = s_actor ();
    if (!msg->corr)
        msg->corr = qn_corr_next (self);
    if (!msg->ttl_ms)
        msg->ttl_ms = timeout_ms;
    int rc = s_send (a, msg, 0);
    if (rc)
        return rc;
    s_pending_t *p = qn_zalloc (sizeof *p);
    p->cb = cb;
    p->arg = arg;
    p->timer_id = qn_timer_add (self, timeout_ms, 0, s_request_expired,
                                (void *) (uintptr_t) msg->corr);
    qn_hashmap_put (a->pending, msg->corr, p);
    return 0;
}

int
qn_on_writable (qn_kernel_t *self, const char *to, qn_writable_fn *cb, void *arg)
{
    (void) self;
    qn_actor_t *a = s_actor ();
    s_out_t *o = s_out (a, to);
    if (!o)
        return QN_ENOENT;
    s_waiter_t *w = qn_zalloc (sizeof *w);
    w->cb = cb;
    w->arg = arg;
    w->next = o->waiters;
    o->waiters = w;
    if (!o->in_epoll) {
        s_epoll_add_zmq (a, o->socket, S_EV_OUT, (uint32_t) (o - a->out));
        o->in_epoll = true;
    }
    return 0;
}

//  Calls the writable callbacks of destinations that drained.
static void
s_check_writable (qn_actor_t *a)
{
    for (uint32_t i = 0; i < a->out_count; i++) {
        s_out_t *o = &a->out [i];
        if (!o->waiters)
            continue;
        int events = 0;
        size_t size = sizeof events;
        zmq_getsockopt (o->socket, ZMQ_EVENTS, &events, &size);
        if (!(events & ZMQ_POLLOUT))
            continue;
        s_waiter_t *w = o->waiters;
        o->waiters = NULL;
        while (w) {
            s_waiter_t *next = w->next;
            w->cb (a->self, w->arg);
            free (w);
            w = next;
        }
    }
}

// ------------------------------------------------------------------ bus
//  Each actor's publisher connects when the actor starts, long before it
//  publishes: a PUB socket drops what it sends before it has learnt the
//  subscriptions ("slow joiner").
static int
s_pub_open (qn_actor_t *a)
{
    a->pub = zmq_socket (a->kernel->zctx, ZMQ_PUB);
    int hwm = S_DEFAULT_HWM, linger = 0;
    zmq_setsockopt (a->pub, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt (a->pub, ZMQ_LINGER, &linger, sizeof linger);
    return zmq_connect (a->pub, S_BUS_IN) ? QN_EIO : 0;
}

int
qn_publish (qn_kernel_t *self, const char *topic, uint16_t type, const void *body, size_t len)
{
    (void) self;
    qn_actor_t *a = s_actor ();
    if (!a->pub && s_pub_open (a))
        return QN_EIO;
    if (zmq_send (a->pub, topic, strlen (topic), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return QN_EAGAIN;
    qn_env_t head = {
        .version = QN_ENV_VERSION, .type = type,
        .from = { a->name, strlen (a->name) }
    };
    return s_send_parts (a->pub, &head, body, len, NULL, 0);
}

int
qn_subscribe (qn_kernel_t *self, const char *prefix)
{
    qn_actor_t *a = s_actor ();
    if (!a->sub) {
        a->sub = zmq_socket (self->zctx, ZMQ_SUB);
        int hwm = S_DEFAULT_HWM, linger = 0;
        zmq_setsockopt (a->sub, ZMQ_RCVHWM, &hwm, sizeof hwm);
        zmq_setsockopt (a->sub, ZMQ_LINGER, &linger, sizeof linger);
        if (zmq_connect (a->sub, S_BUS_OUT))
            return QN_EIO;
        s_epoll_add_zmq (a, a->sub, S_EV_SUB, 0);
    }
    return zmq_setsockopt (a->sub, ZMQ_SUBSCRIBE, prefix, strlen (prefix)) ? QN_EIO : 0;
}

static void *
s_bus_main (void *arg)
{
    qn_kernel_t *self = arg;
    void *in = zmq_socket (self->zctx, ZMQ_XSUB);
    void *out = zmq_socket (self->zctx, ZMQ_XPUB);
    void *ctl = zmq_socket (self->zctx, ZMQ_PAIR);
    int linger = 0;
    zmq_setsockopt (in, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt (out, ZMQ_LINGER, &linger, sizeof linger);
    zmq_bind (ctl, S_BUS_CTL);
    zmq_bind (in, S_BUS_IN);
    zmq_bind (out, S_BUS_OUT);
    zmq_send (ctl, "R", 1, 0);          //  Bound: the kernel may go on
    zmq_proxy_steerable (in, out, NULL, ctl);
    zmq_close (in);
    zmq_close (out);
    zmq_close (ctl);
    return NULL;
}

// ------------------------------------------------------------------ dispatch
static void
s_dispatch (qn_actor_t *a, zmq_msg_t *parts, int count)
{
    qn_env_t env;
    if (count < 1 || qn_env_decode_header (zmq_msg_data (&parts [0]), zmq_msg_size (&parts [0]), &env)) {
        qn_count (a->kernel, "kernel_malformed", 1);
        qn_warn ("malformed envelope dropped: parts=%d", count);
        return;
    }
    env.received_ms = qn_now_ms ();
    if (count > 1) {
        env.body.ptr = zmq_msg_data (&parts [1]);
        env.body.len = zmq_msg_size (&parts [1]);
    }
    for (int i = 2; i < count && env.frame_count < 8; i++) {
        env.frames [env.frame_count].ptr = zmq_msg_data (&parts [i]);
        env.frames [env.frame_count].len = zmq_msg_size (&parts [i]);
        env.frame_count++;
    }
    if (env.flags & QN_ENV_FLAG_REPLY) {
        s_pending_t *p = qn_hashmap_remove (a->pending, env.corr);
        if (p) {
            qn_timer_cancel (a->kernel, p->timer_id);
            p->cb (a->self, p->arg, &env);
            free (p);
            return;
        }
        //  A reply may also be handled by a route (fire-and-forget senders).
    }
    if (env.type == QN_MSG_STOP)
        atomic_store (&a->stopping, true);
    for (const qn_route_t *r = a->routes; r && r->fn; r++)
        if (r->type == env.type) {
            int rc = r->fn (a->self, &env);
            if (rc == QN_DONE && env.type == QN_MSG_STOP)
                atomic_store (&a->done, true);
            else
            if (rc < 0) {
                qn_count (a->kernel, "kernel_handler_errors", 1);
                qn_debug ("handler failed: type=%s rc=%s", qn_msg_name (env.type), qn_strerror (rc));
            }
            return;
        }
    if (env.type == QN_MSG_STOP)
        atomic_store (&a->done, true);      //  No STOP route: stop at once
    else
    if (!(env.flags & QN_ENV_FLAG_REPLY)) {
        qn_count (a->kernel, "kernel_unrouted", 1);
        qn_debug ("no route: type=%s from=%.*s", qn_msg_name (env.type),
                  (int) env.from.len, env.from.ptr);
    }
}

//  Receives and dispatches up to S_RECV_BURST messages. Returns true if the
//  socket may still hold messages.
static bool
s_drain (qn_actor_t *a, void *socket, bool is_sub)
{
    for (int n = 0; n < S_RECV_BURST; n++) {
        int events = 0;
        size_t size = sizeof events;
        if (zmq_getsockopt (socket, ZMQ_EVENTS, &events, &size) || !(events & ZMQ_POLLIN))
            return false;
        zmq_msg_t parts [12];
        int count = 0;
        int more = 1;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init (&m);
            if (zmq_msg_recv (&m, socket, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close (&m);
                break;
            }
            more = zmq_msg_more (&m);
            if (count < 12)
                parts [count++] = m;
            else
                zmq_msg_close (&m);
        }
        //  Bus messages carry the topic first.
        int skip = is_sub && count ? 1 : 0;
        if (count > skip)
            s_dispatch (a, parts + skip, count - skip);
        for (int i = 0; i < count; i++)
            zmq_msg_close (&parts [i]);
        if (atomic_load (&a->done))
            return false;
    }
    return true;
}

//  One loop iteration: timers, sockets, then wait up to timeout_ms.
static void
s_loop_once (qn_actor_t *a, int timeout_ms)
{
    s_run_timers (a);
    bool busy = s_drain (a, a->inbound, false);
    if (a->sub)
        busy = s_drain (a, a->sub, true) || busy;
    s_check_writable (a);
    if (atomic_load (&a->done))
        return;
    int wait = timeout_ms;
    if (a->heap_len) {
        int64_t until = a->heap [0]->due_ms - qn_now_ms ();
        if (until < 0)
            until = 0;
        if (wait < 0 || until < wait)
            wait = (int) until;
    }
    if (busy)
        wait = 0;
    struct epoll_event events [256];
    int n = epoll_wait (a->epfd, events, 256, wait);
    for (int i = 0; i < n; i++) {
        uint32_t kind = (uint32_t) (events [i].data.u64 >> 32);
        if (kind == S_EV_FD) {
            int fd = (int) (events [i].data.u64 & 0xffffffff);
            if ((size_t) fd < a->fd_cap && a->fd_fns [fd])
                a->fd_fns [fd] (a->self, fd, events [i].events);
        }
        else
        if (kind == S_EV_WAKE) {
            uint64_t v;
            ssize_t r = read (a->wake_fd, &v, sizeof v);
            (void) r;
        }
        //  Inbound, SUB and OUT: handled by the checks at the top of the
        //  next iteration (ZMQ_FD only signals that ZMQ_EVENTS changed).
    }
}

static void
s_actor_close_sockets (qn_actor_t *a)
{
    for (uint32_t i = 0; i < a->out_count; i++) {
        zmq_close (a->out [i].socket);
        s_waiter_t *w = a->out [i].waiters;
        while (w) {
            s_waiter_t *next = w->next;
            free (w);
            w = next;
        }
    }
    a->out_count = 0;
    if (a->pub)
        zmq_close (a->pub);
    if (a->sub)
        zmq_close (a->sub);
    if (a->inbound)
        zmq_close (a->inbound);
    a->pub = a->sub = a->inbound = NULL;
}

static void
s_free_timer (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    free (value);
}

static void
s_actor_free (qn_actor_t *a)
{
    if (a->destroy && a->self)
        a->destroy (&a->self);
    qn_hashmap_each (a->timers, s_free_timer, NULL);
    qn_hashmap_each (a->pending, s_free_timer, NULL);
    qn_hashmap_destroy (&a->timers);
    qn_hashmap_destroy (&a->pending);
    free (a->heap);
    free (a->fd_fns);
    if (a->epfd >= 0)
        close (a->epfd);
    if (a->wake_fd >= 0)
        close (a->wake_fd);
    sem_destroy (&a->ready);
    free (a);
}

static void
s_deliver_start (qn_actor_t *a)
{
    for (const qn_route_t *r = a->routes; r && r->fn; r++)
        if (r->type == QN_MSG_START) {
            qn_env_t env = { .version = QN_ENV_VERSION, .type = QN_MSG_START };
            env.received_ms = qn_now_ms ();
            a->start_rc = r->fn (a->self, &env);
        }
}

static void *
s_actor_main (void *arg)
{
    qn_actor_t *a = arg;
    s_current = a;
    qn_log_thread_name (a->name);
    s_pub_open (a);
    s_deliver_start (a);
    int rc = a->start_rc;
    sem_post (&a->ready);
    if (rc < 0) {
        s_actor_close_sockets (a);
        atomic_store (&a->exited, true);
        return NULL;
    }
    while (!atomic_load (&a->done))
        s_loop_once (a, -1);
    s_actor_close_sockets (a);
    atomic_store (&a->exited, true);
    return NULL;
}

static qn_actor_t *
s_actor_new (qn_kernel_t *self, const qn_actor_def_t *def)
{
    qn_actor_t *a = qn_zalloc (sizeof *a);
    a->kernel = self;
    snprintf (a->name, sizeof a->name, "%s", def->name);
    a->routes = def->routes;
    a->self = def->self;
    a->destroy = def->destroy;
    a->epfd = epoll_create1 (EPOLL_CLOEXEC);
    a->wake_fd = eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC);
    a->timers = qn_hashmap_new ();
    a->pending = qn_hashmap_new ();
    sem_init (&a->ready, 0, 0);
    a->inbound = zmq_socket (self->zctx, ZMQ_PULL);
    int hwm = def->inbound_hwm ? def->inbound_hwm : S_DEFAULT_HWM, linger = 0;
    zmq_setsockopt (a->inbound, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt (a->inbound, ZMQ_LINGER, &linger, sizeof linger);
    char endpoint [128];
    snprintf (endpoint, sizeof endpoint, "inproc://qn.%s", a->name);
    if (zmq_bind (a->inbound, endpoint)) {
        qn_error ("actor endpoint taken: name=%s", a->name);
        s_actor_close_sockets (a);
        s_actor_free (a);
        return NULL;
    }
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t) S_EV_WAKE << 32 };
    epoll_ctl (a->epfd, EPOLL_CTL_ADD, a->wake_fd, &ev);
    s_epoll_add_zmq (a, a->inbound, S_EV_INBOUND, 0);
    return a;
}

qn_actor_t *
qn_actor_spawn (qn_kernel_t *self, const qn_actor_def_t *def)
{
    if (self->actor_count == S_MAX_ACTORS || strlen (def->name) > QN_ENV_MAX_NAME) {
        qn_actor_def_t d = *def;
        if (d.destroy && d.self)
            d.destroy (&d.self);
        return NULL;
    }
    qn_actor_t *a = s_actor_new (self, def);
    if (!a)
        return NULL;
    if (pthread_create (&a->thread, NULL, s_actor_main, a)) {
        s_actor_close_sockets (a);
        s_actor_free (a);
        return NULL;
    }
    a->has_thread = true;
    sem_wait (&a->ready);
    if (a->start_rc < 0) {
        pthread_join (a->thread, NULL);
        qn_error ("actor failed to start: name=%s rc=%s", a->name, qn_strerror (a->start_rc));
        s_actor_free (a);
        return NULL;
    }
    uint32_t i = self->actor_count++;
    self->actors [i] = a;
    //  The supervisor's own line to the actor, for STOP.
    self->ctl [i] = zmq_socket (self->zctx, ZMQ_PUSH);
    int linger = 0;
    zmq_setsockopt (self->ctl [i], ZMQ_LINGER, &linger, sizeof linger);
    char endpoint [128];
    snprintf (endpoint, sizeof endpoint, "inproc://qn.%s", a->name);
    zmq_connect (self->ctl [i], endpoint);
    qn_debug ("actor started: name=%s", a->name);
    return a;
}

void
qn_actor_done (qn_kernel_t *self)
{
    (void) self;
    atomic_store (&s_actor ()->done, true);
}

// ------------------------------------------------------------------ kernel
qn_kernel_t *
qn_kernel_new (const qn_config_t *config)
{
    //  Signals go to the supervisor only: block them in this thread before
    //  any actor thread exists, so every thread inherits the mask.
    sigset_t set;
    sigemptyset (&set);
    sigaddset (&set, SIGINT);
    sigaddset (&set, SIGTERM);
    pthread_sigmask (SIG_BLOCK, &set, NULL);
    signal (SIGPIPE, SIG_IGN);

    qn_kernel_t *self = qn_zalloc (sizeof *self);
    self->config = config;
    self->zctx = zmq_ctx_new ();
    zmq_ctx_set (self->zctx, ZMQ_IO_THREADS, 1);
    pthread_mutex_init (&self->counters_lock, NULL);
    if (pipe (self->stop_pipe))
        self->stop_pipe [0] = self->stop_pipe [1] = -1;
    self->bus_ctl = zmq_socket (self->zctx, ZMQ_PAIR);
    pthread_create (&self->bus_thread, NULL, s_bus_main, self);
    //  Wait for the proxy to bind before anyone connects.
    for (int i = 0; i < 1000 && zmq_connect (self->bus_ctl, S_BUS_CTL); i++)
        usleep (1000);
    char ready;
    zmq_recv (self->bus_ctl, &ready, 1, 0);
    qn_actor_def_t def = { .name = "main" };
    self->main = s_actor_new (self, &def);
    if (!self->main) {
        //  Another kernel in this process owns "main": use a unique name.
        char name [32];
        snprintf (name, sizeof name, "main.%p", (void *) self);
        def.name = name;
        self->main = s_actor_new (self, &def);
    }
    s_current = self->main;
    return self;
}

const qn_config_t *
qn_kernel_config (qn_kernel_t *self)
{
    return self->config;
}

void
qn_kernel_main_routes (qn_kernel_t *self, const qn_route_t *routes, void *state)
{
    self->main->routes = routes;
    self->main->self = state;
}

void
qn_kernel_poll (qn_kernel_t *self, int timeout_ms)
{
    s_current = self->main;
    s_loop_once (self->main, timeout_ms);
}

bool
qn_kernel_stopping (qn_kernel_t *self)
{
    return atomic_load (&self->stopping);
}

void
qn_kernel_shutdown (qn_kernel_t *self)
{
    atomic_store (&self->stop_requested, true);
    if (self->stop_pipe [1] >= 0) {
        ssize_t w = write (self->stop_pipe [1], "x", 1);
        (void) w;
    }
}

static int
s_stop_actor (qn_kernel_t *self, uint32_t i, int64_t deadline_ms)
{
    qn_actor_t *a = self->actors [i];
    if (!a)
        return 0;
    qn_env_t head = { .version = QN_ENV_VERSION, .type = QN_MSG_STOP,
                      .from = { "kernel", 6 } };
    //  The supervisor's socket has room unless the actor is badly stuck.
    if (s_send_parts (self->ctl [i], &head, NULL, 0, NULL, 0))
        atomic_store (&a->done, true);
    uint64_t one = 1;
    ssize_t w = write (a->wake_fd, &one, sizeof one);
    (void) w;
    int rc = 0;
    while (!atomic_load (&a->exited)) {
        if (qn_now_ms () >= deadline_ms) {
            if (!atomic_load (&a->done))
                qn_warn ("actor did not drain in time: name=%s", a->name);
            atomic_store (&a->done, true);
            w = write (a->wake_fd, &one, sizeof one);
            rc = -1;
            deadline_ms = qn_now_ms () + 5000;      //  Hard stop grace
        }
        usleep (1000);
    }
    pthread_join (a->thread, NULL);
    zmq_close (self->ctl [i]);
    self->ctl [i] = NULL;
    qn_debug ("actor stopped: name=%s", a->name);
    s_actor_free (a);
    self->actors [i] = NULL;
    return rc;
}

int
qn_kernel_stop_all (qn_kernel_t *self, uint32_t deadline_ms)
{
    atomic_store (&self->stopping, true);
    int64_t deadline = qn_now_ms () + deadline_ms;
    int rc = 0;
    for (uint32_t i = self->actor_count; i-- > 0;)
        if (s_stop_actor (self, i, deadline))
            rc = -1;
    self->actor_count = 0;
    return rc;
}

int
qn_kernel_run (qn_kernel_t *self, uint32_t stop_deadline_ms)
{
    sigset_t set;
    sigemptyset (&set);
    sigaddset (&set, SIGINT);
    sigaddset (&set, SIGTERM);
    while (!atomic_load (&self->stop_requested)) {
        struct timespec ts = { 0, 100 * 1000 * 1000 };
        int sig = sigtimedwait (&set, NULL, &ts);
        if (sig == SIGINT || sig == SIGTERM) {
            qn_info ("shutting down: signal=%s", sig == SIGINT ? "SIGINT" : "SIGTERM");
            break;
        }
    }
    return qn_kernel_stop_all (self, stop_deadline_ms);
}

void
qn_kernel_destroy (qn_kernel_t **self_p)
{
    qn_kernel_t *self = *self_p;
    if (!self)
        return;
    qn_kernel_stop_all (self, 1000);
    if (self->main) {
        s_actor_close_sockets (self->main);
        s_actor_free (self->main);
    }
    if (s_current == self->main)
        s_current = NULL;
    zmq_send (self->bus_ctl, "TERMINATE", 9, 0);
    pthread_join (self->bus_thread, NULL);
    zmq_close (self->bus_ctl);
    zmq_ctx_term (self->zctx);
    if (self->stop_pipe [0] >= 0) {
        close (self->stop_pipe [0]);
        close (self->stop_pipe [1]);
    }
    pthread_mutex_destroy (&self->counters_lock);
    free (self);
    *self_p = NULL;
}
