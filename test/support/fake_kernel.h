/*  test/support/fake_kernel.h - the kernel, faked for actor unit tests
    Implements kernel/kernel.h with no threads, no sockets and no real
    clock. A unit test that includes this header is linked with
    test/support/fake_kernel.c in place of the kernel runtime and of
    base/clock.c (see the Makefile: every kernel/ object but config,
    envelope and schema), so an actor's own constructor, handlers and
    timers run unchanged, inline, driven by the test:
      - qn_actor_spawn records the actor and runs its START handler;
      - qn_fake_deliver calls the handler of a message type, and
        qn_fake_publish an event's handler in every actor subscribed to
        its topic (published events are only recorded: the test decides
        whether to deliver them);
      - what actors send, reply, request and publish is recorded, in
        order, for the test to read (qn_fake_next, qn_fake_msg);
      - a recorded request is answered with qn_fake_answer (the actor's
        reply callback runs), or times out when the clock passes its
        deadline;
      - the clock stands still until qn_fake_advance moves it, firing the
        timers (and request deadlines) that fall due, in order;
      - qn_fake_full makes an actor's inbox refuse messages (QN_EAGAIN)
        until it is cleared, which calls the qn_on_writable callbacks.
    One fake at a time (the clock functions take no kernel).
    fds (qn_fd_watch...) are accepted and ignored; qn_kernel_run returns
    at once.
*/
#ifndef QN_TEST_SUPPORT_FAKE_KERNEL_H
#define QN_TEST_SUPPORT_FAKE_KERNEL_H

#include "kernel/kernel.h"

typedef struct qn_kernel qn_fake_t;

typedef enum {
    QN_FAKE_SEND,               //  qn_send / qn_send_body
    QN_FAKE_REPLY,              //  qn_reply
    QN_FAKE_REQUEST,            //  qn_request (answer with qn_fake_answer)
    QN_FAKE_PUBLISH             //  qn_publish: `to` is the topic
} qn_fake_kind_t;

//  One recorded message. Body and frames are copies owned by the fake.
typedef struct {
    qn_fake_kind_t kind;
    char from [QN_ENV_MAX_NAME + 1];
    char to [QN_ENV_MAX_NAME + 1];  //  Destination actor, or topic
    uint16_t type;
    uint64_t corr;
    uint32_t flags;
    qn_buf_t body;
    qn_buf_t frames [8];
    uint32_t frame_count;
    bool seen;                  //  Returned by qn_fake_next already
} qn_fake_msg_t;

//  A fake whose clock starts at an arbitrary non-zero instant.
//  config is not owned (qn_kernel_config returns it).
qn_fake_t *qn_fake_new (const qn_config_t *config);
//  Stops every actor (STOP, then its destroy), frees everything.
void qn_fake_destroy (qn_fake_t **self_p);

//  The world of most actor tests: a configuration loaded from `env` (a
//  getenv stand-in answering NULL for unset names) and a fake kernel on it.
//  The test spawns its actor on qn_fake_kernel (w->fake) with &w->config.
typedef struct {
    qn_config_t config;
    qn_fake_t *fake;
} qn_fake_world_t;
//  NULL when the configuration does not load.
qn_fake_world_t *qn_fake_world_new (const char *(*env) (const char *name));
//  A world with one actor spawned on it by `spawn` (an actor constructor
//  of actors/actors.h); NULL, with nothing left behind, when either fails.
qn_fake_world_t *qn_fake_world_start (const char *(*env) (const char *name),
                                      qn_actor_t *(*spawn) (qn_kernel_t *kernel,
                                                            const qn_config_t *config));
//  Destroys the fake (stopping its actors), then the configuration.
void qn_fake_world_destroy (qn_fake_world_t **self_p);
qn_kernel_t *qn_fake_kernel (qn_fake_t *self);
//  The `self` of a spawned actor, or NULL.
void *qn_fake_actor_self (qn_fake_t *self, const char *name);

// ------------------------------------------------------------------ driving
//  Calls actor `to`'s handler for `type` with body and an optional frame
//  (NULL = none), from "test". Returns the handler's return code, or
//  QN_ENOENT when the actor or the route does not exist.
int qn_fake_deliver (qn_fake_t *self, const char *to, uint16_t type,
                     const void *body, size_t len, const void *frame, size_t frame_len);
//  Delivers an event to every actor subscribed to a prefix of `topic`.
//  Returns how many actors handled it.
int qn_fake_publish (qn_fake_t *self, const char *topic, uint16_t type,
                     const void *body, size_t len);
//  Answers recorded request i (its requester's callback runs with an
//  envelope of `type` and `body`). Returns 0, or QN_ENOENT when it is not
//  a request still waiting.
int qn_fake_answer (qn_fake_t *self, size_t i, uint16_t type, const void *body, size_t len);
//  Moves the clock by ms, firing due timers in order (each at its instant).
void qn_fake_advance (qn_fake_t *self, int64_t ms);
//  Sets whether actor `to`'s inbox is full. Clearing it runs the
//  qn_on_writable callbacks waiting for it.
void qn_fake_full (qn_fake_t *self, const char *to, bool full);

// ------------------------------------------------------------------ observing
//  Messages recorded since the start or the last qn_fake_clear.
size_t qn_fake_count (qn_fake_t *self);
const qn_fake_msg_t *qn_fake_msg (qn_fake_t *self, size_t i);
//  The index of the first recorded message of `type` not returned by
//  qn_fake_next before (marking it seen), or -1.
int qn_fake_next (qn_fake_t *self, uint16_t type);
//  Forgets recorded messages (pending requests stay answerable by the
//  corr they had: answer them before clearing).
void qn_fake_clear (qn_fake_t *self);
//  Requests not answered and not timed out.
size_t qn_fake_pending (qn_fake_t *self);
//  Timers armed (one-shot not fired yet, or repeating).
size_t qn_fake_timers (qn_fake_t *self);
//  Whether actor `name` subscribed to a prefix of `topic`.
bool qn_fake_subscribed (qn_fake_t *self, const char *name, const char *topic);

#endif
