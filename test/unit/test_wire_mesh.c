/*  test/unit/test_wire_mesh.c - the mesh frame (wire/mesh.c): round trips
    of HELLO and HINTS, every truncation and bad field refused, and hint
    coalescing (partitions merged, collapsed to the whole queue, the latest
    maintenance flags kept, frames split by count).
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/mesh.h"

#define S(lit) ((qn_mesh_str_t) { lit, sizeof lit - 1 })

static qn_mesh_hint_t s_hints [QN_MESH_MAX_HINTS];
static qn_mesh_str_t s_parts [QN_MESH_MAX_HINTS * QN_MESH_MAX_PARTS];

static int
s_decode (const qn_buf_t *b, qn_mesh_frame_t *f)
{
    return qn_mesh_decode (b->data, b->len, f, s_hints, QN_MESH_MAX_HINTS, s_parts,
                           QN_MESH_MAX_HINTS * QN_MESH_MAX_PARTS);
}

static bool
s_is (qn_mesh_str_t s, const char *lit)
{
    return s.len == strlen (lit) && !memcmp (s.ptr, lit, s.len);
}

static void
test_hello (void **state)
{
    (void) state;
    qn_buf_t b;
    qn_buf_init (&b);
    qn_mesh_encode_hello (&b, "broker-a", 8, 0x0102030405060708ULL, 42);
    qn_mesh_frame_t f;
    assert_int_equal (s_decode (&b, &f), 0);
    assert_int_equal (f.kind, QN_MESH_HELLO);
    assert_true (s_is (f.sender, "broker-a"));
    assert_true (f.epoch == 0x0102030405060708ULL);
    assert_int_equal (f.seq, 42);
    for (size_t cut = 0; cut < b.len; cut++)
        assert_int_equal (qn_mesh_decode (b.data, cut, &f, s_hints, 4, s_parts, 4), -1);
    //  Trailing bytes, a wrong magic, version or kind.
    qn_buf_putc (&b, 0);
    assert_int_equal (s_decode (&b, &f), -1);
    b.len--;
    b.data [0] = 'X';
    assert_int_equal (s_decode (&b, &f), -1);
    b.data [0] = 'Q';
    b.data [2] = 2;
    assert_int_equal (s_decode (&b, &f), -1);
    b.data [2] = 1;
    b.data [3] = 9;
    assert_int_equal (s_decode (&b, &f), -1);
    qn_buf_free (&b);
}

static void
test_eph (void **state)
{
    (void) state;
    qn_buf_t b;
    qn_buf_init (&b);
    qn_mesh_encode_eph (&b, "a:1", 3, 9, "\x97\x01", 2);
    qn_mesh_frame_t f;
    assert_int_equal (s_decode (&b, &f), 0);
    assert_int_equal (f.kind, QN_MESH_EPH);
    assert_int_equal (f.payload.len, 2);
    assert_memory_equal (f.payload.ptr, "\x97\x01", 2);
    for (size_t cut = 0; cut < b.len; cut++)
        assert_int_equal (qn_mesh_decode (b.data, cut, &f, s_hints, 4, s_parts, 4), -1);
    qn_buf_putc (&b, 0);
    assert_int_equal (s_decode (&b, &f), -1);
    qn_buf_free (&b);
}

static void
test_hints_round_trip (void **state)
{
    (void) state;
    qn_mesh_str_t parts [] = { S ("p1"), S ("p-2") };
    qn_mesh_hint_t in [] = {
        { .type = QN_MESH_H_COMMITTED, .tenant = S (""), .queue = S ("orders"),
          .part_first = 0, .part_count = 2 },
        { .type = QN_MESH_H_COMMITTED, .tenant = S ("acme"), .queue = S ("all") },
        { .type = QN_MESH_H_QCONF, .tenant = S ("acme"), .queue = S ("secret") },
        { .type = QN_MESH_H_MAINT, .push = true, .pop = false },
        { .type = QN_MESH_H_GROUP, .tenant = S (""), .queue = S ("q"), .group = S ("g1"),
          .what = QN_MESH_GROUP_SOUGHT },
        { .type = QN_MESH_H_STALE },
    };
    qn_buf_t b;
    qn_buf_init (&b);
    qn_mesh_encode_hints (&b, "b", 1, 7, in, 6, parts);
    qn_mesh_frame_t f;
    assert_int_equal (s_decode (&b, &f), 0);
    assert_int_equal (f.kind, QN_MESH_HINTS);
    assert_int_equal (f.epoch, 7);
    assert_int_equal (f.hint_count, 6);
    assert_int_equal (s_hints [0].type, QN_MESH_H_COMMITTED);
    assert_true (s_is (s_hints [0].tenant, ""));
    assert_true (s_is (s_hints [0].queue, "orders"));
    assert_int_equal (s_hints [0].part_count, 2);
    assert_true (s_is (s_parts [s_hints [0].part_first], "p1"));
    assert_true (s_is (s_parts [s_hints [0].part_first + 1], "p-2"));
    assert_int_equal (s_hints [1].part_count, 0);
    assert_true (s_is (s_hints [1].tenant, "acme"));
    assert_true (s_is (s_hints [2].queue, "secret"));
    assert_int_equal (s_hints [2].type, QN_MESH_H_QCONF);
    assert_true (s_hints [3].push);
    assert_false (s_hints [3].pop);
    assert_true (s_is (s_hints [4].group, "g1"));
    assert_int_equal (s_hints [4].what, QN_MESH_GROUP_SOUGHT);
    assert_int_equal (s_hints [5].type, QN_MESH_H_STALE);
    for (size_t cut = 0; cut < b.len; cut++)
        assert_int_equal (qn_mesh_decode (b.data, cut, &f, s_hints, QN_MESH_MAX_HINTS, s_parts, 64), -1);
    //  Not enough room for the hints or the partitions: refused, not overrun.
    assert_int_equal (qn_mesh_decode (b.data, b.len, &f, s_hints, 5, s_parts, 64), -1);
    assert_int_equal (qn_mesh_decode (b.data, b.len, &f, s_hints, 6, s_parts, 1), -1);
    qn_buf_free (&b);
}

static void
test_bad_fields (void **state)
{
    (void) state;
    qn_mesh_hint_t h = { .type = QN_MESH_H_MAINT, .push = true };
    qn_buf_t b;
    qn_buf_init (&b);
    qn_mesh_encode_hints (&b, "", 0, 0, &h, 1, NULL);
    qn_mesh_frame_t f;
    assert_int_equal (s_decode (&b, &f), 0);
    b.data [b.len - 2] = 2;                 //  A flag that is not 0 or 1
    assert_int_equal (s_decode (&b, &f), -1);
    b.data [b.len - 2] = 1;
    b.data [b.len - 3] = 99;                //  An unknown hint type
    assert_int_equal (s_decode (&b, &f), -1);
    //  A name longer than the limit.
    qn_buf_reset (&b);
    qn_buf_append (&b, "QM\x01\x01\x04\x01", 6);
    assert_int_equal (s_decode (&b, &f), -1);
    qn_buf_free (&b);
}

typedef struct {
    int frames;
    qn_mesh_frame_t last;
    int hints;
    bool sender_me;
} s_sink_t;

static void
s_on_frame (void *arg, const qn_buf_t *frame)
{
    s_sink_t *sink = arg;
    sink->frames++;
    assert_true (frame->len <= QN_MESH_MAX_FRAME);
    assert_int_equal (s_decode (frame, &sink->last), 0);
    sink->hints += sink->last.hint_count;
    sink->sender_me = s_is (sink->last.sender, "me");   //  Points into the frame: read it now
}

static void
test_coalesce (void **state)
{
    (void) state;
    qn_mesh_coalesce_t *c = qn_mesh_coalesce_new ();
    qn_mesh_hint_t com = { .type = QN_MESH_H_COMMITTED, .tenant = S ("t"), .queue = S ("q") };
    qn_mesh_coalesce_add (c, &com, "p1", 2);
    qn_mesh_coalesce_add (c, &com, "p2", 2);
    qn_mesh_coalesce_add (c, &com, "p1", 2);
    qn_mesh_hint_t other = { .type = QN_MESH_H_COMMITTED, .tenant = S (""), .queue = S ("q") };
    qn_mesh_coalesce_add (c, &other, NULL, 0);
    qn_mesh_coalesce_add (c, &other, "x", 1);       //  Already the whole queue
    qn_mesh_hint_t m1 = { .type = QN_MESH_H_MAINT, .push = true };
    qn_mesh_hint_t m2 = { .type = QN_MESH_H_MAINT, .pop = true };
    qn_mesh_coalesce_add (c, &m1, NULL, 0);
    qn_mesh_coalesce_add (c, &m2, NULL, 0);
    qn_mesh_hint_t conf = { .type = QN_MESH_H_QCONF, .tenant = S ("t"), .queue = S ("q") };
    qn_mesh_coalesce_add (c, &conf, NULL, 0);
    qn_mesh_coalesce_add (c, &conf, NULL, 0);
    assert_int_equal (qn_mesh_coalesce_count (c), 4);
    assert_int_equal (qn_mesh_coalesce_added (c), 9);
    assert_int_equal (qn_mesh_coalesce_merged (c), 5);
    s_sink_t sink = { 0 };
    assert_int_equal (qn_mesh_coalesce_flush (c, "me", 2, 5, s_on_frame, &sink), 1);
    assert_int_equal (sink.hints, 4);
    assert_true (sink.sender_me);
    assert_int_equal (s_hints [0].part_count, 2);
    assert_int_equal (s_parts [s_hints [0].part_first + 1].len, 2);
    assert_int_equal (s_hints [1].part_count, 0);
    assert_true (s_is (s_hints [1].tenant, ""));
    assert_int_equal (s_hints [2].type, QN_MESH_H_MAINT);
    assert_false (s_hints [2].push);            //  The latest flags win
    assert_true (s_hints [2].pop);
    assert_int_equal (s_hints [3].type, QN_MESH_H_QCONF);
    assert_int_equal (qn_mesh_coalesce_count (c), 0);
    assert_int_equal (qn_mesh_coalesce_flush (c, "me", 2, 5, s_on_frame, &sink), 0);

    //  More partitions than a hint names: the whole queue.
    char name [16];
    for (int i = 0; i < QN_MESH_MAX_PARTS + 1; i++) {
        snprintf (name, sizeof name, "p%d", i);
        qn_mesh_coalesce_add (c, &com, name, strlen (name));
    }
    sink = (s_sink_t) { 0 };
    assert_int_equal (qn_mesh_coalesce_flush (c, "me", 2, 5, s_on_frame, &sink), 1);
    assert_int_equal (sink.hints, 1);
    assert_int_equal (s_hints [0].part_count, 0);

    //  Many queues: split into frames of at most QN_MESH_MAX_HINTS hints
    //  and QN_MESH_MAX_FRAME bytes (checked by the sink).
    char q [16];
    for (int i = 0; i < QN_MESH_MAX_HINTS * 2 + 3; i++) {
        snprintf (q, sizeof q, "q%d", i);
        qn_mesh_hint_t h = { .type = QN_MESH_H_COMMITTED, .tenant = S (""),
                             .queue = { q, strlen (q) } };
        qn_mesh_coalesce_add (c, &h, NULL, 0);
    }
    sink = (s_sink_t) { 0 };
    assert_true (qn_mesh_coalesce_flush (c, "me", 2, 5, s_on_frame, &sink) >= 3);
    assert_int_equal (sink.hints, QN_MESH_MAX_HINTS * 2 + 3);
    qn_mesh_coalesce_destroy (&c);
    assert_null (c);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_hello),
        cmocka_unit_test (test_eph),
        cmocka_unit_test (test_hints_round_trip),
        cmocka_unit_test (test_bad_fields),
        cmocka_unit_test (test_coalesce),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
