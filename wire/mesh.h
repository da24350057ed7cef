/*  wire/mesh.h - the mesh frame between replicas, and hint coalescing
    One ZeroMQ message between two brokers of a cell (actors/mesh/) is one
    frame. Its bytes come from the network (after CURVE authentication, but
    a peer may run another version or be buggy): the decoder bounds-checks
    every read and is fuzzed (test/fuzz/fuzz_mesh.c).

    Layout (integers big-endian; str = u16 length + bytes):
        "QM" u8 version(=1) u8 kind  str sender  u64 epoch  ...
    kind HELLO (1): u64 seq                      heartbeat, every second
    kind EPH (3):   u32 length, bytes            one ephemeral queue operation
                                                 (wire/msg_ephemeral.h)
    kind HINTS (2): u16 count, then count hints, each u8 type and:
        COMMITTED (1)  str tenant, str queue, u16 n, n x str partition
                       (n = 0: the whole queue)
        QCONF (2)      str tenant, str queue     settings / encryption changed
        MAINT (3)      u8 push, u8 pop           maintenance flags changed
        GROUP (4)      str tenant, str queue, str group, u8 what
                       (1 deleted, 2 sought)
        STALE (5)      (nothing)                 drop every cached setting
    A fired timer, a group seek that makes messages visible and an ack
    that releases a lease are all published locally as "committed" and
    travel as COMMITTED hints.

    qn_mesh_coalesce_t gathers hints between two flushes: one COMMITTED
    per (tenant, queue) with the union of its partitions (more than
    QN_MESH_MAX_PARTS collapse to the whole queue), one QCONF per queue,
    the latest MAINT, one GROUP per (tenant, queue, group, what).
    Pure: no sockets, threads or logging.
*/
#ifndef QN_WIRE_MESH_H
#define QN_WIRE_MESH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define QN_MESH_VERSION     1
#define QN_MESH_HELLO       1
#define QN_MESH_HINTS       2
#define QN_MESH_EPH         3
#define QN_MESH_MAX_EPH     (1024 * 1024)   //  Bytes of one ephemeral operation

#define QN_MESH_H_COMMITTED 1
#define QN_MESH_H_QCONF     2
#define QN_MESH_H_MAINT     3
#define QN_MESH_H_GROUP     4
#define QN_MESH_H_STALE     5

#define QN_MESH_GROUP_DELETED 1
#define QN_MESH_GROUP_SOUGHT  2

#define QN_MESH_MAX_STR     1024    //  Bytes of a name in a frame
#define QN_MESH_MAX_PARTS   16      //  Partitions named in one COMMITTED hint
#define QN_MESH_MAX_HINTS   1024    //  Hints in one frame
#define QN_MESH_MAX_FRAME   5800    //  Bytes of one HINTS frame the coalescer builds
                                    //  (base64 of it fits a NOTIFY payload)

typedef struct {
    const char *ptr;
    size_t len;
} qn_mesh_str_t;

typedef struct {
    uint8_t type;               //  QN_MESH_H_*
    qn_mesh_str_t tenant, queue, group;
    uint32_t part_first;        //  Index of its first partition in the parts array
    uint32_t part_count;        //  0 = the whole queue
    bool push, pop;             //  MAINT
    uint8_t what;               //  GROUP: QN_MESH_GROUP_*
} qn_mesh_hint_t;

typedef struct {
    uint8_t kind;               //  QN_MESH_HELLO, QN_MESH_HINTS
    qn_mesh_str_t sender;       //  The sending broker's id
    uint64_t epoch;             //  The sender's boot instant (wall µs): a new one = it restarted
    uint64_t seq;               //  HELLO
    uint32_t hint_count;        //  HINTS: entries filled in `hints`
    qn_mesh_str_t payload;      //  EPH: the operation's bytes
} qn_mesh_frame_t;

//  Decodes one frame. Slices point into buf; hints go in `hints` (room for
//  max_hints), the partitions they name in `parts` (room for max_parts).
//  Returns 0, or -1 when malformed (truncated, trailing bytes, unknown
//  version, kind or hint type, a name longer than QN_MESH_MAX_STR, more
//  hints or partitions than there is room for).
int qn_mesh_decode (const char *buf, size_t len, qn_mesh_frame_t *out,
                    qn_mesh_hint_t *hints, size_t max_hints,
                    qn_mesh_str_t *parts, size_t max_parts);

//  Encoders append one whole frame to out.
void qn_mesh_encode_hello (qn_buf_t *out, const char *sender, size_t sender_len,
                           uint64_t epoch, uint64_t seq);
void qn_mesh_encode_eph (qn_buf_t *out, const char *sender, size_t sender_len, uint64_t epoch,
                         const char *payload, size_t len);
//  A HINTS frame of `count` hints (partitions of hint i are
//  parts [hints [i].part_first .. + part_count]). Strings longer than
//  QN_MESH_MAX_STR are the caller's bug: they are cut.
void qn_mesh_encode_hints (qn_buf_t *out, const char *sender, size_t sender_len, uint64_t epoch,
                           const qn_mesh_hint_t *hints, size_t count, const qn_mesh_str_t *parts);

// ------------------------------------------------------------------ coalescing
typedef struct qn_mesh_coalesce qn_mesh_coalesce_t;

qn_mesh_coalesce_t *qn_mesh_coalesce_new (void);
void qn_mesh_coalesce_destroy (qn_mesh_coalesce_t **self_p);
//  Adds a hint (its strings are copied; part_count/partition ignored but
//  for COMMITTED: `partition` NULL = the whole queue).
void qn_mesh_coalesce_add (qn_mesh_coalesce_t *self, const qn_mesh_hint_t *hint,
                           const char *partition, size_t partition_len);
//  Hints gathered since the last flush (after coalescing).
size_t qn_mesh_coalesce_count (const qn_mesh_coalesce_t *self);
//  Hints added since creation, and how many of them were merged away.
uint64_t qn_mesh_coalesce_added (const qn_mesh_coalesce_t *self);
uint64_t qn_mesh_coalesce_merged (const qn_mesh_coalesce_t *self);
//  Encodes what is gathered as HINTS frames of at most QN_MESH_MAX_HINTS
//  hints and about QN_MESH_MAX_FRAME bytes each, calling fn once per frame,
//  then empties itself. Returns the number of frames.
size_t qn_mesh_coalesce_flush (qn_mesh_coalesce_t *self, const char *sender, size_t sender_len,
                               uint64_t epoch, void (*fn) (void *arg, const qn_buf_t *frame),
                               void *arg);

#endif
