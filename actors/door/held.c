/*  actors/door/held.c - the door engine's codec side (actors/door/door.h)
    A library run in the codec's thread, no actor of its own:
    qn_door_out_t keeps the answers the door's inbox could not take yet
    (its high-water mark) and sends them, oldest first, when the kernel
    says the door drained (qn_on_writable), the one back-pressure idiom.
    Once one answer waits every later one waits behind it, so a
    connection's answers never overtake each other. What is held is
    bounded by the door's own limit of requests in flight per connection.
    qn_door_cancel_conn finds the requests of a connection that went away.
*/
#include "actors/door/door.h"

#include <stdlib.h>
#include <string.h>

typedef struct s_held s_held_t;
struct s_held {
    s_held_t *next;
    qn_buf_t body;              //  Owned: the answer's message body
    qn_frame_t frame;           //  Owned: its frame
    bool has_frame;
};

struct qn_door_out {
    qn_kernel_t *kernel;        //  Not owned
    char *to;                   //  Owned: the door
    uint16_t type;
    char *held_counter;         //  Owned, or NULL
    s_held_t *head, *tail;      //  Owned: held answers, oldest first
    uint32_t held;
    bool waiting;               //  qn_on_writable asked
};

qn_door_out_t *
qn_door_out_new (qn_kernel_t *kernel, const char *to, uint16_t type, const char *held_counter)
{
    qn_door_out_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->to = qn_strdup (to);
    self->type = type;
    self->held_counter = held_counter ? qn_strdup (held_counter) : NULL;
    return self;
}

static void
s_held_free (s_held_t *h)
{
    qn_buf_free (&h->body);
    free (h->frame.data);
    free (h);
}

void
qn_door_out_destroy (qn_door_out_t **self_p)
{
    qn_door_out_t *self = *self_p;
    if (!self)
        return;
    while (self->head) {
        s_held_t *h = self->head;
        self->head = h->next;
        s_held_free (h);
    }
    free (self->to);
    free (self->held_counter);
    free (self);
    *self_p = NULL;
}

uint32_t
qn_door_out_held (qn_door_out_t *self)
{
    return self->held;
}

static int
s_send (qn_door_out_t *self, s_held_t *h)
{
    qn_msg_t msg = {
        .to = self->to, .type = self->type, .body = h->body.data, .body_len = h->body.len,
        .frames = h->has_frame ? &h->frame : NULL, .frame_count = h->has_frame ? 1 : 0
    };
    return qn_send (self->kernel, &msg);
}

static void s_wait (qn_door_out_t *self);

//  The door drained: send held answers, oldest first, until it is full
//  again.
static void
s_on_writable (void *codec, void *arg)
{
    (void) codec;
    qn_door_out_t *self = arg;
    self->waiting = false;
    while (self->head) {
        s_held_t *h = self->head;
        int rc = s_send (self, h);
        if (rc == QN_EAGAIN) {
            s_wait (self);
            return;
        }
        if (rc)                     //  The door is gone: shutting down
            qn_warn ("answer dropped: door=%s rc=%s", self->to, qn_strerror (rc));
        self->head = h->next;
        if (!self->head)
            self->tail = NULL;
        self->held--;
        s_held_free (h);
    }
}

static void
s_wait (qn_door_out_t *self)
{
    if (!self->waiting && qn_on_writable (self->kernel, self->to, s_on_writable, self) == 0)
        self->waiting = true;
}

void
qn_door_out_send (qn_door_out_t *self, const void *body, size_t len, qn_frame_t *frame)
{
    s_held_t h = { .has_frame = frame != NULL };
    if (frame) {
        h.frame = *frame;
        frame->data = NULL;
    }
    int rc = QN_EAGAIN;
    if (!self->head) {
        //  The common case: nothing waits, send from the caller's body.
        qn_msg_t msg = {
            .to = self->to, .type = self->type, .body = body, .body_len = len,
            .frames = frame ? &h.frame : NULL, .frame_count = frame ? 1 : 0
        };
        rc = qn_send (self->kernel, &msg);
    }
    if (rc == QN_EAGAIN) {
        s_held_t *held = qn_zalloc (sizeof *held);
        *held = h;
        qn_buf_append (&held->body, body, len);
        if (self->tail)
            self->tail->next = held;
        else
            self->head = held;
        self->tail = held;
        self->held++;
        if (self->held_counter)
            qn_count (self->kernel, self->held_counter, 1);
        s_wait (self);
        return;
    }
    if (rc)                         //  The door is gone: shutting down
        qn_warn ("answer dropped: door=%s rc=%s", self->to, qn_strerror (rc));
    free (h.frame.data);
}

// ------------------------------------------------------------------ cancel-on-close
typedef struct {
    uint64_t conn_id;
    qn_door_conn_of_fn *conn_of;
    qn_buf_t ids;
} s_cancel_t;

static void
s_collect (void *arg, uint64_t key, void *value)
{
    s_cancel_t *c = arg;
    if (c->conn_of (value) == c->conn_id)
        qn_buf_append (&c->ids, &key, sizeof key);
}

void
qn_door_cancel_conn (qn_hashmap_t *requests, uint64_t conn_id, qn_door_conn_of_fn *conn_of,
                     qn_door_cancel_fn *cancel, void *arg)
{
    s_cancel_t c = { conn_id, conn_of, QN_BUF_INIT };
    qn_hashmap_each (requests, s_collect, &c);
    for (size_t i = 0; i < c.ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, c.ids.data + i * sizeof id, sizeof id);
        void *r = qn_hashmap_get (requests, id);
        if (r)
            cancel (arg, r);
    }
    qn_buf_free (&c.ids);
}
