/*  kernel/bus.c - the event bus
    One proxy thread (XSUB inproc://qn.events.in -> XPUB inproc://qn.events)
    carries events between actors: every actor has a PUB socket into it and,
    once it subscribes, a SUB socket out of it. qn_publish sends
    [topic, envelope header, body]; the actor loop (actor.c) drops the topic
    before dispatch. Events are hints: a subscriber that falls behind loses
    some (PUB drops at the high-water mark), never blocks a publisher.
*/
#include "kernel/kernel_impl.h"

#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define S_BUS_IN         "inproc://qn.events.in"
#define S_BUS_OUT        "inproc://qn.events"
#define S_BUS_CTL        "inproc://qn.events.ctl"

//  Each actor's publisher connects when the actor starts, long before it
//  publishes: a PUB socket drops what it sends before it has learnt the
//  subscriptions ("slow joiner").
int
qk_pub_open (qn_actor_t *a)
{
    a->pub = zmq_socket (a->kernel->zctx, ZMQ_PUB);
    int hwm = QK_DEFAULT_HWM, linger = 0;
    zmq_setsockopt (a->pub, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt (a->pub, ZMQ_LINGER, &linger, sizeof linger);
    return zmq_connect (a->pub, S_BUS_IN) ? QN_EIO : 0;
}

int
qn_publish (qn_kernel_t *self, const char *topic, uint16_t type, const void *body, size_t len)
{
    (void) self;
    qn_actor_t *a = qk_actor ();
    if (!a->pub && qk_pub_open (a))
        return QN_EIO;
    if (zmq_send (a->pub, topic, strlen (topic), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return QN_EAGAIN;
    qn_env_t head = {
        .version = QN_ENV_VERSION, .type = type,
        .from = { a->name, strlen (a->name) }
    };
    return qk_send_parts (a->pub, &head, body, len, NULL, 0);
}

int
qn_subscribe (qn_kernel_t *self, const char *prefix)
{
    qn_actor_t *a = qk_actor ();
    if (!a->sub) {
        a->sub = zmq_socket (self->zctx, ZMQ_SUB);
        int hwm = QK_DEFAULT_HWM, linger = 0;
        zmq_setsockopt (a->sub, ZMQ_RCVHWM, &hwm, sizeof hwm);
        zmq_setsockopt (a->sub, ZMQ_LINGER, &linger, sizeof linger);
        if (zmq_connect (a->sub, S_BUS_OUT))
            return QN_EIO;
        qk_epoll_add_zmq (a, a->sub, QK_EV_SUB, 0);
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

void
qk_bus_start (qn_kernel_t *self)
{
    self->bus_ctl = zmq_socket (self->zctx, ZMQ_PAIR);
    pthread_create (&self->bus_thread, NULL, s_bus_main, self);
    //  Wait for the proxy to bind before anyone connects.
    for (int i = 0; i < 1000 && zmq_connect (self->bus_ctl, S_BUS_CTL); i++)
        usleep (1000);
    char ready;
    zmq_recv (self->bus_ctl, &ready, 1, 0);
}

void
qk_bus_stop (qn_kernel_t *self)
{
    zmq_send (self->bus_ctl, "TERMINATE", 9, 0);
    pthread_join (self->bus_thread, NULL);
    zmq_close (self->bus_ctl);
    self->bus_ctl = NULL;
}
