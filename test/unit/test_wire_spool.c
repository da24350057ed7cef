/*  test/unit/test_wire_spool.c - the disk spool
    Record framing (pure): CRC32C vectors, record round trip and every
    split point, torn tails at every byte of a three-record segment,
    corrupted bytes, resync past damage, append-body checks, segment names
    and the checkpoint line. Inputs sit in exact-size heap blocks so ASan
    catches over-reads.
    The spool actor with real threads against fake pg_writer / pg_reader
    actors: durable appends, ordered replay once the database is back, a
    refused record moved to failed.qspool, recovery of a torn tail after a
    restart, an unwritable directory, and group commit.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <msgpack.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actors/actors.h"
#include "kernel/kernel.h"
#include "wire/msg_db.h"
#include "wire/msg_push.h"
#include "wire/msg_spool.h"
#include "wire/spool_codec.h"


static char *
s_exact (const void *data, size_t len)
{
    char *copy = qn_malloc (len ? len : 1);
    memcpy (copy, data, len);
    return copy;
}

static int
s_write (void *data, const char *buf, size_t len)
{
    qn_buf_append (data, buf, len);
    return 0;
}

static void
s_pack_str (msgpack_packer *pk, const char *s)
{
    msgpack_pack_str (pk, strlen (s));
    msgpack_pack_str_body (pk, s, strlen (s));
}

//  A valid append body with `n` items on queue q (payload "{\"i\":k}").
static void
s_body (qn_buf_t *out, const char *tenant, const char *queue, int n)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, s_write);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, tenant);
    msgpack_pack_array (&pk, (size_t) n);
    for (int i = 0; i < n; i++) {
        char txn [32], payload [32];
        snprintf (txn, sizeof txn, "txn-%d", i);
        snprintf (payload, sizeof payload, "{\"i\":%d}", i);
        msgpack_pack_array (&pk, 7);
        s_pack_str (&pk, queue);
        s_pack_str (&pk, "Default");
        s_pack_str (&pk, txn);
        msgpack_pack_bin (&pk, strlen (payload));
        msgpack_pack_bin_body (&pk, payload, strlen (payload));
        msgpack_pack_nil (&pk);
        msgpack_pack_nil (&pk);
        msgpack_pack_false (&pk);
    }
}

// ------------------------------------------------------------------ crc32c
static void
test_crc32c_vectors (void **state)
{
    (void) state;
    assert_int_equal (qn_crc32c (0, "123456789", 9), 0xE3069283u);
    assert_int_equal (qn_crc32c (0, "", 0), 0);
    //  RFC 3720 (iSCSI) appendix B.4.
    uint8_t buf [32];
    memset (buf, 0, sizeof buf);
    assert_int_equal (qn_crc32c (0, buf, 32), 0x8A9136AAu);
    memset (buf, 0xff, sizeof buf);
    assert_int_equal (qn_crc32c (0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf [i] = (uint8_t) i;
    assert_int_equal (qn_crc32c (0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf [i] = (uint8_t) (31 - i);
    assert_int_equal (qn_crc32c (0, buf, 32), 0x113FDB5Cu);
    //  Chaining equals one pass.
    uint32_t c = qn_crc32c (0, "1234", 4);
    assert_int_equal (qn_crc32c (c, "56789", 5), 0xE3069283u);
}

// ------------------------------------------------------------------ records
static void
test_record_round_trip (void **state)
{
    (void) state;
    qn_buf_t body = QN_BUF_INIT, rec = QN_BUF_INIT;
    s_body (&body, "", "orders", 3);
    qn_spool_record_encode (&rec, body.data, body.len);
    assert_int_equal (rec.len, QN_SPOOL_HEADER_LEN + body.len);
    assert_memory_equal (rec.data, "QSR1", 4);
    char *exact = s_exact (rec.data, rec.len);
    const char *out;
    size_t out_len;
    assert_int_equal (qn_spool_record_decode (exact, rec.len, &out, &out_len), (int64_t) rec.len);
    assert_int_equal (out_len, body.len);
    assert_ptr_equal (out, exact + QN_SPOOL_HEADER_LEN);
    assert_memory_equal (out, body.data, body.len);
    assert_int_equal (qn_spool_body_check (out, out_len), 3);
    //  Every strict prefix reads as incomplete, never as a record.
    for (size_t cut = 0; cut < rec.len; cut++) {
        char *prefix = s_exact (rec.data, cut);
        assert_int_equal (qn_spool_record_decode (prefix, cut, &out, &out_len), QN_SPOOL_INCOMPLETE);
        free (prefix);
    }
    free (exact);
    //  An empty body is a valid record too.
    qn_buf_reset (&rec);
    qn_spool_record_encode (&rec, "", 0);
    assert_int_equal (qn_spool_record_decode (rec.data, rec.len, &out, &out_len), QN_SPOOL_HEADER_LEN);
    assert_int_equal (out_len, 0);
    qn_buf_free (&body);
    qn_buf_free (&rec);
}

static void
test_record_corrupt_byte (void **state)
{
    (void) state;
    qn_buf_t body = QN_BUF_INIT, rec = QN_BUF_INIT;
    s_body (&body, "t1", "q", 2);
    qn_spool_record_encode (&rec, body.data, body.len);
    const char *out;
    size_t out_len;
    for (size_t at = 0; at < rec.len; at++)
        for (int bit = 0; bit < 8; bit++) {
            char *bad = s_exact (rec.data, rec.len);
            bad [at] ^= (char) (1 << bit);
            int64_t rc = qn_spool_record_decode (bad, rec.len, &out, &out_len);
            if (at >= 4 && at < 8)
                //  A longer length reads as a torn record, any other
                //  length fails the CRC (it covers the length).
                assert_true (rc == QN_SPOOL_CORRUPT || rc == QN_SPOOL_INCOMPLETE);
            else
                assert_int_equal (rc, QN_SPOOL_CORRUPT);
            free (bad);
        }
    //  A length beyond the limit is corruption, even with the header cut.
    char head [QN_SPOOL_HEADER_LEN] = "QSR1\xff\xff\xff\x7f";
    assert_int_equal (qn_spool_record_decode (head, 8, &out, &out_len), QN_SPOOL_CORRUPT);
    assert_int_equal (qn_spool_record_decode (head, sizeof head, &out, &out_len), QN_SPOOL_CORRUPT);
    //  Wrong magic in a prefix is corruption, not "incomplete".
    assert_int_equal (qn_spool_record_decode ("QX", 2, &out, &out_len), QN_SPOOL_CORRUPT);
    qn_buf_free (&body);
    qn_buf_free (&rec);
}

//  Three records back to back; ends [i] = offset after record i.
static void
s_three (qn_buf_t *seg, size_t ends [3])
{
    for (int r = 0; r < 3; r++) {
        qn_buf_t body = QN_BUF_INIT;
        s_body (&body, "", r == 1 ? "payments" : "orders", r + 1);
        qn_spool_record_encode (seg, body.data, body.len);
        ends [r] = seg->len;
        qn_buf_free (&body);
    }
}

static void
test_scan_torn_tail_every_offset (void **state)
{
    (void) state;
    qn_buf_t seg = QN_BUF_INIT;
    size_t ends [3];
    s_three (&seg, ends);
    for (size_t cut = 0; cut <= seg.len; cut++) {
        char *image = s_exact (seg.data, cut);
        qn_spool_scan_t scan;
        qn_spool_scan (image, cut, &scan);
        size_t whole = 0;
        uint64_t records = 0;
        for (int r = 0; r < 3; r++)
            if (ends [r] <= cut) {
                whole = ends [r];
                records++;
            }
        assert_int_equal (scan.valid_len, whole);
        assert_int_equal (scan.records, records);
        assert_int_equal (scan.stop, cut == whole ? QN_SPOOL_SCAN_END : QN_SPOOL_SCAN_TORN);
        //  Truncating there leaves a clean segment.
        qn_spool_scan_t again;
        qn_spool_scan (image, scan.valid_len, &again);
        assert_int_equal (again.stop, QN_SPOOL_SCAN_END);
        assert_int_equal (again.records, records);
        free (image);
    }
    qn_buf_free (&seg);
}

static void
test_scan_corruption_and_resync (void **state)
{
    (void) state;
    qn_buf_t seg = QN_BUF_INIT;
    size_t ends [3];
    s_three (&seg, ends);
    //  A flipped payload byte in record 2: the scan keeps record 1 only and
    //  says why; resync finds record 3 intact after the damage.
    char *image = s_exact (seg.data, seg.len);
    image [ends [1] - 3] ^= 0x40;
    qn_spool_scan_t scan;
    qn_spool_scan (image, seg.len, &scan);
    assert_int_equal (scan.valid_len, ends [0]);
    assert_int_equal (scan.records, 1);
    assert_int_equal (scan.stop, QN_SPOOL_SCAN_BAD);
    assert_int_equal (qn_spool_resync (image, seg.len, scan.valid_len), (int64_t) ends [1]);
    free (image);
    //  Zeros where record 3 should be (a crash after the size grew but
    //  before the data landed): bad, and nothing valid after it.
    image = s_exact (seg.data, seg.len);
    memset (image + ends [1], 0, seg.len - ends [1]);
    qn_spool_scan (image, seg.len, &scan);
    assert_int_equal (scan.valid_len, ends [1]);
    assert_int_equal (scan.stop, QN_SPOOL_SCAN_BAD);
    assert_int_equal (qn_spool_resync (image, seg.len, scan.valid_len), -1);
    free (image);
    //  Every single corrupted byte stops the scan at or before its record.
    for (size_t at = 0; at < seg.len; at++) {
        image = s_exact (seg.data, seg.len);
        image [at] ^= 0x01;
        qn_spool_scan (image, seg.len, &scan);
        size_t start = at < ends [0] ? 0 : at < ends [1] ? ends [0] : ends [1];
        assert_int_equal (scan.valid_len, start);
        assert_int_not_equal (scan.stop, QN_SPOOL_SCAN_END);
        free (image);
    }
    qn_buf_free (&seg);
}

// ------------------------------------------------------------------ bodies
static void
test_body_check (void **state)
{
    (void) state;
    qn_buf_t b = QN_BUF_INIT;
    s_body (&b, "", "q", 5);
    assert_int_equal (qn_spool_body_check (b.data, b.len), 5);
    //  Trailing bytes, truncation.
    qn_buf_putc (&b, 0);
    assert_int_equal (qn_spool_body_check (b.data, b.len), -1);
    assert_int_equal (qn_spool_body_check (b.data, b.len - 2), -1);
    //  Wrong shapes: no items, an item of the wrong arity, a number queue.
    qn_buf_reset (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, s_write);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "");
    msgpack_pack_array (&pk, 0);
    assert_int_equal (qn_spool_body_check (b.data, b.len), -1);
    qn_buf_reset (&b);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "");
    msgpack_pack_array (&pk, 1);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "q");
    s_pack_str (&pk, "p");
    assert_int_equal (qn_spool_body_check (b.data, b.len), -1);
    qn_buf_reset (&b);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "");
    msgpack_pack_array (&pk, 1);
    msgpack_pack_array (&pk, 7);
    msgpack_pack_int (&pk, 1);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    msgpack_pack_bin (&pk, 0);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    assert_int_equal (qn_spool_body_check (b.data, b.len), -1);
    assert_int_equal (qn_spool_body_check ("\xc1", 1), -1);
    qn_buf_free (&b);
}

// ------------------------------------------------------------------ names
static void
test_segment_names (void **state)
{
    (void) state;
    char name [QN_SPOOL_NAME_MAX];
    qn_spool_segment_name (42, name);
    assert_string_equal (name, "segment-0000000000000042.qspool");
    uint64_t seq = 0;
    assert_int_equal (qn_spool_segment_parse (name, &seq), 0);
    assert_int_equal (seq, 42);
    qn_spool_segment_name (UINT64_C (9999999999999999), name);
    assert_int_equal (qn_spool_segment_parse (name, &seq), 0);
    assert_true (seq == UINT64_C (9999999999999999));
    const char *not_segments [] = {
        "segment-0000000000000042.qspool.tmp", "segment-42.qspool", "checkpoint",
        "segment-00000000000000x2.qspool", "failed.qspool", ""
    };
    for (size_t i = 0; i < sizeof not_segments / sizeof not_segments [0]; i++)
        assert_int_equal (qn_spool_segment_parse (not_segments [i], &seq), -1);
}

static void
test_checkpoint_line (void **state)
{
    (void) state;
    qn_buf_t b = QN_BUF_INIT;
    qn_spool_checkpoint_encode (&b, 7, 123456);
    uint64_t seg = 0, off = 0;
    char *exact = s_exact (b.data, b.len);
    assert_int_equal (qn_spool_checkpoint_decode (exact, b.len, &seg, &off), 0);
    assert_int_equal (seg, 7);
    assert_int_equal (off, 123456);
    //  Any strict prefix (a torn write) and any changed byte is refused.
    for (size_t cut = 0; cut < b.len; cut++)
        assert_int_equal (qn_spool_checkpoint_decode (exact, cut, &seg, &off), -1);
    for (size_t at = 0; at < b.len; at++) {
        char *bad = s_exact (b.data, b.len);
        bad [at] ^= 0x01;
        assert_int_equal (qn_spool_checkpoint_decode (bad, b.len, &seg, &off), -1);
        free (bad);
    }
    free (exact);
    qn_buf_reset (&b);
    qn_spool_checkpoint_encode (&b, UINT64_MAX, UINT64_MAX);
    assert_int_equal (qn_spool_checkpoint_decode (b.data, b.len, &seg, &off), 0);
    assert_true (seg == UINT64_MAX && off == UINT64_MAX);
    qn_buf_free (&b);
}


// ------------------------------------------------------------------ the actor
//  Fake pg_writer: records the transaction ids of the replays pushed,
//  refuses items of queue "poison" (22P02), fails everything while
//  `down`, and keeps the last DRAINED report.
typedef struct {
    qn_kernel_t *kernel;
    atomic_bool down;
    pthread_mutex_t lock;
    char txns [64][32];
    int count;
    atomic_int drained;         //  Last DRAINED [appends], -1 before any
    atomic_int not_replay;      //  Pushes without the replay flag (must stay 0)
} s_fake_db_t;

static int
s_fake_push (void *self_, const qn_env_t *env)
{
    s_fake_db_t *db = self_;
    msgpack_unpacked msg;
    msgpack_unpacked_init (&msg);
    qn_msg_push_t push;
    assert_int_equal (qn_msg_push_decode (env->body.ptr, env->body.len, &msg, &push), 0);
    if (!push.replay)
        atomic_fetch_add (&db->not_replay, 1);
    bool poison = false;
    for (uint32_t i = 0; i < push.count; i++) {
        const msgpack_object *q = &push.items [i].via.array.ptr [0];
        poison = poison || (q->via.str.size == 6 && !memcmp (q->via.str.ptr, "poison", 6));
    }
    qn_buf_t out = QN_BUF_INIT;
    msgpack_packer pk;
    msgpack_packer_init (&pk, &out, s_write);
    if (atomic_load (&db->down))
        qn_msg_push_refuse (&pk, "08006", "database unavailable");
    else
    if (poison)
        qn_msg_push_refuse (&pk, "22P02", "invalid input");
    else {
        qn_msg_push_answer_begin (&pk, push.count);
        pthread_mutex_lock (&db->lock);
        for (uint32_t i = 0; i < push.count; i++) {
            const msgpack_object *txn = &push.items [i].via.array.ptr [2];
            if (db->count < 64)
                snprintf (db->txns [db->count++], 32, "%.*s", (int) txn->via.str.size, txn->via.str.ptr);
            qn_msg_push_result_t r = { .status = QN_PUSH_QUEUED, .seq = 100 + i, .partition_id = 1 };
            qn_msg_push_result (&pk, &r);
        }
        pthread_mutex_unlock (&db->lock);
    }
    qn_reply (db->kernel, env, QN_MSG_PUSH_ANSWER, out.data, out.len, NULL, 0);
    qn_buf_free (&out);
    msgpack_unpacked_destroy (&msg);
    return 0;
}

static int
s_fake_drained (void *self_, const qn_env_t *env)
{
    s_fake_db_t *db = self_;
    uint64_t appends;
    assert_int_equal (qn_msg_spool_drained_decode (env->body.ptr, env->body.len, &appends), 0);
    atomic_store (&db->drained, (int) appends);
    return 0;
}

static const qn_route_t s_fake_routes [] = {
    { QN_MSG_PUSH, s_fake_push },
    { QN_MSG_SPOOL_DRAINED, s_fake_drained },
    { 0, NULL }
};

typedef struct {
    int replies;
    int ok;
    char sqlstate [6];
    uint64_t stats [2];         //  pending, failed
    int stats_replies;
} s_main_t;

//  The spool answers the pusher itself: every item buffered with its
//  transaction id, or a refusal.
static void
s_on_append_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    s_main_t *m = self_;
    assert_non_null (env);
    assert_int_equal (env->type, QN_MSG_PUSH_ANSWER);
    msgpack_unpacked msg;
    msgpack_unpacked_init (&msg);
    qn_msg_push_answer_t a;
    assert_int_equal (qn_msg_push_answer_decode (env->body.ptr, env->body.len, &msg, &a), 0);
    m->replies++;
    m->ok += a.ok;
    snprintf (m->sqlstate, sizeof m->sqlstate, "%s", a.sqlstate);
    if (a.ok) {
        assert_true (a.count >= 1);
        for (uint32_t i = 0; i < a.count; i++) {
            qn_msg_push_result_t r;
            assert_int_equal (qn_msg_push_answer_at (&a, i, &r), 0);
            assert_int_equal (r.status, QN_PUSH_BUFFERED);
            assert_non_null (r.txn);
        }
    }
    else
        assert_int_equal (a.count, 0);
    msgpack_unpacked_destroy (&msg);
}

static void
s_on_stats_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    s_main_t *m = self_;
    if (!env)
        return;
    assert_int_equal (env->type, QN_MSG_SPOOL_STATS_REPLY);
    qn_msg_spool_stats_t st;
    assert_int_equal (qn_msg_spool_stats_decode (env->body.ptr, env->body.len, &st), 0);
    m->stats [0] = st.pending;
    m->stats [1] = st.failed;
    m->stats_replies++;
}

typedef struct {
    qn_kernel_t *k;
    qn_config_t cfg;
    s_fake_db_t db;
    s_main_t m;
    char dir [64];
} s_rig_t;

//  A kernel with the fakes and a spool on `dir`; the database starts `down`.
static void
s_rig_start (s_rig_t *r, const char *dir, bool down, int64_t fsync_ms)
{
    memset (&r->cfg, 0, sizeof r->cfg);
    r->cfg.file_buffer_dir = (char *) dir;
    r->cfg.spool_fsync_ms = fsync_ms;
    r->cfg.push_max_batch = 10000;
    r->cfg.db_statement_timeout_ms = 2000;
    memset (&r->m, 0, sizeof r->m);
    qn_log_set_level (QN_LOG_ERROR);
    r->k = qn_kernel_new (&r->cfg);
    qn_kernel_main_routes (r->k, NULL, &r->m);
    r->db.kernel = r->k;
    atomic_store (&r->db.down, down);
    atomic_store (&r->db.drained, -1);
    qn_actor_def_t w = { .name = "pg_writer", .routes = s_fake_routes, .self = &r->db };
    assert_non_null (qn_actor_spawn (r->k, &w));
    assert_non_null (qn_spool_new (r->k, &r->cfg));
}

static void
s_rig_stop (s_rig_t *r)
{
    assert_int_equal (qn_kernel_stop_all (r->k, 5000), 0);
    qn_kernel_destroy (&r->k);
}

//  Appends one record of one item and waits for the answer.
static void
s_append (s_rig_t *r, const char *queue, const char *txn)
{
    qn_buf_t b = QN_BUF_INIT;
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, s_write);
    msgpack_pack_array (&pk, 2);
    s_pack_str (&pk, "");
    msgpack_pack_array (&pk, 1);
    msgpack_pack_array (&pk, 7);
    s_pack_str (&pk, queue);
    s_pack_str (&pk, "Default");
    s_pack_str (&pk, txn);
    msgpack_pack_bin (&pk, 2);
    msgpack_pack_bin_body (&pk, "{}", 2);
    msgpack_pack_nil (&pk);
    msgpack_pack_nil (&pk);
    msgpack_pack_false (&pk);
    int before = r->m.replies;
    qn_msg_t msg = { .to = "spool", .type = QN_MSG_SPOOL_APPEND, .body = b.data, .body_len = b.len };
    assert_int_equal (qn_request (r->k, &msg, 5000, s_on_append_reply, NULL), 0);
    qn_buf_free (&b);
    for (int i = 0; i < 500 && r->m.replies == before; i++)
        qn_kernel_poll (r->k, 10);
    assert_int_equal (r->m.replies, before + 1);
}

//  Asks the spool for its counts until they read (pending, failed).
static bool
s_wait_stats (s_rig_t *r, uint64_t pending, uint64_t failed)
{
    for (int i = 0; i < 100; i++) {
        int before = r->m.stats_replies;
        qn_msg_t msg = { .to = "spool", .type = QN_MSG_SPOOL_STATS_ASK, .body = "\x90", .body_len = 1 };
        assert_int_equal (qn_request (r->k, &msg, 1000, s_on_stats_reply, NULL), 0);
        for (int j = 0; j < 100 && r->m.stats_replies == before; j++)
            qn_kernel_poll (r->k, 10);
        if (r->m.stats [0] == pending && r->m.stats [1] == failed)
            return true;
        qn_kernel_poll (r->k, 50);
    }
    return false;
}

static int
s_count_files (const char *dir, const char *prefix)
{
    DIR *d = opendir (dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir (d)))
        n += !strncmp (e->d_name, prefix, strlen (prefix));
    if (d)
        closedir (d);
    return n;
}

static void
s_rm_rf (const char *dir)
{
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal (system (cmd), 0);
}

//  A rig with its own fresh temporary directory (r->dir); not started.
static s_rig_t *
s_rig_new (void)
{
    s_rig_t *r = qn_zalloc (sizeof *r);
    pthread_mutex_init (&r->db.lock, NULL);
    snprintf (r->dir, sizeof r->dir, "/tmp/qn-spool-unit-XXXXXX");
    assert_non_null (mkdtemp (r->dir));
    return r;
}

//  Removes the rig's directory and frees it (stop it first).
static void
s_rig_free (s_rig_t *r)
{
    s_rm_rf (r->dir);
    pthread_mutex_destroy (&r->db.lock);
    free (r);
}

static void
test_actor_replay_in_order_and_refusals (void **state)
{
    (void) state;
    s_rig_t *r = s_rig_new ();
    s_rig_start (r, r->dir, true, 0);
    const char *txns [] = { "a1", "a2", "a3", "p1", "b1", "b2", "b3" };
    for (int i = 0; i < 7; i++) {
        s_append (r, txns [i][0] == 'p' ? "poison" : "q", txns [i]);
        assert_int_equal (r->m.ok, i + 1);
    }
    assert_true (s_wait_stats (r, 7, 0));
    assert_int_equal (s_count_files (r->dir, "segment-"), 1);
    assert_int_equal (r->db.count, 0);
    //  Holding items: no DRAINED report since the empty start (0 appends).
    assert_true (atomic_load (&r->db.drained) <= 0);
    //  The database comes back: a "db" event starts the replay at once.
    atomic_store (&r->db.down, false);
    msgpack_sbuffer up;
    msgpack_sbuffer_init (&up);
    qn_msg_db_health_encode (&up, true);
    qn_publish (r->k, "db", QN_MSG_DB_HEALTH, up.data, up.size);
    msgpack_sbuffer_destroy (&up);
    assert_true (s_wait_stats (r, 0, 1));
    //  Everything replayed (or set aside): DRAINED covers all 7 appends,
    //  and every push the spool made was flagged replay.
    for (int i = 0; i < 300 && atomic_load (&r->db.drained) != 7; i++)
        qn_kernel_poll (r->k, 10);
    assert_int_equal (atomic_load (&r->db.drained), 7);
    assert_int_equal (atomic_load (&r->db.not_replay), 0);
    pthread_mutex_lock (&r->db.lock);
    assert_int_equal (r->db.count, 6);
    const char *expected [] = { "a1", "a2", "a3", "b1", "b2", "b3" };
    for (int i = 0; i < 6; i++)
        assert_string_equal (r->db.txns [i], expected [i]);
    pthread_mutex_unlock (&r->db.lock);
    //  Replayed segments are gone; the refused record is kept aside, whole.
    assert_int_equal (s_count_files (r->dir, "segment-"), 0);
    char path [128];
    snprintf (path, sizeof path, "%s/failed.qspool", r->dir);
    FILE *f = fopen (path, "rb");
    assert_non_null (f);
    char buf [4096];
    size_t n = fread (buf, 1, sizeof buf, f);
    fclose (f);
    qn_spool_scan_t scan;
    qn_spool_scan (buf, n, &scan);
    assert_int_equal (scan.records, 1);
    assert_int_equal (scan.stop, QN_SPOOL_SCAN_END);
    s_rig_stop (r);
    //  A restart keeps counting what was set aside, and has nothing to do.
    s_rig_start (r, r->dir, false, 0);
    assert_true (s_wait_stats (r, 0, 1));
    s_rig_stop (r);
    s_rig_free (r);
}

static void
test_actor_restart_recovers_torn_tail (void **state)
{
    (void) state;
    s_rig_t *r = s_rig_new ();
    s_rig_start (r, r->dir, true, 0);
    s_append (r, "q", "t1");
    s_append (r, "q", "t2");
    s_append (r, "q", "t3");
    assert_int_equal (r->m.ok, 3);
    s_rig_stop (r);
    //  A crash in the middle of a fourth append left half a record.
    char path [128];
    snprintf (path, sizeof path, "%s/segment-0000000000000001.qspool", r->dir);
    FILE *f = fopen (path, "ab");
    assert_non_null (f);
    fwrite ("QSR1\x40\x00\x00\x00\x01\x02", 1, 10, f);
    fclose (f);
    s_rig_start (r, r->dir, false, 0);
    assert_true (s_wait_stats (r, 0, 0));
    pthread_mutex_lock (&r->db.lock);
    assert_int_equal (r->db.count, 3);
    assert_string_equal (r->db.txns [0], "t1");
    assert_string_equal (r->db.txns [2], "t3");
    pthread_mutex_unlock (&r->db.lock);
    s_rig_stop (r);
    s_rig_free (r);
}

static void
test_actor_unwritable_and_group_commit (void **state)
{
    (void) state;
    s_rig_t *r = s_rig_new ();
    //  FILE_BUFFER_DIR names a regular file: every append fails, 58030.
    char file [128];
    snprintf (file, sizeof file, "%s/plain-file", r->dir);
    FILE *f = fopen (file, "w");
    assert_non_null (f);
    fclose (f);
    s_rig_start (r, file, true, 0);
    s_append (r, "q", "x1");
    assert_int_equal (r->m.ok, 0);
    assert_string_equal (r->m.sqlstate, "58030");
    assert_true (s_wait_stats (r, 0, 0));
    s_rig_stop (r);
    //  SPOOL_FSYNC_MS 50: appends sent together share fdatasyncs.
    char dir [128];
    snprintf (dir, sizeof dir, "%s/spool", r->dir);
    s_rig_start (r, dir, true, 50);
    int64_t syncs = qn_counter (r->k, "spool_fsyncs");
    qn_buf_t b = QN_BUF_INIT;
    s_body (&b, "", "q", 2);
    for (int i = 0; i < 10; i++) {
        qn_msg_t msg = { .to = "spool", .type = QN_MSG_SPOOL_APPEND, .body = b.data, .body_len = b.len };
        assert_int_equal (qn_request (r->k, &msg, 5000, s_on_append_reply, NULL), 0);
    }
    qn_buf_free (&b);
    for (int i = 0; i < 500 && r->m.replies < 10; i++)
        qn_kernel_poll (r->k, 10);
    assert_int_equal (r->m.ok, 10);
    syncs = qn_counter (r->k, "spool_fsyncs") - syncs;
    assert_true (syncs >= 1 && syncs < 10);
    assert_true (s_wait_stats (r, 20, 0));
    s_rig_stop (r);
    s_rig_free (r);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_crc32c_vectors),
        cmocka_unit_test (test_record_round_trip),
        cmocka_unit_test (test_record_corrupt_byte),
        cmocka_unit_test (test_scan_torn_tail_every_offset),
        cmocka_unit_test (test_scan_corruption_and_resync),
        cmocka_unit_test (test_body_check),
        cmocka_unit_test (test_segment_names),
        cmocka_unit_test (test_checkpoint_line),
        cmocka_unit_test (test_actor_replay_in_order_and_refusals),
        cmocka_unit_test (test_actor_restart_recovers_torn_tail),
        cmocka_unit_test (test_actor_unwritable_and_group_commit),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
