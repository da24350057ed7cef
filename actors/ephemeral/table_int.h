/*  actors/ephemeral/table_int.h - the ephemeral table's insides
    Private to the .c files of actors/ephemeral/: the table's structures
    and the functions its files share (prefix qn_eph_; what one file
    alone uses stays static there). The files, one seam each:
      table.c     life (new, start, destroy) and the shared helpers:
                  names, messages and their lists, answers, peer sends
      queues.c    queues: waiting consumers, WANT, the flush, hand-off,
                  buffering under the caps; requests' inboxes
      topics.c    topics: subscribers, presence, mailboxes, publish, poll
      calls.c     qn_eph_call (one operation of docs/ephemeral.md) and
                  qn_eph_cancel
      peers.c     qn_eph_peer (a peer's operations, from the mesh)
    The public API is table.h; callers include only that.
*/
#ifndef QN_ACTORS_EPHEMERAL_TABLE_INT_H
#define QN_ACTORS_EPHEMERAL_TABLE_INT_H

#include "actors/ephemeral/table.h"
#include "base/hashmap.h"
#include "wire/msg_ephemeral.h"

#include <stddef.h>
#include <string.h>

#define QN_EPH_MAX_NAME        255
#define QN_EPH_MAX_TENANT      64
#define QN_EPH_MAX_KEY         (QN_EPH_MAX_NAME + QN_EPH_MAX_TENANT + 2)   //  A name scoped by its tenant
#define QN_EPH_SEP             '\x1f'        //  "\x1f<tenant>\x1f<name>": a named tenant's name
#define QN_EPH_DEFAULT_MAX     1000          //  maxMessages of a queue created by use
#define QN_EPH_MAILBOX_MAX     1000          //  Messages a subscriber's mailbox keeps (oldest dropped)
#define QN_EPH_SUB_TTL_MS      30000         //  Presence without a ttl
#define QN_EPH_REMOTE_TTL_MS   3000          //  A peer's WANT is believed this long
#define QN_EPH_MAX_REMOTE      16
#define QN_EPH_MAX_SUBS        4096          //  Subscribers of one topic
#define QN_EPH_OVERHEAD        64            //  Bytes counted per message besides its payload
#define QN_EPH_MAX_BATCH       1000          //  A receive's max

typedef struct qn_eph_msg {
    struct qn_eph_msg *next;
    char *payload;              //  Owned JSON text
    size_t len;
    char *reply_to, *corr;      //  Owned, or NULL
    uint64_t id;
} qn_eph_msg_t;

//  A FIFO of messages (a queue's buffer, a mailbox, a receive's batch).
typedef struct {
    qn_eph_msg_t *head, *tail;  //  Owned
    uint32_t count;
} qn_eph_list_t;

typedef enum { QN_EPH_W_RECEIVE, QN_EPH_W_REQUEST, QN_EPH_W_POLL } qn_eph_wkind_t;

typedef struct qn_eph_waiter {
    struct qn_eph_waiter *next, *prev;
    struct qn_eph *eph;         //  Its table (timer callbacks run with the host's self)
    qn_eph_wkind_t kind;
    char reply_to [QN_ENV_MAX_NAME + 1];    //  Where the call's answer goes (the host's)
    uint64_t corr;              //  The host's id of the call
    uint64_t timer;
    void *owner;                //  qn_eph_queue_t (receive), qn_eph_sub_t (poll)
    uint64_t inbox;             //  Request: its inbox number
    char *corr_id;              //  Request: the correlationId (owned)
    char tenant [QN_EPH_MAX_TENANT + 1]; //  Request: only its tenant's replies reach it
    uint32_t max;               //  Receive: messages one answer carries (0: one, unwrapped)
    qn_eph_list_t batch;        //  Receive with max: taken, answered at the next flush
    bool linked;                //  Receive: in its queue's waiter list
    bool ready;                 //  Receive with max: in self->ready
    bool cancelled;             //  Its caller left while it was in self->ready
    struct qn_eph_waiter *ready_next;
} qn_eph_waiter_t;

typedef struct {
    char id [QN_EPH_MAX_NAME + 1];
    int64_t count;
    int64_t at_ms;
} qn_eph_remote_t;

//  Queues and topics begin with their name: qn_eph_named finds both.
typedef struct qn_eph_queue {
    char *name;                 //  Owned; first
    uint32_t max_messages;
    bool drop_oldest;
    qn_eph_list_t msgs;         //  Buffered
    qn_eph_waiter_t *whead, *wtail;  //  Waiting consumers, oldest first
    uint32_t nwaiters;
    qn_eph_remote_t remote [QN_EPH_MAX_REMOTE];
    bool want_dirty;            //  A WANT is due at the next flush
    struct qn_eph_queue *want_next;
} qn_eph_queue_t;

typedef struct {
    char *name;
    char *broker;               //  Where it polls ("" = here)
    int64_t expires_ms;
    qn_eph_list_t mailbox;      //  Local subscribers only
    qn_eph_waiter_t *waiter;
} qn_eph_sub_t;

typedef struct {
    char *name;                 //  Owned; first
    qn_eph_sub_t *subs;
    size_t nsubs, cap;
} qn_eph_topic_t;

_Static_assert (offsetof (qn_eph_queue_t, name) == 0, "qn_eph_named reads the name first");
_Static_assert (offsetof (qn_eph_topic_t, name) == 0, "qn_eph_named reads the name first");

struct qn_eph {
    qn_kernel_t *kernel;
    const qn_config_t *config;
    qn_eph_def_t def;           //  The host: where answers go
    char id [QN_EPH_MAX_NAME + 1];   //  This broker in the mesh (MESH_ADVERTISED_HOST:MESH_PORT)
    qn_hashmap_t *queues;       //  hash (name) -> qn_eph_queue_t
    qn_hashmap_t *topics;       //  hash (name) -> qn_eph_topic_t
    qn_hashmap_t *inboxes;      //  inbox -> qn_eph_waiter_t (requests)
    uint64_t next_inbox, next_id;
    int64_t bytes;              //  Payload bytes held (+ QN_EPH_OVERHEAD per message)
    uint64_t dropped, rejected, delivered, forwarded;
    qn_buf_t out;               //  Reusable
    //  Coalescing: WANTs and batched receives are sent once per pass of
    //  the actor's loop (a 0 ms timer), not once per change.
    qn_eph_queue_t *want_list;
    qn_eph_waiter_t *ready;
    bool flush_armed;
    //  With def.coalesce: the peer operations of this pass, back to back
    //  (one QN_MSG_MESH_EPH at the flush).
    msgpack_sbuffer peer_out;
};

//  Who made the call being handled.
typedef struct {
    const char *reply_to;
    uint64_t corr;
} qn_eph_caller_t;

// ------------------------------------------------------------------ table.c
static inline qn_eph_str_t
qn_eph_str_of (const char *s)
{
    return (qn_eph_str_t) { s, s ? strlen (s) : 0 };
}
#define QN_EPH_STR(s) qn_eph_str_of (s)

static inline void
qn_eph_list_push (qn_eph_list_t *l, qn_eph_msg_t *m)
{
    m->next = NULL;
    if (l->tail)
        l->tail->next = m;
    else
        l->head = m;
    l->tail = m;
    l->count++;
}

//  The oldest message, taken off l; NULL when l is empty.
static inline qn_eph_msg_t *
qn_eph_list_pop (qn_eph_list_t *l)
{
    qn_eph_msg_t *m = l->head;
    if (!m)
        return NULL;
    l->head = m->next;
    if (!l->head)
        l->tail = NULL;
    l->count--;
    m->next = NULL;
    return m;
}

bool qn_eph_is (const char *a, const char *b, size_t blen);
//  The name a client sees: a named tenant's key without its tenant.
const char *qn_eph_shown (const char *key);
//  The entry of map (a queue or a topic: its name first) named name, or
//  NULL when none is, or when another name holds its hash. With create_size,
//  an absent one is made (zeroed, create_size bytes, the name set) and
//  *created is set.
void *qn_eph_named (qn_hashmap_t *map, const char *name, size_t len, size_t create_size,
                    bool *created);
qn_eph_msg_t *qn_eph_msg_new (qn_eph_t *self, qn_eph_str_t payload, qn_eph_str_t reply_to,
                              qn_eph_str_t corr);
void qn_eph_msg_free (qn_eph_t *self, qn_eph_msg_t *m);
//  Frees every message of l; l is left empty.
void qn_eph_list_free (qn_eph_t *self, qn_eph_list_t *l);
//  Whether len more payload bytes fit under EPHEMERAL_MAX_BYTES.
bool qn_eph_fits (qn_eph_t *self, size_t len);
//  Answers a call (status + JSON body) through the host.
void qn_eph_answer_to (qn_eph_t *self, const char *reply_to, uint64_t corr, int status,
                       const char *json, size_t len);
void qn_eph_answer (qn_eph_t *self, const qn_eph_caller_t *env, int status, const char *json);
void qn_eph_answer_error (qn_eph_t *self, const qn_eph_caller_t *env, int status, const char *msg);
//  One operation to the mesh: now, or (def.coalesce) at the flush.
void qn_eph_peer_send (qn_eph_t *self, const qn_msg_eph_peer_t *op);

// ------------------------------------------------------------------ queues.c
qn_eph_queue_t *qn_eph_queue_get (qn_eph_t *self, const char *name, size_t len, bool create);
void qn_eph_waiter_link (qn_eph_queue_t *q, qn_eph_waiter_t *w);
void qn_eph_waiter_unlink (qn_eph_queue_t *q, qn_eph_waiter_t *w);
void qn_eph_arm_flush (qn_eph_t *self);
//  Tells the peers, at the next flush, what q's consumers here can take.
void qn_eph_want (qn_eph_t *self, qn_eph_queue_t *q);
void qn_eph_message_json (qn_buf_t *b, const qn_eph_msg_t *m);
//  {"messages":[...]}: the answer of a receive with max or a poll; frees
//  the messages of l (left empty).
void qn_eph_batch_json (qn_eph_t *self, qn_buf_t *b, qn_eph_list_t *l);
bool qn_eph_hand_local (qn_eph_t *self, qn_eph_queue_t *q, qn_eph_msg_t *m, bool offered);
int qn_eph_buffer (qn_eph_t *self, qn_eph_queue_t *q, qn_eph_msg_t *m);
const char *qn_eph_deliver (qn_eph_t *self, qn_eph_queue_t *q, qn_eph_msg_t *m, int *status);
void qn_eph_on_receive_expired (void *host, void *arg);
void qn_eph_on_request_expired (void *host, void *arg);
bool qn_eph_reply_local (qn_eph_t *self, uint64_t inbox, qn_eph_str_t corr, qn_eph_str_t payload,
                         qn_eph_str_t tenant);
bool qn_eph_inbox_parse (qn_eph_str_t s, uint64_t *n, qn_eph_str_t *broker);

// ------------------------------------------------------------------ topics.c
qn_eph_topic_t *qn_eph_topic_get (qn_eph_t *self, const char *name, size_t len, bool create);
qn_eph_sub_t *qn_eph_sub_find (qn_eph_topic_t *t, const char *name, size_t len);
void qn_eph_sub_remove (qn_eph_t *self, qn_eph_topic_t *t, qn_eph_sub_t *s);
qn_eph_sub_t *qn_eph_sub_put (qn_eph_t *self, qn_eph_topic_t *t, qn_eph_str_t name,
                              qn_eph_str_t broker, int64_t ttl_ms);
void qn_eph_topic_expire (qn_eph_t *self, qn_eph_topic_t *t);
void qn_eph_poll_answer (qn_eph_t *self, qn_eph_sub_t *s);
int qn_eph_publish_local (qn_eph_t *self, qn_eph_topic_t *t, qn_eph_str_t payload);
void qn_eph_on_poll_expired (void *host, void *arg);

#endif
