/*  test/unit/test_ack_merge.c - pg_writer's merged acks (actors/pg/
    acks.c): queued acks of one tenant become one queen.ack job whose
    array parameters are the requests' arrays back to back (each padded
    to its item count), requests keep their order and their place
    (first_ord), another tenant, a request marked solo or the item cap
    ends a merge; the binary array concatenation; and the fate of a
    failed merged batch (shared with pushes).
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "actors/pg/writer_int.h"
#include "wire/pg_codec.h"

#include <stdlib.h>
#include <string.h>

//  An ack job of n items for tenant: groups "g", pids base+i, txn ids
//  "t<base+i>", seqs NULL (the whole array), statuses "completed" for
//  the first `statuses` items only (a shorter array), leases and errors
//  NULL elements.
static qn_pgw_job_t *
s_ack (const char *tenant, uint32_t n, int64_t base, uint32_t statuses)
{
    const qn_sql_stmt_t *stmt = qn_sql_stmt (QN_SQL_ACK);
    assert_non_null (stmt);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 8);
    msgpack_pack_str_with_body (&pk, tenant, strlen (tenant));
    msgpack_pack_array (&pk, n);                        //  groups
    for (uint32_t i = 0; i < n; i++)
        msgpack_pack_str_with_body (&pk, "g", 1);
    msgpack_pack_array (&pk, n);                        //  pids
    for (uint32_t i = 0; i < n; i++)
        msgpack_pack_int64 (&pk, base + i);
    msgpack_pack_array (&pk, n);                        //  txn ids
    for (uint32_t i = 0; i < n; i++) {
        char t [32];
        int len = snprintf (t, sizeof t, "t%lld", (long long) (base + i));
        msgpack_pack_str_with_body (&pk, t, (size_t) len);
    }
    msgpack_pack_nil (&pk);                             //  seqs
    msgpack_pack_array (&pk, statuses);                 //  statuses
    for (uint32_t i = 0; i < statuses; i++)
        msgpack_pack_str_with_body (&pk, "completed", 9);
    msgpack_pack_array (&pk, n);                        //  leases
    for (uint32_t i = 0; i < n; i++)
        msgpack_pack_nil (&pk);
    msgpack_pack_array (&pk, n);                        //  errors
    for (uint32_t i = 0; i < n; i++)
        msgpack_pack_nil (&pk);
    msgpack_unpacked u;
    msgpack_unpacked_init (&u);
    assert_int_equal (msgpack_unpack_next (&u, sb.data, sb.size, NULL), MSGPACK_UNPACK_SUCCESS);
    qn_pgw_job_t *j = calloc (1, sizeof *j);
    j->kind = J_EXEC;
    j->stmt_id = QN_SQL_ACK;
    j->nparams = 8;
    char err [160];
    for (uint32_t p = 0; p < 8; p++) {
        size_t at = j->params.len;
        int rc = qn_pg_encode_param (stmt->types [p], &u.data.via.array.ptr [p], &j->params, err, sizeof err);
        assert_true (rc >= 0);
        j->nulls [p] = rc == 1;
        j->offsets [p] = at;
        j->lengths [p] = (int) (j->params.len - at);
        j->formats [p] = qn_pg_param_format (stmt->types [p]);
    }
    msgpack_unpacked_destroy (&u);
    msgpack_sbuffer_destroy (&sb);
    return j;
}

static uint32_t
s_be32 (const char *p)
{
    return (uint32_t) (uint8_t) p [0] << 24 | (uint32_t) (uint8_t) p [1] << 16
         | (uint32_t) (uint8_t) p [2] << 8 | (uint8_t) p [3];
}

//  Element i of binary array parameter p of j: its length (-1 NULL) and bytes.
static int
s_elem (const qn_pgw_job_t *j, int p, uint32_t i, const char **bytes)
{
    const char *a = j->params.data + j->offsets [p];
    size_t at = s_be32 (a) ? 20 : 12;
    for (uint32_t k = 0;; k++) {
        assert_true (at + 4 <= (size_t) j->lengths [p]);
        int len = (int) (int32_t) s_be32 (a + at);
        at += 4;
        if (k == i) {
            *bytes = a + at;
            return len;
        }
        at += len > 0 ? (size_t) len : 0;
    }
}

static void
test_concat_pads_and_nulls (void **state)
{
    (void) state;
    qn_pgw_job_t *a = s_ack ("t", 2, 10, 1);      //  statuses: 1 of 2
    qn_pgw_job_t *b = s_ack ("t", 3, 20, 3);
    //  param 5 (statuses): a's 1 element padded to 2, then NULL input (3)
    const char *ptrs [3] = { a->params.data + a->offsets [5], NULL, b->params.data + b->offsets [5] };
    size_t lens [3] = { (size_t) a->lengths [5], 0, (size_t) b->lengths [5] };
    uint32_t pads [3] = { 2, 3, 3 };
    assert_int_equal (qn_pgw_array_len (ptrs [0], lens [0]), 1);
    assert_int_equal (qn_pgw_array_len (ptrs [2], lens [2]), 3);
    qn_buf_t out = QN_BUF_INIT;
    assert_int_equal (qn_pgw_array_concat (&out, ptrs, lens, pads, 3), 0);
    assert_int_equal (qn_pgw_array_len (out.data, out.len), 8);
    assert_int_equal (s_be32 (out.data + 4), 1);           //  has_null
    assert_int_equal (s_be32 (out.data + 8), QN_OID_TEXT);
    qn_pgw_job_t view = { .nparams = 1 };
    view.params = out;
    view.lengths [0] = (int) out.len;
    static const int want [8] = { 9, -1, -1, -1, -1, 9, 9, 9 };
    for (uint32_t i = 0; i < 8; i++) {
        const char *bytes;
        assert_int_equal (s_elem (&view, 0, i, &bytes), want [i]);
        if (want [i] > 0)
            assert_memory_equal (bytes, "completed", 9);
    }
    //  An input longer than its pad, or not an array, does not concatenate
    pads [2] = 2;
    assert_int_equal (qn_pgw_array_concat (&out, ptrs, lens, pads, 3), -1);
    assert_int_equal (qn_pgw_array_len ("xx", 2), -1);
    qn_buf_free (&out);
    qn_pgw_job_free (a);
    qn_pgw_job_free (b);
}

static void
test_merge_same_tenant_in_order (void **state)
{
    (void) state;
    qn_config_t config = { .push_max_batch = 10000, .ack_lanes = 1 };
    qn_pgw_t self = { .config = &config };
    qn_pgw_ack_enqueue (&self, s_ack ("t", 2, 100, 2));
    qn_pgw_ack_enqueue (&self, s_ack ("t", 3, 200, 1));
    qn_pgw_ack_enqueue (&self, s_ack ("t", 1, 300, 1));
    qn_pgw_ack_enqueue (&self, s_ack ("u", 4, 400, 4));   //  another tenant: next batch
    qn_pgw_job_t *m = qn_pgw_build_ack_batch (&self);
    assert_non_null (m->parts);
    assert_int_equal (m->item_count, 6);
    assert_int_equal (m->nparams, 8);
    assert_int_equal (self.ack_queued, 1);
    uint32_t firsts [3] = { 0, 2, 5 }, counts [3] = { 2, 3, 1 }, n = 0;
    for (const qn_pgw_job_t *r = m->parts; r; r = r->next, n++) {
        assert_int_equal (r->first_ord, firsts [n]);
        assert_int_equal (r->count, counts [n]);
    }
    assert_int_equal (n, 3);
    //  Tenant, then every array 6 long; the pids in request order
    assert_int_equal (m->lengths [0], 1);
    assert_memory_equal (m->params.data + m->offsets [0], "t", 1);
    assert_true (m->nulls [4]);                          //  every seqs NULL: stays NULL
    for (int p = 1; p < 8; p++)
        if (p != 4)
            assert_int_equal (qn_pgw_array_len (m->params.data + m->offsets [p], (size_t) m->lengths [p]), 6);
    static const int64_t pids [6] = { 100, 101, 200, 201, 202, 300 };
    for (uint32_t i = 0; i < 6; i++) {
        const char *bytes;
        assert_int_equal (s_elem (m, 2, i, &bytes), 8);
        int64_t v = (int64_t) ((uint64_t) s_be32 (bytes) << 32 | s_be32 (bytes + 4));
        assert_int_equal (v, pids [i]);
    }
    //  Statuses: request 2 gave 1 of 3: padded with NULLs in its place
    const char *bytes;
    assert_int_equal (s_elem (m, 5, 2, &bytes), 9);
    assert_int_equal (s_elem (m, 5, 3, &bytes), -1);
    assert_int_equal (s_elem (m, 5, 4, &bytes), -1);
    assert_int_equal (s_elem (m, 5, 5, &bytes), 9);
    qn_pgw_job_free (m);
    //  The other tenant's lone request comes back as it was
    qn_pgw_job_t *u = qn_pgw_build_ack_batch (&self);
    assert_null (u->parts);
    assert_memory_equal (u->params.data + u->offsets [0], "u", 1);
    assert_null (self.ack_head);
    assert_int_equal (self.ack_queued, 0);
    qn_pgw_job_free (u);
}

static void
test_solo_and_cap_end_a_merge (void **state)
{
    (void) state;
    qn_config_t config = { .push_max_batch = 5, .ack_lanes = 1 };
    qn_pgw_t self = { .config = &config };
    qn_pgw_job_t *solo = s_ack ("t", 1, 1, 1);
    solo->solo = true;
    qn_pgw_ack_enqueue (&self, solo);
    qn_pgw_ack_enqueue (&self, s_ack ("t", 3, 10, 3));
    qn_pgw_ack_enqueue (&self, s_ack ("t", 2, 20, 2));
    qn_pgw_ack_enqueue (&self, s_ack ("t", 1, 30, 1));    //  3 + 2 + 1 > 5
    qn_pgw_ack_enqueue (&self, s_ack ("t", 7, 40, 7));    //  over the cap alone: whole
    qn_pgw_job_t *j = qn_pgw_build_ack_batch (&self);
    assert_ptr_equal (j, solo);                          //  solo runs alone
    assert_null (j->parts);
    qn_pgw_job_free (j);
    j = qn_pgw_build_ack_batch (&self);
    assert_non_null (j->parts);
    assert_int_equal (j->item_count, 5);
    qn_pgw_job_free (j);
    j = qn_pgw_build_ack_batch (&self);                  //  1, then 7 would exceed the cap
    assert_null (j->parts);
    assert_int_equal (qn_pgw_array_len (j->params.data + j->offsets [2], (size_t) j->lengths [2]), 1);
    qn_pgw_job_free (j);
    j = qn_pgw_build_ack_batch (&self);
    assert_null (j->parts);
    assert_int_equal (qn_pgw_array_len (j->params.data + j->offsets [2], (size_t) j->lengths [2]), 7);
    qn_pgw_job_free (j);
    assert_null (self.ack_head);
    assert_null (self.ack_tail);
}

static void
test_merge_fate (void **state)
{
    (void) state;
    //  Systemic: everyone gets the error
    assert_int_equal (qn_pgw_merge_fate ("08006", 3), QN_PGW_MERGE_FAIL);
    assert_int_equal (qn_pgw_merge_fate ("57014", 3), QN_PGW_MERGE_FAIL);
    assert_int_equal (qn_pgw_merge_fate ("53300", 1), QN_PGW_MERGE_FAIL);
    //  One request's data failed a merge: each reruns alone
    assert_int_equal (qn_pgw_merge_fate ("22P02", 2), QN_PGW_MERGE_RERUN);
    assert_int_equal (qn_pgw_merge_fate ("P0001", 4), QN_PGW_MERGE_RERUN);
    //  ... but alone, the error is its own
    assert_int_equal (qn_pgw_merge_fate ("22P02", 1), QN_PGW_MERGE_FAIL);
    //  Deadlocks and serialisation failures rerun even alone
    assert_int_equal (qn_pgw_merge_fate ("40P01", 1), QN_PGW_MERGE_RERUN);
    assert_int_equal (qn_pgw_merge_fate ("40001", 1), QN_PGW_MERGE_RERUN);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_concat_pads_and_nulls),
        cmocka_unit_test (test_merge_same_tenant_in_order),
        cmocka_unit_test (test_solo_and_cap_end_a_merge),
        cmocka_unit_test (test_merge_fate),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
