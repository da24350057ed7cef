/*  kernel/kernel_impl.h - the kernel's private structures (kernel/ only)
    The runtime is cut into files at its seams; this header is what they
    share. Nothing outside kernel/ includes it: the public API is
    kernel/kernel.h. Kernel-internal functions are named qk_*.

        kernel/actor.c      the actor loop: dispatch, sending, requests,
                            writable callbacks, watched fds
        kernel/timers.c     each actor's timers (a base/heap.h min-heap)
        kernel/bus.c        the event bus: publish/subscribe, proxy thread
        kernel/counters.c   process-wide named counters (lock-free adds)
        kernel/lifecycle.c  kernel and actor creation, the supervisor
                            (signals, ordered stop), destruction

    Threads: each actor's fields are touched only by its own thread, except
    the atomics (stopping, done, exited) and wake_fd, which the supervisor
    uses to stop it. The actor list belongs to the supervisor's thread.
*/
#ifndef QN_KERNEL_KERNEL_IMPL_H
#define QN_KERNEL_KERNEL_IMPL_H

#include "kernel/kernel.h"
#include "base/hashmap.h"
#include "base/heap.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#define QK_MAX_ACTORS    64
#define QK_MAX_OUT       32
#define QK_DEFAULT_HWM   10000

//  The high-water mark of actor queues: ACTOR_QUEUE_HWM, or the default
//  for a config that does not set it (unit tests).
#define QK_QUEUE_HWM(kernel) \
    ((kernel)->config && (kernel)->config->actor_queue_hwm > 0 \
     ? (int) (kernel)->config->actor_queue_hwm : QK_DEFAULT_HWM)

//  What an epoll event's data.u64 names (kind in the high 32 bits).
enum { QK_EV_FD = 0, QK_EV_INBOUND = 1, QK_EV_SUB = 2, QK_EV_OUT = 3, QK_EV_WAKE = 4 };

typedef struct qk_waiter {
    qn_writable_fn *cb;
    void *arg;
    struct qk_waiter *next;
} qk_waiter_t;

//  One destination this actor sends to (a PUSH socket to inproc://qn.<name>).
typedef struct {
    char name [QN_ENV_MAX_NAME + 1];
    void *socket;
    qk_waiter_t *waiters;       //  Owned list: callbacks for POLLOUT
    bool in_epoll;
} qk_out_t;

typedef struct qk_counters qk_counters_t;

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
    qk_out_t out [QK_MAX_OUT];
    uint32_t out_count;
    int epfd;
    int wake_fd;                //  eventfd: forced stop
    qn_fd_fn **fd_fns;          //  Indexed by fd
    size_t fd_cap;
    qn_heap_t timer_heap;       //  Timers by (due_ms, id); see timers.c
    qn_hashmap_t *timers;       //  Owned: id -> timer
    qn_hashmap_t *pending;      //  Owned: corr -> pending request
    uint64_t next_timer_id;
    sem_t ready;
    atomic_bool stopping;       //  STOP delivered
    atomic_bool done;           //  Loop should exit
    atomic_bool exited;
    int start_rc;
};

struct qn_kernel {
    void *zctx;
    const qn_config_t *config;  //  Not owned
    qn_actor_t *actors [QK_MAX_ACTORS];
    uint32_t actor_count;
    qn_actor_t *main;           //  Pseudo-actor for the creating thread
    void *ctl [QK_MAX_ACTORS];  //  Supervisor PUSH sockets to each actor
    pthread_t bus_thread;
    void *bus_ctl;
    atomic_ullong corr;
    atomic_bool stop_requested;
    atomic_bool stopping;
    int stop_pipe [2];
    qk_counters_t *counters;    //  Owned
};

//  The actor running on this thread (NULL on a thread that is none).
extern __thread qn_actor_t *qk_current;

// ------------------------------------------------------------------ actor.c
//  The calling actor; aborts on a thread that is not one (programmer error).
qn_actor_t *qk_actor (void);
//  Watches a ZeroMQ socket's notification fd in the actor's epoll set.
int qk_epoll_add_zmq (qn_actor_t *a, void *socket, uint32_t kind, uint32_t index);
//  Sends header + body + frames as one multipart message, never blocking.
int qk_send_parts (void *socket, const qn_env_t *head, const void *body, size_t body_len,
                   qn_frame_t *frames, uint32_t frame_count);
//  One loop iteration: timers, sockets, then wait up to timeout_ms (-1: no limit).
void qk_loop_once (qn_actor_t *a, int timeout_ms);
void qk_actor_close_sockets (qn_actor_t *a);
//  Frees the pending requests (their callbacks are not called).
void qk_pending_free (qn_actor_t *a);

// ------------------------------------------------------------------ timers.c
//  Runs the due timers (a bounded number per call).
void qk_timers_run (qn_actor_t *a);
//  timeout_ms shortened to the next timer's due time (-1 = none).
int qk_timers_wait_ms (qn_actor_t *a, int timeout_ms);
//  Frees every timer of the actor.
void qk_timers_free (qn_actor_t *a);

// ------------------------------------------------------------------ bus.c
//  Starts the proxy thread and waits until it has bound its endpoints.
void qk_bus_start (qn_kernel_t *self);
void qk_bus_stop (qn_kernel_t *self);
//  Connects the actor's publisher (done at start: see "slow joiner").
int qk_pub_open (qn_actor_t *a);

// ------------------------------------------------------------------ counters.c
qk_counters_t *qk_counters_new (void);
void qk_counters_destroy (qk_counters_t **self_p);

#endif
