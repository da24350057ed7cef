/*  cmd/queen-verify/http.c - one keep-alive HTTP/1.1 slot per worker
    A vf_http_t wraps one libqueen request slot (client/queen.h), reused
    request after request, so each worker keeps its own connection
    (libcurl reconnects by itself after the broker restarts). The event
    loop in pipeline.c drives every slot with queen_poll / queen_wait;
    setup and cleanup run a slot to completion synchronously.
    Owns      the slot, request and response buffers
    Failure   transport errors leave status 0 and the error text;
              vf_http_outcome says whether a retry makes sense, and
              maybe_sent (queen_slot_maybe_sent) whether an attempt may
              have been applied unseen
*/
#include "cmd/queen-verify/verify.h"

#include <stdlib.h>
#include <string.h>

void
vf_http_init (vf_http_t *h, queen_client_t *client, void *owner)
{
    memset (h, 0, sizeof *h);
    qn_buf_init (&h->body);
    qn_buf_init (&h->resp);
    h->slot = queen_slot_new (client, owner);
    if (!h->slot) {
        fprintf (stderr, "queen-verify: no request slot\n");
        abort ();
    }
}

void
vf_http_free (vf_http_t *h)
{
    queen_slot_destroy (&h->slot);
    qn_buf_free (&h->body);
    qn_buf_free (&h->resp);
    memset (h, 0, sizeof *h);
}

//  The body, for POST, must already be in h->body; it stays there so a
//  retry sends the same bytes.
void
vf_http_prepare (vf_http_t *h, const char *method, const char *path, long timeout_ms)
{
    qn_buf_reset (&h->resp);
    h->status = 0;
    h->code = QUEEN_OK;
    h->err [0] = 0;
    h->method = method;
    h->path = path;
    h->timeout_ms = timeout_ms;
}

void
vf_http_start (vf_http_t *h)
{
    bool post = !strcmp (h->method, "POST");
    //  The slot keeps the pending maybe-sent state until the caller clears it
    if (!h->maybe_sent)
        queen_slot_clear_maybe_sent (h->slot);
    if (queen_slot_start (h->slot, h->method, h->path, post ? (h->body.data ? h->body.data : "") : NULL,
                          post ? h->body.len : 0, h->timeout_ms) != QUEEN_OK) {
        fprintf (stderr, "queen-verify: request slot refused %s %s\n", h->method, h->path);
        abort ();
    }
    h->busy = true;
}

void
vf_http_finish (vf_http_t *h)
{
    h->busy = false;
    const char *body;
    size_t len;
    h->code = queen_slot_result (h->slot, &h->status, &body, &len);
    qn_buf_reset (&h->resp);
    if (len)
        qn_buf_append (&h->resp, body, len);
    if (queen_slot_maybe_sent (h->slot))
        h->maybe_sent = true;
    if (h->code != QUEEN_OK)
        snprintf (h->err, sizeof h->err, "%s", queen_slot_error (h->slot));
}

void
vf_http_cancel (vf_http_t *h)
{
    if (h->busy)
        queen_slot_cancel (h->slot);
    h->busy = false;
}

void
vf_http_perform (vf_http_t *h, queen_client_t *client)
{
    vf_http_start (h);
    while (h->busy) {
        queen_slot_t *done [8];
        int n = queen_poll (client, done, 8);
        for (int i = 0; i < n; i++)
            if (done [i] == h->slot)
                vf_http_finish (h);
        if (h->busy)
            queen_wait (client, 100);
    }
}

vf_http_outcome_t
vf_http_outcome (const vf_http_t *h)
{
    if (h->status == 0)
        return VF_HTTP_RETRY;
    if (h->status >= 200 && h->status < 300)
        return VF_HTTP_OK;
    if (h->status >= 500 || h->status == 408 || h->status == 429)
        return VF_HTTP_RETRY;
    return VF_HTTP_FATAL;
}

void
vf_http_describe (const vf_http_t *h, char *out, size_t len)
{
    if (h->status == 0)
        snprintf (out, len, "%s", h->err [0] ? h->err : "no answer");
    else
        snprintf (out, len, "status %ld: %.300s", h->status, h->resp.data ? h->resp.data : "");
}
