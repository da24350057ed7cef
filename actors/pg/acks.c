/*  actors/pg/acks.c - acks merged across requests in pg_writer
    Acks (QN_SQL_ACK, the HTTP ack routes) run on at most ACK_LANES
    connections at once; acks that arrive while every ack lane is busy
    wait in their own queue and the next lane takes them together:
    consecutive requests of one tenant become one queen.ack call (their
    item arrays concatenated; queen.ack numbers items 1..n over the whole
    call and answers one row per item), so four consumers acking 100
    messages each cost one transaction and one commit, not four. Light
    load never waits (a free lane takes an ack at once); heavy load
    merges. Each request still gets exactly its own answer: the rows of
    its items, renumbered from 1. A merged call that fails is answered
    the way a merged push is (qn_pgw_merge_fate): a systemic failure
    answers every request with it, any other reruns each request alone,
    so one request's bad data never fails another's.
    Part of the pg_writer actor (writer_int.h).
    Receives  ack jobs from s_on_exec (writer.c)
    Sends     QN_MSG_PG_RESULT to each ack's requester; "committed" for
              the queues of successful items (qn_pgw_exec_committed)
    Owns      the queued acks; a merged job owns its requests (parts)
    Failure   as above; a request rerun more than QN_PGW_MERGE_RETRIES
              times is answered with its last error
*/
#include "actors/pg/writer_int.h"
#include "wire/msg_pg.h"

#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ arrays
static uint32_t
s_be32 (const char *p)
{
    return (uint32_t) (uint8_t) p [0] << 24 | (uint32_t) (uint8_t) p [1] << 16
         | (uint32_t) (uint8_t) p [2] << 8 | (uint8_t) p [3];
}

static void
s_put32 (qn_buf_t *out, uint32_t v)
{
    char b [4] = { (char) (v >> 24), (char) (v >> 16), (char) (v >> 8), (char) v };
    qn_buf_append (out, b, 4);
}

//  Header of a binary array: ndim, has_null, element type, then (size,
//  lower bound) for each dimension. Element bytes start at *body.
static int64_t
s_array (const char *p, size_t len, uint32_t *elem, size_t *body)
{
    if (!p || len < 12)
        return -1;
    uint32_t ndim = s_be32 (p);
    *elem = s_be32 (p + 8);
    if (ndim == 0) {
        *body = 12;
        return 0;
    }
    if (ndim != 1 || len < 20)
        return -1;
    *body = 20;
    return s_be32 (p + 12);
}

int64_t
qn_pgw_array_len (const char *p, size_t len)
{
    uint32_t elem;
    size_t body;
    return s_array (p, len, &elem, &body);
}

int
qn_pgw_array_concat (qn_buf_t *out, const char *const *ptrs, const size_t *lens,
                     const uint32_t *pads, uint32_t n)
{
    uint32_t elem = 0, total = 0;
    bool has_null = false;
    for (uint32_t i = 0; i < n; i++) {
        if (!ptrs [i]) {
            total += pads [i];
            has_null |= pads [i] > 0;
            continue;
        }
        uint32_t e;
        size_t body;
        int64_t k = s_array (ptrs [i], lens [i], &e, &body);
        if (k < 0 || k > pads [i])
            return -1;
        if (!elem)
            elem = e;
        else
        if (e && e != elem)
            return -1;
        has_null |= s_be32 (ptrs [i] + 4) != 0 || k < pads [i];
        total += pads [i];
    }
    s_put32 (out, total ? 1 : 0);
    s_put32 (out, has_null ? 1 : 0);
    s_put32 (out, elem);
    if (!total)
        return 0;
    s_put32 (out, total);
    s_put32 (out, 1);
    for (uint32_t i = 0; i < n; i++) {
        int64_t k = 0;
        if (ptrs [i]) {
            uint32_t e;
            size_t body;
            k = s_array (ptrs [i], lens [i], &e, &body);
            qn_buf_append (out, ptrs [i] + body, lens [i] - body);
        }
        for (int64_t x = k; x < pads [i]; x++)
            s_put32 (out, 0xffffffff);
    }
    return 0;
}

// ------------------------------------------------------------------ queue
void
qn_pgw_ack_enqueue (qn_pgw_t *self, qn_pgw_job_t *j)
{
    qn_pgw_jobs_append (&self->ack_head, &self->ack_tail, &self->ack_queued, j);
}

static qn_pgw_job_t *
s_take (qn_pgw_t *self)
{
    return qn_pgw_jobs_take (&self->ack_head, &self->ack_tail, &self->ack_queued);
}

void
qn_pgw_fail_queued_acks (qn_pgw_t *self, const char *sqlstate, const char *message)
{
    while (self->ack_head)
        qn_pgw_fail_job (self, s_take (self), sqlstate, message, "");
}

//  The request's items: the longest of its arrays (queen.ack unnests
//  them side by side, padding the shorter ones with NULLs); -1 when a
//  parameter is not what the catalogue says (the request then runs
//  alone, as it came).
static int64_t
s_items (const qn_pgw_job_t *j)
{
    if (j->nparams != 8 || j->nulls [0])
        return -1;
    int64_t n = 0;
    for (uint32_t p = 1; p < 8; p++) {
        if (j->nulls [p])
            continue;
        int64_t k = qn_pgw_array_len (j->params.data + j->offsets [p], (size_t) j->lengths [p]);
        if (k < 0)
            return -1;
        if (k > n)
            n = k;
    }
    return n;
}

static bool
s_same_tenant (const qn_pgw_job_t *a, const qn_pgw_job_t *b)
{
    return a->lengths [0] == b->lengths [0]
        && !memcmp (a->params.data + a->offsets [0], b->params.data + b->offsets [0],
                    (size_t) a->lengths [0]);
}

//  The merged job's parameters: the tenant, then each array parameter
//  of the parts back to back, each part's padded to its item count.
static int
s_merge_params (qn_pgw_job_t *m)
{
    const char *ptrs [QN_PGW_ACK_MAX_MERGE];
    size_t lens [QN_PGW_ACK_MAX_MERGE];
    uint32_t pads [QN_PGW_ACK_MAX_MERGE];
    const qn_pgw_job_t *first = m->parts;
    m->nparams = 8;
    m->offsets [0] = 0;
    qn_buf_append (&m->params, first->params.data + first->offsets [0], (size_t) first->lengths [0]);
    m->lengths [0] = first->lengths [0];
    m->formats [0] = first->formats [0];
    qn_buf_putc (&m->params, 0);        //  libpq reads a text parameter up to its NUL
    for (uint32_t p = 1; p < 8; p++) {
        uint32_t n = 0;
        bool all_null = true;
        for (const qn_pgw_job_t *r = m->parts; r; r = r->next, n++) {
            ptrs [n] = r->nulls [p] ? NULL : r->params.data + r->offsets [p];
            lens [n] = r->nulls [p] ? 0 : (size_t) r->lengths [p];
            pads [n] = r->count;
            all_null &= r->nulls [p];
        }
        m->offsets [p] = m->params.len;
        m->formats [p] = 1;
        m->nulls [p] = all_null;
        if (!all_null && qn_pgw_array_concat (&m->params, ptrs, lens, pads, n))
            return -1;
        m->lengths [p] = (int) (m->params.len - m->offsets [p]);
    }
    return 0;
}

qn_pgw_job_t *
qn_pgw_build_ack_batch (qn_pgw_t *self)
{
    qn_pgw_job_t *first = s_take (self);
    int64_t items = s_items (first);
    if (first->solo || items < 0 || !self->ack_head || self->ack_head->solo)
        return first;
    first->count = (uint32_t) items;
    qn_pgw_job_t *m = qn_zalloc (sizeof *m);
    m->kind = J_EXEC;
    m->stmt_id = QN_SQL_ACK;
    m->parts = first;
    m->item_count = first->count;
    qn_pgw_job_t *last = first;
    uint32_t parts = 1;
    while (self->ack_head && parts < QN_PGW_ACK_MAX_MERGE) {
        qn_pgw_job_t *r = self->ack_head;
        int64_t n = s_items (r);
        if (r->solo || n < 0 || !s_same_tenant (r, first)
        ||  m->item_count + (uint64_t) n > (uint64_t) self->config->push_max_batch)
            break;
        s_take (self);
        r->count = (uint32_t) n;
        r->first_ord = m->item_count;
        m->item_count += r->count;
        last->next = r;
        last = r;
        parts++;
    }
    if (parts == 1) {
        m->parts = NULL;
        qn_pgw_job_free (m);
        first->next = NULL;
        return first;
    }
    if (s_merge_params (m)) {
        //  Cannot happen (s_items read every array): run them one by one.
        qn_error ("ack merge: parameters do not concatenate");
        qn_pgw_job_t *r = m->parts, *rest = r->next;
        m->parts = NULL;
        r->next = NULL;
        //  Back at the front of the queue, in their order
        qn_pgw_job_t *end = NULL;
        for (qn_pgw_job_t *x = rest; x; x = x->next) {
            x->solo = true;
            self->ack_queued++;
            end = x;
        }
        if (end) {
            end->next = self->ack_head;
            self->ack_head = rest;
            if (!self->ack_tail)
                self->ack_tail = end;
        }
        qn_pgw_job_free (m);
        return r;
    }
    return m;
}

// ------------------------------------------------------------------ answers
//  The rows of res whose ord (column 0, int4, 1-based over the merged
//  call) falls in r's items, renumbered from 1.
static void
s_reply_part (qn_pgw_t *self, const qn_pgw_job_t *r, PGresult *res)
{
    int rows = PQntuples (res);
    int64_t lo = (int64_t) r->first_ord + 1, hi = (int64_t) r->first_ord + r->count;
    uint32_t mine = 0;
    for (int row = 0; row < rows; row++) {
        int len = PQgetisnull (res, row, 0) ? -1 : PQgetlength (res, row, 0);
        int64_t ord = len == 4 ? (int32_t) s_be32 (PQgetvalue (res, row, 0)) : 0;
        mine += ord >= lo && ord <= hi;
    }
    msgpack_sbuffer_clear (&self->reply);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->reply, msgpack_sbuffer_write);
    qn_msg_pg_result_begin (&pk, true, "00000", "", "", mine);
    for (int row = 0; row < rows; row++) {
        int len = PQgetisnull (res, row, 0) ? -1 : PQgetlength (res, row, 0);
        int64_t ord = len == 4 ? (int32_t) s_be32 (PQgetvalue (res, row, 0)) : 0;
        if (ord >= lo && ord <= hi)
            qn_pgw_pack_rows (&pk, res, row, row + 1, (int64_t) r->first_ord);
    }
    qn_pgw_send_reply (self, r->reply_to, r->corr, QN_MSG_PG_RESULT);
}

//  Puts the requests back at the head of the ack queue, in order, each
//  to run alone (solo: several) or as it was; one rerun too many times
//  is answered with the error.
static void
s_rerun (qn_pgw_t *self, qn_pgw_job_t *r, bool solo, const char *sqlstate,
         const char *message, const char *detail)
{
    qn_pgw_job_t *back = NULL, *back_tail = NULL;
    uint32_t n = 0;
    while (r) {
        qn_pgw_job_t *next = r->next;
        r->next = NULL;
        if (++r->retries > QN_PGW_MERGE_RETRIES)
            qn_pgw_fail_job (self, r, sqlstate, message, detail);
        else {
            r->solo = solo;
            r->first_ord = 0;
            if (back_tail)
                back_tail->next = r;
            else
                back = r;
            back_tail = r;
            n++;
        }
        r = next;
    }
    if (back) {
        back_tail->next = self->ack_head;
        self->ack_head = back;
        if (!self->ack_tail)
            self->ack_tail = back_tail;
        self->ack_queued += n;
    }
}

void
qn_pgw_finish_acks (qn_pgw_t *self, qn_pgw_job_t *j, qn_pgw_conn_t *c)
{
    uint32_t requests = 0;
    for (const qn_pgw_job_t *r = j->parts; r; r = r->next)
        requests++;
    if (!j->parts)
        requests = 1;
    if (c->error) {
        const char *detail = c->detail ? c->detail : "";
        if (qn_pgw_merge_fate (c->sqlstate, requests) == QN_PGW_MERGE_RERUN) {
            if (j->parts) {
                qn_count (self->kernel, "pg_ack_merge_split", 1);
                s_rerun (self, j->parts, true, c->sqlstate, c->error, detail);
                j->parts = NULL;
                qn_pgw_job_free (j);
            }
            else
                s_rerun (self, j, false, c->sqlstate, c->error, detail);
            return;
        }
        qn_pgw_fail_job (self, j, c->sqlstate, c->error, detail);
        return;
    }
    if (!c->result) {
        qn_pgw_fail_job (self, j, "XX000", "no result", "");
        return;
    }
    qn_pgw_exec_committed (self, j, c->result);
    qn_count (self->kernel, "pg_ack_batches", 1);
    qn_count (self->kernel, "pg_ack_requests", requests);
    if (!j->parts)
        qn_pgw_reply_rows (self, j->reply_to, j->corr, c->result, 0, PQntuples (c->result), -1);
    for (const qn_pgw_job_t *r = j->parts; r; r = r->next)
        s_reply_part (self, r, c->result);
    qn_pgw_job_free (j);
}
