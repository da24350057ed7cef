/*  wire/msg_spool.h - messages of the disk spool (actors/spool/)
    QN_MSG_SPOOL_APPEND (pg_writer -> spool; reply_to is the codec that
        sent the push, which the spool answers with QN_MSG_PUSH_ANSWER
        after fdatasync)
        [tenant, [item, ...]]   items as in wire/msg_push.h, every txn
        set. The same bytes are the body of a record on disk
        (wire/spool_codec.h), so the decoder takes hostile input: bounded
        pre-check, every item checked (fuzzed: test/fuzz/fuzz_spool.c).
    QN_MSG_SPOOL_STATS_ASK (request, system routes -> spool)  []
    QN_MSG_SPOOL_STATS_REPLY (its reply)
        [pending, failed, db_healthy, buffer_healthy, failed_bytes]
    QN_MSG_SPOOL_DRAINED (spool -> pg_writer, direct, repeated while idle)
        [appends]   the spool has replayed everything it holds, and it has
                    handled `appends` SPOOL_APPENDs since it started;
                    pg_writer leaves spool mode only when that is every
                    append it forwarded (actors/pg/route.h).
    Pure.
*/
#ifndef QN_WIRE_MSG_SPOOL_H
#define QN_WIRE_MSG_SPOOL_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/msg_push.h"

typedef struct {
    const char *tenant;
    size_t tenant_len;
    const msgpack_object *items;        //  count items, each checked: read
    uint32_t count;                     //  them with qn_msg_push_item_decode; >= 1
} qn_msg_spool_append_t;

//  Packs an append of the `count` items; minted [i] (when minted and
//  minted [i][0]) replaces item i's transaction id.
void qn_msg_spool_append_encode (msgpack_sbuffer *out, const char *tenant, size_t tenant_len,
                                 const qn_msg_push_item_t *items, uint32_t count,
                                 char (*minted) [37]);
//  holder is initialised by the caller, destroyed after the last use of
//  out. 0, or -1 when malformed (no items, a bad item, trailing bytes).
int qn_msg_spool_append_decode (const char *buf, size_t len, msgpack_unpacked *holder,
                                qn_msg_spool_append_t *out);

typedef struct {
    uint64_t pending;
    uint64_t failed;
    bool db_healthy;
    bool buffer_healthy;
    uint64_t failed_bytes;
} qn_msg_spool_stats_t;

void qn_msg_spool_stats_encode (msgpack_sbuffer *out, const qn_msg_spool_stats_t *m);
int qn_msg_spool_stats_decode (const char *buf, size_t len, qn_msg_spool_stats_t *out);

void qn_msg_spool_drained_encode (msgpack_sbuffer *out, uint64_t appends);
int qn_msg_spool_drained_decode (const char *buf, size_t len, uint64_t *appends);

#endif
