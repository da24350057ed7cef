/*  actors/door/door.h - the door engine: one connection core for every front door
    A front door is a listener actor (the door) and a codec actor behind it.
    The engine is the door: it owns what every protocol needs the same way,
    and each protocol plugs in its framing as a small table of callbacks
    (qn_door_proto_t), the way nginx modules plug into one connection core.

    The door (door.c) owns
      - accept (TCP_NODELAY; at MAX_CONNECTIONS or while stopping a new
        connection gets the protocol's busy answer, if any, and is closed);
      - the connection table (id -> connection, fd -> connection);
      - request/response matching: each complete request gets the next
        sequence number of its connection and goes to the codec as one
        message (`request_type`); answers (`response_type`) may come back
        in any order and leave in sequence order; an answer whose sequence
        is not in flight closes its client (a codec bug must not reorder);
      - back-pressure: a request the codec cannot take yet (QN_EAGAIN) is
        kept and the connection stops reading until the codec drains
        (qn_on_writable), so TCP pushes back on the client; reading also
        pauses at `max_in_flight` requests of a connection or
        `out_soft_limit` bytes of unsent output;
      - cancel-on-close: a client that goes away with requests in flight
        is reported to the codec (`closed_type`), which cancels them;
      - per-connection limits: requests in flight, unsent output, the slow
        request and idle keep-alive deadlines (`timeouts`), lingering close
        after an error answer (`linger_ms`);
      - graceful stop: the listener closes, the codec is told
        (`drained_type`), idle connections close, busy ones after their
        answers.

    The codec side (held.c) gives every codec the other half:
      - qn_door_out_t: answers to the door, sent at once or held, in order,
        while the door's inbox is at its high-water mark and sent when it
        drains. An answer is never dropped for back-pressure;
      - qn_door_cancel_conn: the requests of a connection that went away.
*/
#ifndef QN_ACTORS_DOOR_DOOR_H
#define QN_ACTORS_DOOR_DOOR_H

#include "kernel/kernel.h"
#include "base/hashmap.h"

// ------------------------------------------------------------------ the protocol table
typedef enum {
    QN_DOOR_MORE = 0,           //  Needs more bytes (the unconsumed rest is kept)
    QN_DOOR_REQUEST = 1,        //  A complete request, in the qn_door_req_t
    QN_DOOR_INTERIM = 2,        //  Write req->interim now, then feed the rest again
    QN_DOOR_ERROR = -1          //  Malformed: answer req->error_status (if the
                                //  protocol answers errors), then close
} qn_door_rc_t;

//  One framing step. The engine fills the first fields; feed fills the rest.
typedef struct {
    uint64_t conn_id;           //  In
    uint32_t seq;               //  In: this request's sequence number
    bool draining;              //  In: the door is stopping
    qn_buf_t *body;             //  In, empty: the message body for the codec
    qn_frame_t frame;           //  Out (REQUEST): its payload frame (malloc'd, taken)
    bool last;                  //  Out (REQUEST): close once it is answered
    const char *interim;        //  Out (INTERIM): bytes to write at once
    int error_status;           //  Out (ERROR): e.g. 400, 413, 431
    const char *error;          //  Out (ERROR): a short text
} qn_door_req_t;

//  An answer from the codec.
typedef struct {
    uint64_t conn_id;
    uint32_t seq;
    bool close;                 //  Close the connection after it
    const char *data;           //  Its bytes (NULL: the request gets no answer)
    size_t len;
} qn_door_resp_t;

typedef struct {
    const char *name;           //  "http", "kafka": counters <name>_connections,
                                //  _connections_refused, _requests, _errors_framing,
                                //  _request_timeouts
    uint16_t request_type;      //  door -> codec: one request
    uint16_t response_type;     //  codec -> door: one answer
    uint16_t closed_type;       //  door -> codec: the client went away
    uint16_t drained_type;      //  door -> codec: stopping (0: not sent)
    uint32_t max_in_flight;     //  Requests of one connection at the codec
    size_t out_soft_limit;      //  Stop reading while more output is unsent
    uint32_t linger_ms;         //  After an error answer: read and drop input
                                //  this long before closing (0: close at once)
    bool timeouts;              //  REQUEST_TIMEOUT_MS (slow request, answered
                                //  with error 408) and IDLE_TIMEOUT_MS apply
    const char *busy;           //  Written to a refused connection, or NULL

    //  Per-connection framing state (NULL: none).
    void *(*conn_new) (const qn_config_t *config);
    void (*conn_free) (void *state);
    //  Frames data: sets *used (bytes consumed) and returns a qn_door_rc_t.
    qn_door_rc_t (*feed) (void *state, const qn_config_t *config, const char *data,
                          size_t len, size_t *used, qn_door_req_t *req);
    //  True while a request is partly read (the slow-request clock runs).
    bool (*in_request) (void *state);
    //  The bytes of an error answer (NULL: errors close without one).
    void (*error_answer) (qn_buf_t *out, int status, const char *msg);
    //  Decodes an answer's envelope. 0, or -1 (QN_EPROTO).
    int (*response_decode) (const qn_env_t *env, qn_door_resp_t *out);
    //  Appends an answer's bytes to the output (NULL: as they are).
    void (*response_write) (qn_buf_t *out, const char *data, size_t len);
    void (*closed_encode) (qn_buf_t *body, uint64_t conn_id);
    void (*drained_encode) (qn_buf_t *body);
} qn_door_proto_t;

typedef struct {
    const char *name;           //  The door actor's name
    const char *codec;          //  Where its requests go
    int64_t port;               //  On config->host
    const qn_door_proto_t *proto;
} qn_door_def_t;

//  Spawns a door actor.
qn_actor_t *qn_door_new (qn_kernel_t *kernel, const qn_config_t *config, const qn_door_def_t *def);

//  A msgpack_packer write callback into a qn_buf_t (sized to what is
//  written: msgpack_sbuffer starts at 8 KiB).
int qn_door_buf_write (void *buf, const char *data, size_t len);

// ------------------------------------------------------------------ the codec side
typedef struct qn_door_out qn_door_out_t;

//  Answers of the calling codec to the door `to`, as messages of `type`;
//  `held_counter` counts answers that had to wait (NULL: not counted).
qn_door_out_t *qn_door_out_new (qn_kernel_t *kernel, const char *to, uint16_t type,
                                const char *held_counter);
void qn_door_out_destroy (qn_door_out_t **self_p);
//  Sends body (+ frame, or NULL: none) now, or holds it behind earlier held
//  answers until the door drains. Takes frame->data either way.
void qn_door_out_send (qn_door_out_t *self, const void *body, size_t len, qn_frame_t *frame);
//  Answers held now.
uint32_t qn_door_out_held (qn_door_out_t *self);

//  Cancel-on-close: calls cancel for every request of `requests` (id ->
//  request) whose conn_of is conn_id. cancel may remove and free any
//  request of the table.
typedef uint64_t (qn_door_conn_of_fn) (const void *request);
typedef void (qn_door_cancel_fn) (void *arg, void *request);
void qn_door_cancel_conn (qn_hashmap_t *requests, uint64_t conn_id, qn_door_conn_of_fn *conn_of,
                          qn_door_cancel_fn *cancel, void *arg);

#endif
