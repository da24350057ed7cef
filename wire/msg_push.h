/*  wire/msg_push.h - the protocol-neutral push operation
    Every front door that pushes (HTTP push, SQS SendMessage(Batch)) sends
    ONE push request to the write path (pg_writer) and gets ONE answer
    with one result per item. How the push was made durable (PostgreSQL or
    the disk spool) is the write path's business: see actors/pg/push_route.h.

    QN_MSG_PUSH (request, codec or spool replay -> pg_writer)
        [tenant, flags, [item, ...]]
        flags: bit 0 = replay (from the spool: never re-routed)
        item:  [queue, partition|nil, txn|nil, payload (bin|str), trace|nil,
                producer|nil, encrypted|nil (, not_before_us|nil (, sqs|nil))]
               seven fields; the eighth on a delayed item or an SQS item,
               the ninth on an SQS item only: the SQS metadata of an SQS
               send as JSON text (schema/functions/63_sqs_push.sql says
               its keys). An SQS item carries no transaction id of its
               own: one it has was minted by the spool and is its MessageId.
               Every reader decodes an item with qn_msg_push_item_decode.
    QN_MSG_PUSH_ANSWER (reply, pg_writer or spool -> the request's reply_to)
        [ok, sqlstate, message, [[status, seq, partition_id, txn|nil], ...]]
        ok false: the whole push was refused (sqlstate says why, no item
        was written); ok true: one result per item, in request order:
        status QN_PUSH_QUEUED (committed in PostgreSQL: seq, partition_id),
        QN_PUSH_DUPLICATE (txn already there, or an SQS deduplication id
        seen: seq of the stored message),
        QN_PUSH_BUFFERED (fsync'd in the spool: txn is the transaction id
        it carries, minted when the request had none).
    Pure: no sockets, threads or logging.
*/
#ifndef QN_WIRE_MSG_PUSH_H
#define QN_WIRE_MSG_PUSH_H

#include "wire/msg_pg.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QN_MSG_PUSH_REPLAY  1u          //  flags bit 0

typedef enum {
    QN_PUSH_QUEUED = 0,
    QN_PUSH_DUPLICATE = 1,
    QN_PUSH_BUFFERED = 2
} qn_push_status_t;

//  A decoded push request; slices and items point into the decoded
//  buffer / the caller's holder.
typedef struct {
    const char *tenant;
    size_t tenant_len;
    bool replay;
    const msgpack_object *items;        //  count items, each checked: read
    uint32_t count;                     //  them with qn_msg_push_item_decode
} qn_msg_push_t;

//  Packs the head of a request; the caller then packs `count` items.
void qn_msg_push_begin (msgpack_packer *pk, const char *tenant, size_t tenant_len,
                        bool replay, uint32_t count);
//  One item, to encode or decoded. Strings are not NUL-terminated; a
//  NULL pointer is nil (queue and payload are never NULL).
typedef struct {
    const char *queue;
    size_t queue_len;
    const char *partition;
    size_t partition_len;
    const char *txn;
    size_t txn_len;
    const void *payload;        //  Packed as bin
    size_t payload_len;
    const char *trace;
    size_t trace_len;
    const char *producer;
    size_t producer_len;
    bool encrypted;
    bool has_not_before;        //  The eighth field is an instant
    int64_t not_before_us;
    const char *sqs;            //  The ninth field: SQS metadata (JSON), or NULL
    size_t sqs_len;
} qn_msg_push_item_t;

//  Packs one item of a request.
void qn_msg_push_item (msgpack_packer *pk, const qn_msg_push_item_t *it);
//  The one decoder of an item (a request's, a spool record's): fills out,
//  whose strings point into item. 0, or -1 when item has not the shape
//  above.
int qn_msg_push_item_decode (const msgpack_object *item, qn_msg_push_item_t *out);
//  Packs a decoded item again (the spool); with `txn` non-NULL its
//  transaction id is replaced by that NUL-terminated string. -1 (nothing
//  packed) when item does not decode.
int qn_msg_push_item_copy (msgpack_packer *pk, const msgpack_object *item, const char *txn);
//  Decodes a request. holder is initialised by the caller and destroyed
//  after the last use of out. 0, or -1 when malformed (any bad item).
int qn_msg_push_decode (const char *buf, size_t len, msgpack_unpacked *holder,
                        qn_msg_push_t *out);

//  One item result of an answer.
typedef struct {
    uint8_t status;             //  qn_push_status_t
    int64_t seq;                //  QUEUED / DUPLICATE
    int64_t partition_id;       //  QUEUED
    const char *txn;            //  BUFFERED, else NULL; not NUL-terminated
    size_t txn_len;
} qn_msg_push_result_t;

//  A decoded answer; results point into holder.
typedef struct {
    bool ok;
    char sqlstate [6];
    const char *message;
    size_t message_len;
    const msgpack_object *results;      //  count arrays
    uint32_t count;
} qn_msg_push_answer_t;

//  Packs a refusal (no results).
void qn_msg_push_refuse (msgpack_packer *pk, const char *sqlstate, const char *message);
//  Packs the head of an accepted answer; the caller then packs `count`
//  results with qn_msg_push_result.
void qn_msg_push_answer_begin (msgpack_packer *pk, uint32_t count);
void qn_msg_push_result (msgpack_packer *pk, const qn_msg_push_result_t *r);
//  0, or -1 when malformed.
int qn_msg_push_answer_decode (const char *buf, size_t len, msgpack_unpacked *holder,
                               qn_msg_push_answer_t *out);
//  A refusal as a PostgreSQL error result (its sqlstate and message, no
//  detail), for the doors' one error mapping; free with qn_pg_result_free.
void qn_msg_push_refusal_result (const qn_msg_push_answer_t *a, qn_pg_result_t *res);
//  Result i of a decoded answer (i < count). 0, or -1 when malformed.
int qn_msg_push_answer_at (const qn_msg_push_answer_t *a, uint32_t i, qn_msg_push_result_t *out);

#endif
