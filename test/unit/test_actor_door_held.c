/*  test/unit/test_actor_door_held.c - answers held, never dropped, while
    the door is full (actors/door/held.c, used by every codec)
    On the fake kernel: the kafka codec answers ApiVersions at once, without
    the database. With kafka_acceptor's inbox full (qn_fake_full) nothing
    is sent and nothing is lost; once it drains every answer goes out, in
    order; an answer made while earlier ones are held waits behind them
    even if the door could take it. The HTTP codec does the same with
    GET /health. (Before issue 25 the kafka codec dropped such answers.)
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "actors/actors.h"
#include "test/support/fake_kernel.h"
#include "wire/kafka_prim.h"
#include "wire/msg_http.h"
#include "wire/msg_kafka.h"

static const char *
s_env (const char *name)
{
    (void) name;
    return NULL;
}

//  A door that takes nothing: only its inbox matters (full or not).
static const qn_route_t s_none [] = { { 0, NULL } };

static void
s_free_self (void **self_p)
{
    free (*self_p);
    *self_p = NULL;
}

//  ApiVersions v0 with correlation id corr, as conn 3, sequence seq.
static void
s_api_versions (qn_fake_t *fake, uint32_t seq, int32_t corr)
{
    qn_buf_t f = QN_BUF_INIT;
    qn_kw_i16 (&f, 18);
    qn_kw_i16 (&f, 0);
    qn_kw_i32 (&f, corr);
    qn_kw_i16 (&f, 1);
    qn_buf_append (&f, "t", 1);
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_kafka_request_encode (&b, 3, seq);
    assert_int_equal (qn_fake_deliver (fake, "kafka", QN_MSG_KAFKA_REQUEST, b.data, b.size, f.data, f.len), 0);
    msgpack_sbuffer_destroy (&b);
    qn_buf_free (&f);
}

//  The next answer to kafka_acceptor: its sequence and correlation id.
static void
s_next_answer (qn_fake_t *fake, uint32_t seq, int32_t corr)
{
    int i = qn_fake_next (fake, QN_MSG_KAFKA_RESPONSE);
    assert_true (i >= 0);
    const qn_fake_msg_t *m = qn_fake_msg (fake, (size_t) i);
    assert_string_equal (m->to, "kafka_acceptor");
    qn_msg_kafka_t k;
    assert_int_equal (qn_msg_kafka_response_decode (m->body.data, m->body.len, &k), 0);
    assert_int_equal (k.conn_id, 3);
    assert_int_equal (k.seq, seq);
    assert_int_equal (m->frame_count, 1);
    assert_true (m->frames [0].len >= 4);
    const uint8_t *u = (const uint8_t *) m->frames [0].data;
    assert_int_equal ((int32_t) ((uint32_t) u [0] << 24 | (uint32_t) u [1] << 16
                                 | (uint32_t) u [2] << 8 | u [3]), corr);
}

static void
test_kafka_answers_held_in_order (void **state)
{
    (void) state;
    qn_fake_world_t *w = qn_fake_world_start (s_env, qn_kafka_codec_new);
    assert_non_null (w);
    qn_kernel_t *k = qn_fake_kernel (w->fake);
    qn_actor_def_t def = { .name = "kafka_acceptor", .routes = s_none, .self = qn_zalloc (1),
                           .destroy = s_free_self };
    assert_non_null (qn_actor_spawn (k, &def));
    qn_fake_clear (w->fake);
    qn_fake_full (w->fake, "kafka_acceptor", true);
    for (uint32_t i = 0; i < 3; i++)
        s_api_versions (w->fake, i, 100 + (int32_t) i);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_KAFKA_RESPONSE), -1);
    qn_fake_full (w->fake, "kafka_acceptor", false);
    for (uint32_t i = 0; i < 3; i++)
        s_next_answer (w->fake, i, 100 + (int32_t) i);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_KAFKA_RESPONSE), -1);
    //  Full again: the fourth waits; a fifth made after the door could
    //  take it again still goes out behind the fourth.
    qn_fake_full (w->fake, "kafka_acceptor", true);
    s_api_versions (w->fake, 3, 103);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_KAFKA_RESPONSE), -1);
    qn_fake_full (w->fake, "kafka_acceptor", false);
    s_api_versions (w->fake, 4, 104);
    s_next_answer (w->fake, 3, 103);
    s_next_answer (w->fake, 4, 104);
    qn_fake_world_destroy (&w);
}

//  GET /health as conn 5, sequence seq.
static void
s_health (qn_fake_t *fake, uint32_t seq)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_http_request_t m = {
        .conn_id = 5, .seq = seq, .method = "GET", .method_len = 3,
        .target = "/health", .target_len = 7, .keep_alive = true
    };
    qn_msg_http_request_encode (&pk, &m);
    assert_int_equal (qn_fake_deliver (fake, "codec_http", QN_MSG_HTTP_REQUEST, b.data, b.size, "", 0), 0);
    msgpack_sbuffer_destroy (&b);
}

static void
test_http_answers_held_in_order (void **state)
{
    (void) state;
    qn_fake_world_t *w = qn_fake_world_start (s_env, qn_codec_http_new);
    assert_non_null (w);
    qn_kernel_t *k = qn_fake_kernel (w->fake);
    qn_actor_def_t def = { .name = "acceptor", .routes = s_none, .self = qn_zalloc (1),
                           .destroy = s_free_self };
    assert_non_null (qn_actor_spawn (k, &def));
    qn_fake_clear (w->fake);
    qn_fake_full (w->fake, "acceptor", true);
    for (uint32_t i = 0; i < 4; i++)
        s_health (w->fake, i);
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_HTTP_RESPONSE), -1);
    qn_fake_full (w->fake, "acceptor", false);
    for (uint32_t i = 0; i < 4; i++) {
        int at = qn_fake_next (w->fake, QN_MSG_HTTP_RESPONSE);
        assert_true (at >= 0);
        const qn_fake_msg_t *m = qn_fake_msg (w->fake, (size_t) at);
        assert_string_equal (m->to, "acceptor");
        qn_msg_http_response_t r;
        assert_int_equal (qn_msg_http_response_decode (m->body.data, m->body.len, &r), 0);
        assert_int_equal (r.conn_id, 5);
        assert_int_equal (r.seq, i);
        assert_int_equal (m->frame_count, 1);
        assert_memory_equal (m->frames [0].data, "HTTP/1.1 200", 12);
    }
    assert_int_equal (qn_fake_next (w->fake, QN_MSG_HTTP_RESPONSE), -1);
    qn_fake_world_destroy (&w);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_kafka_answers_held_in_order),
        cmocka_unit_test (test_http_answers_held_in_order),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
