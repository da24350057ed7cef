/*  test/unit/test_wire_mpack.c - the bounded msgpack pre-check, and the
    fuzz findings that led to it (test/fuzz/regressions/)
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/envelope.h"
#include "kernel/errors.h"
#include "wire/mpack_guard.h"
#include "wire/spool_codec.h"

static int
s_write (void *data, const char *buf, size_t len)
{
    qn_buf_append (data, buf, len);
    return 0;
}

static void
test_valid_objects (void **state)
{
    (void) state;
    qn_buf_t b = QN_BUF_INIT;
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, s_write);
    msgpack_pack_array (&pk, 4);
    msgpack_pack_str (&pk, 3);
    msgpack_pack_str_body (&pk, "abc", 3);
    msgpack_pack_map (&pk, 1);
    msgpack_pack_int64 (&pk, -5000000000LL);
    msgpack_pack_double (&pk, 1.5);
    msgpack_pack_bin (&pk, 300);
    char bin [300] = { 0 };
    msgpack_pack_bin_body (&pk, bin, sizeof bin);
    msgpack_pack_array (&pk, 20);
    for (int i = 0; i < 20; i++)
        i % 2 ? msgpack_pack_nil (&pk) : msgpack_pack_uint64 (&pk, UINT64_MAX);
    assert_int_equal (qn_msgpack_check (b.data, b.len), (int64_t) b.len);
    //  Every strict prefix is incomplete, hence refused.
    for (size_t cut = 0; cut < b.len; cut++)
        assert_int_equal (qn_msgpack_check (b.data, cut), -1);
    //  Trailing bytes are not part of the object: its size is reported.
    qn_buf_putc (&b, 0x01);
    assert_int_equal (qn_msgpack_check (b.data, b.len), (int64_t) b.len - 1);
    qn_buf_free (&b);
}

static void
test_hostile_headers (void **state)
{
    (void) state;
    //  Containers and strings that claim more than the buffer holds.
    const struct { const char *bytes; size_t len; } bad [] = {
        { "\xdd\xff\xff\xff\xff", 5 },              //  array32 of 4G elements
        { "\xdf\x7f\xff\xff\xff\x01\x02", 7 },      //  map32
        { "\xdc\x00\x03\x01\x02", 5 },              //  array16 of 3, 2 present
        { "\xdb\xff\xff\xff\xff" "abc", 8 },        //  str32
        { "\xc6\x00\x00\x10\x00" "x", 6 },          //  bin32
        { "\xc1", 1 },                              //  never used
        { "\x92\x01", 2 },
        { "", 0 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        assert_int_equal (qn_msgpack_check (bad [i].bytes, bad [i].len), -1);
}

static char *
s_read (const char *path, size_t *len)
{
    FILE *f = fopen (path, "rb");
    assert_non_null (f);
    char *data = malloc (1 << 16);
    *len = fread (data, 1, 1 << 16, f);
    fclose (f);
    return data;
}

//  Fuzzing found that a header claiming a huge array made msgpack-c try to
//  allocate 32 GiB (envelope headers, spool records read back from disk).
static void
test_fuzz_regressions (void **state)
{
    (void) state;
    size_t len;
    char *env = s_read ("test/fuzz/regressions/envelope-huge-array", &len);
    qn_env_t out;
    assert_int_equal (qn_env_decode_header (env, len, &out), QN_EPROTO);
    free (env);
    char *spool = s_read ("test/fuzz/regressions/spool-huge-array", &len);
    assert_int_equal (qn_spool_body_check (spool, len), -1);
    qn_spool_scan_t scan;
    qn_spool_scan (spool, len, &scan);
    assert_true (scan.valid_len <= len);
    free (spool);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_valid_objects),
        cmocka_unit_test (test_hostile_headers),
        cmocka_unit_test (test_fuzz_regressions),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
