/*  kernel/actor.c - the actor loop: dispatch, sending, requests, fds
    Everything an actor does on its own thread between start and stop:
    qk_loop_once runs due timers (timers.c), drains its inbound socket and
    its bus subscription (dispatching each envelope to its route, or to the
    callback of a pending qn_request), calls the writable callbacks of
    destinations that drained, then waits in epoll for sockets, watched fds
    or the next timer. Sends go out on one PUSH socket per destination,
    never blocking (QN_EAGAIN at the high-water mark).
*/
#include "kernel/kernel_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <zmq.h>

#define S_RECV_BURST     256

typedef struct {
    qn_reply_fn *cb;
    void *arg;
    uint64_t timer_id;
} s_pending_t;

__thread qn_actor_t *qk_current;

const char *
qn_actor_name (void)
{
    return qk_current ? qk_current->name : "main";
}

//  The calling actor. Kernel calls from a thread that is not an actor are
//  programmer errors.
qn_actor_t *
qk_actor (void)
{
    if (!qk_current) {
        fputs ("queen: kernel call outside an actor thread\n", stderr);
        abort ();
    }
    return qk_current;
}

// ------------------------------------------------------------------ fds
int
qn_fd_watch (qn_kernel_t *self, int fd, uint32_t events, qn_fd_fn *fn)
{
    (void) self;
    qn_actor_t *a = qk_actor ();
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
    qn_actor_t *a = qk_actor ();
    struct epoll_event ev = { .events = events, .data.u64 = (uint64_t) fd };
    return epoll_ctl (a->epfd, EPOLL_CTL_MOD, fd, &ev) ? QN_EIO : 0;
}

int
qn_fd_unwatch (qn_kernel_t *self, int fd)
{
    (void) self;
    qn_actor_t *a = qk_actor ();
    if (fd >= 0 && (size_t) fd < a->fd_cap)
        a->fd_fns [fd] = NULL;
    return epoll_ctl (a->epfd, EPOLL_CTL_DEL, fd, NULL) ? QN_EIO : 0;
}

int
qk_epoll_add_zmq (qn_actor_t *a, void *socket, uint32_t kind, uint32_t index)
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

static qk_out_t *
s_out (qn_actor_t *a, const char *to)
{
    for (uint32_t i = 0; i < a->out_count; i++)
        if (!strcmp (a->out [i].name, to))
            return &a->out [i];
    if (a->out_count == QK_MAX_OUT || strlen (to) > QN_ENV_MAX_NAME)
        return NULL;
    void *s = zmq_socket (a->kernel->zctx, ZMQ_PUSH);
    int hwm = QK_QUEUE_HWM (a->kernel), linger = 0;
    zmq_setsockopt (s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt (s, ZMQ_LINGER, &linger, sizeof linger);
    char endpoint [128];
    snprintf (endpoint, sizeof endpoint, "inproc://qn.%s", to);
    if (zmq_connect (s, endpoint)) {
        zmq_close (s);
        return NULL;
    }
    qk_out_t *o = &a->out [a->out_count++];
    memset (o, 0, sizeof *o);
    snprintf (o->name, sizeof o->name, "%s", to);
    o->socket = s;
    return o;
}

//  Sends header + body + frames as one multipart message. Only the first
//  part can meet the high-water mark; later parts of an accepted message
//  are always taken, so a message is all-or-nothing.
int
qk_send_parts (void *socket, const qn_env_t *head, const void *body, size_t body_len,
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
    qk_out_t *o = s_out (a, msg->to);
    if (!o)
        return QN_ENOENT;
    const char *reply_to = msg->reply_to ? msg->reply_to : a->name;
    qn_env_t head = {
        .version = QN_ENV_VERSION, .type = msg->type, .corr = msg->corr,
        .from = { a->name, strlen (a->name) },
        .reply_to = { reply_to, strlen (reply_to) },
        .ttl_ms = msg->ttl_ms, .flags = msg->flags | extra_flags
    };
    int rc = qk_send_parts (o->socket, &head, msg->body, msg->body_len,
                           msg->frames, msg->frame_count);
    if (rc == QN_EAGAIN)
        qn_count (a->kernel, "kernel_send_eagain", 1);
    return rc;
}

int
qn_send (qn_kernel_t *self, const qn_msg_t *msg)
{
    (void) self;
    return s_send (qk_actor (), msg, 0);
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
    return s_send (qk_actor (), &msg, QN_ENV_FLAG_REPLY);
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
    qn_actor_t *a = qk_current;
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
    qn_actor_t *a = qk_actor ();
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
    qn_actor_t *a = qk_actor ();
    qk_out_t *o = s_out (a, to);
    if (!o)
        return QN_ENOENT;
    qk_waiter_t *w = qn_zalloc (sizeof *w);
    w->cb = cb;
    w->arg = arg;
    w->next = o->waiters;
    o->waiters = w;
    if (!o->in_epoll) {
        qk_epoll_add_zmq (a, o->socket, QK_EV_OUT, (uint32_t) (o - a->out));
        o->in_epoll = true;
    }
    return 0;
}

//  Calls the writable callbacks of destinations that drained.
static void
s_check_writable (qn_actor_t *a)
{
    for (uint32_t i = 0; i < a->out_count; i++) {
        qk_out_t *o = &a->out [i];
        if (!o->waiters)
            continue;
        int events = 0;
        size_t size = sizeof events;
        zmq_getsockopt (o->socket, ZMQ_EVENTS, &events, &size);
        if (!(events & ZMQ_POLLOUT))
            continue;
        qk_waiter_t *w = o->waiters;
        o->waiters = NULL;
        while (w) {
            qk_waiter_t *next = w->next;
            w->cb (a->self, w->arg);
            free (w);
            w = next;
        }
    }
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
void
qk_loop_once (qn_actor_t *a, int timeout_ms)
{
    qk_timers_run (a);
    bool busy = s_drain (a, a->inbound, false);
    if (a->sub)
        busy = s_drain (a, a->sub, true) || busy;
    s_check_writable (a);
    if (atomic_load (&a->done))
        return;
    int wait = qk_timers_wait_ms (a, timeout_ms);
    if (busy)
        wait = 0;
    struct epoll_event events [256];
    int n = epoll_wait (a->epfd, events, 256, wait);
    for (int i = 0; i < n; i++) {
        uint32_t kind = (uint32_t) (events [i].data.u64 >> 32);
        if (kind == QK_EV_FD) {
            int fd = (int) (events [i].data.u64 & 0xffffffff);
            if ((size_t) fd < a->fd_cap && a->fd_fns [fd])
                a->fd_fns [fd] (a->self, fd, events [i].events);
        }
        else
        if (kind == QK_EV_WAKE) {
            uint64_t v;
            ssize_t r = read (a->wake_fd, &v, sizeof v);
            (void) r;
        }
        //  Inbound, SUB and OUT: handled by the checks at the top of the
        //  next iteration (ZMQ_FD only signals that ZMQ_EVENTS changed).
    }
}

void
qk_actor_close_sockets (qn_actor_t *a)
{
    for (uint32_t i = 0; i < a->out_count; i++) {
        zmq_close (a->out [i].socket);
        qk_waiter_t *w = a->out [i].waiters;
        while (w) {
            qk_waiter_t *next = w->next;
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
s_free_pending (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    free (value);
}

void
qk_pending_free (qn_actor_t *a)
{
    if (a->pending)
        qn_hashmap_each (a->pending, s_free_pending, NULL);
    qn_hashmap_destroy (&a->pending);
}
