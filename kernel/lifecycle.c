/*  kernel/lifecycle.c - kernel and actors: creation, supervisor, stop
    qn_kernel_new blocks SIGINT/SIGTERM (so only the supervisor sees them),
    creates the ZeroMQ context, the event bus (bus.c), the counters
    (counters.c) and the pseudo-actor "main" of the creating thread.
    qn_actor_spawn binds the actor's inbox, starts its thread and waits for
    its START handler. qn_kernel_run waits for a signal, then stops actors
    in reverse spawn order, each within what is left of the deadline: the
    supervisor sends STOP on its own socket and waits for the thread to
    exit (forcing it through the wake eventfd after the deadline).
*/
#include "kernel/kernel_impl.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static void
s_actor_free (qn_actor_t *a)
{
    if (a->destroy && a->self)
        a->destroy (&a->self);
    qk_timers_free (a);
    qk_pending_free (a);
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
    qk_current = a;
    qn_log_thread_name (a->name);
    qk_pub_open (a);
    s_deliver_start (a);
    int rc = a->start_rc;
    sem_post (&a->ready);
    if (rc < 0) {
        qk_actor_close_sockets (a);
        atomic_store (&a->exited, true);
        return NULL;
    }
    while (!atomic_load (&a->done))
        qk_loop_once (a, -1);
    qk_actor_close_sockets (a);
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
    qn_heap_init (&a->timer_heap);
    a->timers = qn_hashmap_new ();
    a->pending = qn_hashmap_new ();
    sem_init (&a->ready, 0, 0);
    a->inbound = zmq_socket (self->zctx, ZMQ_PULL);
    int hwm = def->inbound_hwm ? def->inbound_hwm : QK_QUEUE_HWM (self), linger = 0;
    zmq_setsockopt (a->inbound, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt (a->inbound, ZMQ_LINGER, &linger, sizeof linger);
    char endpoint [128];
    snprintf (endpoint, sizeof endpoint, "inproc://qn.%s", a->name);
    if (zmq_bind (a->inbound, endpoint)) {
        qn_error ("actor endpoint taken: name=%s", a->name);
        qk_actor_close_sockets (a);
        s_actor_free (a);
        return NULL;
    }
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t) QK_EV_WAKE << 32 };
    epoll_ctl (a->epfd, EPOLL_CTL_ADD, a->wake_fd, &ev);
    qk_epoll_add_zmq (a, a->inbound, QK_EV_INBOUND, 0);
    return a;
}

qn_actor_t *
qn_actor_spawn (qn_kernel_t *self, const qn_actor_def_t *def)
{
    if (self->actor_count == QK_MAX_ACTORS || strlen (def->name) > QN_ENV_MAX_NAME) {
        qn_actor_def_t d = *def;
        if (d.destroy && d.self)
            d.destroy (&d.self);
        return NULL;
    }
    qn_actor_t *a = s_actor_new (self, def);
    if (!a)
        return NULL;
    if (pthread_create (&a->thread, NULL, s_actor_main, a)) {
        qk_actor_close_sockets (a);
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
    atomic_store (&qk_actor ()->done, true);
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
    self->counters = qk_counters_new ();
    if (pipe (self->stop_pipe))
        self->stop_pipe [0] = self->stop_pipe [1] = -1;
    qk_bus_start (self);
    qn_actor_def_t def = { .name = "main" };
    self->main = s_actor_new (self, &def);
    if (!self->main) {
        //  Another kernel in this process owns "main": use a unique name.
        char name [32];
        snprintf (name, sizeof name, "main.%p", (void *) self);
        def.name = name;
        self->main = s_actor_new (self, &def);
    }
    qk_current = self->main;
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
    qk_current = self->main;
    qk_loop_once (self->main, timeout_ms);
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
    if (qk_send_parts (self->ctl [i], &head, NULL, 0, NULL, 0))
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
        qk_actor_close_sockets (self->main);
        s_actor_free (self->main);
    }
    if (qk_current == self->main)
        qk_current = NULL;
    qk_bus_stop (self);
    zmq_ctx_term (self->zctx);
    if (self->stop_pipe [0] >= 0) {
        close (self->stop_pipe [0]);
        close (self->stop_pipe [1]);
    }
    qk_counters_destroy (&self->counters);
    free (self);
    *self_p = NULL;
}
