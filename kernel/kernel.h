/*  kernel/kernel.h - the actor runtime
    Actors are threads with private state, one inbound ZeroMQ PULL socket
    (inproc://qn.<name>) and a handler table. They exchange envelopes
    (kernel/envelope.h); they never share memory and never touch ZeroMQ
    sockets themselves: everything goes through qn_send / qn_reply /
    qn_request / qn_publish, which find the calling actor through a
    thread-local pointer, so a handler only needs the kernel.

    Each actor runs one loop (epoll) over its inbound socket, its event-bus
    subscription, raw fds it watches (qn_fd_watch) and its timers
    (qn_timer_add). Handlers must not block.

    Sends never block: at a destination's high-water mark qn_send returns
    QN_EAGAIN and the frames are still the caller's; the caller parks its
    input and asks to be told when the destination drains (qn_on_writable).

    The supervisor (qn_kernel_run) starts actors in order, waits for
    SIGTERM/SIGINT, then stops them in reverse order: each gets
    QN_MSG_STOP, finishes or hands back in-flight work, and calls
    qn_actor_done (or returns from its STOP handler with QN_DONE).

    Implementation (kernel/kernel_impl.h lists what the files share):
    actor.c (loop, dispatch, sends, requests, fds), timers.c (per-actor
    timer heap), bus.c (event bus proxy), counters.c (named counters),
    lifecycle.c (spawn, supervisor, stop); clocks in base/clock.h.
*/
#ifndef QN_KERNEL_KERNEL_H
#define QN_KERNEL_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/config.h"
#include "kernel/envelope.h"
#include "kernel/errors.h"
#include "base/log.h"
#include "base/buf.h"
#include "base/clock.h"
#include "wire/msg_types.h"

typedef struct qn_kernel qn_kernel_t;
typedef struct qn_actor qn_actor_t;

//  A handler returns 0, a negative QN_E* (logged and counted; the actor
//  carries on), or QN_DONE from a STOP handler to say "stopped".
#define QN_DONE 1
typedef int (qn_handler_fn) (void *self, const qn_env_t *env);

typedef struct {
    uint16_t type;              //  QN_MSG_*; 0 ends the table
    qn_handler_fn *fn;
} qn_route_t;

typedef void (qn_destroy_fn) (void **self_p);
typedef void (qn_fd_fn) (void *self, int fd, uint32_t events);
typedef void (qn_timer_fn) (void *self, void *arg);
//  Called with the reply, or with env == NULL when the deadline passed.
typedef void (qn_reply_fn) (void *self, void *arg, const qn_env_t *env);
typedef void (qn_writable_fn) (void *self, void *arg);

typedef struct {
    const char *name;           //  Unique; the inbound endpoint is inproc://qn.<name>
    const qn_route_t *routes;
    void *self;                 //  Taken by the kernel even if spawn fails
    qn_destroy_fn *destroy;     //  Frees self after the thread has stopped
    int inbound_hwm;            //  0 = default (10000 messages)
} qn_actor_def_t;

//  Zero-copy payload frame: the kernel hands `data` to ZeroMQ, which calls
//  free() on it once sent. On QN_EAGAIN the frame is still the caller's.
typedef struct {
    char *data;                 //  malloc'd block, or NULL
    size_t len;
} qn_frame_t;

typedef struct {
    const char *to;             //  Destination actor name
    uint16_t type;
    uint64_t corr;              //  0 = none
    uint32_t ttl_ms;
    uint32_t flags;
    const void *body;           //  Copied into frame 1
    size_t body_len;
    qn_frame_t *frames;         //  Taken on success (data set to NULL)
    uint32_t frame_count;
    const char *reply_to;       //  NULL = the sending actor's name
} qn_msg_t;

// ------------------------------------------------------------------ kernel
qn_kernel_t *qn_kernel_new (const qn_config_t *config);
void qn_kernel_destroy (qn_kernel_t **self_p);
const qn_config_t *qn_kernel_config (qn_kernel_t *self);

//  Starts an actor thread; returns once its loop is ready and its
//  QN_MSG_START handler (if any) has run. NULL if the name is taken or the
//  thread could not start (self is destroyed then).
qn_actor_t *qn_actor_spawn (qn_kernel_t *self, const qn_actor_def_t *def);

//  Blocks until SIGTERM/SIGINT (or qn_kernel_shutdown), then stops every
//  actor in reverse spawn order, each within the remaining stop deadline.
//  Returns 0 when everything stopped in time.
int qn_kernel_run (qn_kernel_t *self, uint32_t stop_deadline_ms);
//  Asks the supervisor to stop (thread-safe, async-signal-safe).
void qn_kernel_shutdown (qn_kernel_t *self);
//  Stops all actors now (reverse order) without waiting for a signal.
int qn_kernel_stop_all (qn_kernel_t *self, uint32_t deadline_ms);
bool qn_kernel_stopping (qn_kernel_t *self);
//  The thread that created the kernel acts as the actor "main" (tests and
//  tools): these set its routes and state, and run one loop iteration
//  (timers, messages, fds) waiting at most timeout_ms.
void qn_kernel_main_routes (qn_kernel_t *self, const qn_route_t *routes, void *state);
void qn_kernel_poll (qn_kernel_t *self, int timeout_ms);

// ------------------------------------------------------------------ messaging (from an actor thread)
int qn_send (qn_kernel_t *self, const qn_msg_t *msg);
//  Shorthand: one body, no frames.
int qn_send_body (qn_kernel_t *self, const char *to, uint16_t type,
                  uint64_t corr, const void *body, size_t len);
//  Answers `req` (to its reply_to with its corr and the REPLY flag).
int qn_reply (qn_kernel_t *self, const qn_env_t *req, uint16_t type,
              const void *body, size_t len, qn_frame_t *frames, uint32_t frame_count);
//  Sends a request and registers `cb` for its reply; the kernel calls cb
//  with env == NULL if no reply arrives within timeout_ms. Returns 0 or
//  QN_EAGAIN (nothing registered, frames still yours).
int qn_request (qn_kernel_t *self, qn_msg_t *msg, uint32_t timeout_ms,
                qn_reply_fn *cb, void *arg);
//  Calls cb once the destination can take messages again.
int qn_on_writable (qn_kernel_t *self, const char *to, qn_writable_fn *cb, void *arg);
//  A fresh correlation id, unique within the process.
uint64_t qn_corr_next (qn_kernel_t *self);

// ------------------------------------------------------------------ event bus
//  Publishes an envelope of `type` on inproc://events under `topic`.
//  Events are hints: a subscriber that falls behind may lose some.
int qn_publish (qn_kernel_t *self, const char *topic, uint16_t type,
                const void *body, size_t len);
//  Subscribes the calling actor to topics starting with `prefix`.
int qn_subscribe (qn_kernel_t *self, const char *prefix);

// ------------------------------------------------------------------ loop (from an actor thread)
#define QN_FD_IN  0x001         //  = EPOLLIN
#define QN_FD_OUT 0x004         //  = EPOLLOUT
#define QN_FD_ERR 0x008         //  = EPOLLERR
#define QN_FD_HUP 0x010         //  = EPOLLHUP
int qn_fd_watch (qn_kernel_t *self, int fd, uint32_t events, qn_fd_fn *fn);
int qn_fd_modify (qn_kernel_t *self, int fd, uint32_t events);
int qn_fd_unwatch (qn_kernel_t *self, int fd);
//  One-shot (interval 0) or repeating timer. Returns an id > 0.
uint64_t qn_timer_add (qn_kernel_t *self, uint32_t delay_ms, uint32_t interval_ms,
                       qn_timer_fn *fn, void *arg);
void qn_timer_cancel (qn_kernel_t *self, uint64_t id);
//  Marks the calling actor stopped (after a STOP it could not finish at once).
void qn_actor_done (qn_kernel_t *self);
//  Name of the calling actor ("main" outside actors).
const char *qn_actor_name (void);

// ------------------------------------------------------------------ clock and counters
//  qn_now_ms, qn_now_us, qn_wall_us: base/clock.h (included above).
//  Process-wide named counters (created on first use; an add is lock-free:
//  a hash lookup and an atomic add, see kernel/counters.c).
void qn_count (qn_kernel_t *self, const char *name, int64_t delta);
int64_t qn_counter (qn_kernel_t *self, const char *name);
void qn_gauge_set (qn_kernel_t *self, const char *name, int64_t value);
//  Calls fn for every counter (name, value). Thread-safe snapshot.
void qn_counters_each (qn_kernel_t *self,
                       void (*fn) (void *arg, const char *name, int64_t value), void *arg);

//  Series with labels, for /metrics/prometheus (actors/http/metrics.c):
//  "family{labels}", each a counter, a gauge or a histogram. Get a handle
//  once (first use creates the series; NULL when the table is full, which
//  every update below accepts) and keep it: an update is one atomic op.
//  `labels` is Prometheus text, escaped (qn_metric_label_escape), or NULL.
typedef struct qn_metric qn_metric_t;
typedef enum {
    QN_METRIC_COUNTER = 1,
    QN_METRIC_GAUGE = 2,
    QN_METRIC_HISTOGRAM = 3
} qn_metric_kind_t;
#define QN_METRIC_BUCKETS 16
//  Histogram bucket upper bounds, microseconds (exposed in seconds).
extern const int64_t qn_metric_bounds_us [QN_METRIC_BUCKETS];
qn_metric_t *qn_metric (qn_kernel_t *self, qn_metric_kind_t kind, const char *family,
                        const char *labels);
//  The series family{queue="<queue>"}; once a family has the setting
//  METRICS_QUEUE_SERIES series, new queues count in queue="_other".
qn_metric_t *qn_metric_queue (qn_kernel_t *self, qn_metric_kind_t kind, const char *family,
                              const char *queue, size_t queue_len);
void qn_metric_add (qn_metric_t *m, int64_t delta);
void qn_metric_set (qn_metric_t *m, int64_t value);
void qn_metric_observe_us (qn_metric_t *m, int64_t us);
//  Escapes a label value (backslash, quote, newline) into out (NUL-ended,
//  cut to fit); returns the length written.
size_t qn_metric_label_escape (char *out, size_t size, const char *value, size_t len);

typedef struct {
    qn_metric_kind_t kind;
    const char *name;           //  Plain counters: the name; series: family{labels}
    size_t family_len;          //  Bytes of name before '{'
    int64_t value;              //  Counter or gauge value; histograms: count
    const int64_t *buckets;     //  Histograms: QN_METRIC_BUCKETS + 1 counts (last +Inf), per bucket
    int64_t sum_us;
} qn_metric_info_t;
typedef void (qn_metric_each_fn) (void *arg, const qn_metric_info_t *info);
//  Calls fn for every plain counter (kind counter, or gauge once set with
//  qn_gauge_set), then every series. Thread-safe snapshot.
void qn_metrics_each (qn_kernel_t *self, qn_metric_each_fn *fn, void *arg);

#endif
