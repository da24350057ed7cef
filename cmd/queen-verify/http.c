/*  cmd/queen-verify/http.c - one keep-alive HTTP/1.1 slot per worker
    A vf_http_t wraps one libcurl easy handle that is reused request after
    request, so each worker keeps its own connection (curl reconnects by
    itself after the broker restarts). The event loop in pipeline.c adds
    the handle to a multi handle; setup and cleanup run it synchronously.
    Owns      the easy handle, its header list, request and response buffers
    Failure   transport errors leave status 0 and the curl error text;
              vf_http_outcome says whether a retry makes sense
*/
#include "cmd/queen-verify/verify.h"

#include <stdlib.h>
#include <string.h>

static size_t
s_on_data (char *ptr, size_t size, size_t nmemb, void *arg)
{
    qn_buf_append ((qn_buf_t *) arg, ptr, size * nmemb);
    return size * nmemb;
}

//  `owner` comes back as CURLINFO_PRIVATE in the event loop.
void
vf_http_init (vf_http_t *h, const char *token, void *owner)
{
    memset (h, 0, sizeof *h);
    qn_buf_init (&h->body);
    qn_buf_init (&h->resp);
    h->easy = curl_easy_init ();
    h->headers = curl_slist_append (NULL, "Content-Type: application/json");
    //  No "Expect: 100-continue" round trip before larger bodies
    h->headers = curl_slist_append (h->headers, "Expect:");
    if (token && *token) {
        qn_buf_t auth = QN_BUF_INIT;
        qn_buf_printf (&auth, "Authorization: Bearer %s", token);
        h->headers = curl_slist_append (h->headers, auth.data);
        qn_buf_free (&auth);
    }
    if (!h->easy || !h->headers) {
        fprintf (stderr, "queen-verify: out of memory in libcurl\n");
        abort ();
    }
    curl_easy_setopt (h->easy, CURLOPT_PRIVATE, owner);
    curl_easy_setopt (h->easy, CURLOPT_HTTPHEADER, h->headers);
    curl_easy_setopt (h->easy, CURLOPT_WRITEFUNCTION, s_on_data);
    curl_easy_setopt (h->easy, CURLOPT_WRITEDATA, &h->resp);
    curl_easy_setopt (h->easy, CURLOPT_ERRORBUFFER, h->err);
    curl_easy_setopt (h->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (h->easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt (h->easy, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt (h->easy, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
}

void
vf_http_free (vf_http_t *h)
{
    if (h->easy)
        curl_easy_cleanup (h->easy);
    curl_slist_free_all (h->headers);
    qn_buf_free (&h->body);
    qn_buf_free (&h->resp);
    memset (h, 0, sizeof *h);
}

//  The body, for POST, must already be in h->body; it stays there so a
//  retry sends the same bytes.
void
vf_http_prepare (vf_http_t *h, const char *method, const char *url, long timeout_ms)
{
    qn_buf_reset (&h->resp);
    h->status = 0;
    h->cc = CURLE_OK;
    h->err [0] = 0;
    curl_easy_setopt (h->easy, CURLOPT_URL, url);
    curl_easy_setopt (h->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt (h->easy, CURLOPT_CUSTOMREQUEST, NULL);
    if (!strcmp (method, "POST")) {
        curl_easy_setopt (h->easy, CURLOPT_POST, 1L);
        curl_easy_setopt (h->easy, CURLOPT_POSTFIELDS, h->body.data ? h->body.data : "");
        curl_easy_setopt (h->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) h->body.len);
    }
    else {
        curl_easy_setopt (h->easy, CURLOPT_HTTPGET, 1L);
        if (strcmp (method, "GET"))
            curl_easy_setopt (h->easy, CURLOPT_CUSTOMREQUEST, method);
    }
}

void
vf_http_start (vf_http_t *h, CURLM *multi)
{
    h->busy = true;
    curl_multi_add_handle (multi, h->easy);
}

//  Whether the broker may have applied a failed attempt: after any
//  transport error (even "connection refused": when a reused connection
//  dies without an answer, libcurl silently resends the request on a
//  fresh one, so the refusal may follow a delivered first copy), after a
//  5xx, and after an answer that came on a new connection while the slot
//  had one open (that silent resend may have succeeded).
static void
s_record (vf_http_t *h, CURLcode cc)
{
    h->cc = cc;
    h->status = 0;
    if (cc != CURLE_OK) {
        h->maybe_sent = true;
        h->connected = false;
        return;
    }
    long connects = 0;
    curl_easy_getinfo (h->easy, CURLINFO_RESPONSE_CODE, &h->status);
    curl_easy_getinfo (h->easy, CURLINFO_NUM_CONNECTS, &connects);
    if (h->status >= 500 || (connects > 0 && h->connected))
        h->maybe_sent = true;
    h->connected = true;
}

void
vf_http_finish (vf_http_t *h, CURLM *multi, CURLcode cc)
{
    curl_multi_remove_handle (multi, h->easy);
    h->busy = false;
    s_record (h, cc);
}

void
vf_http_perform (vf_http_t *h)
{
    s_record (h, curl_easy_perform (h->easy));
}

vf_http_outcome_t
vf_http_outcome (const vf_http_t *h)
{
    if (h->cc != CURLE_OK || h->status == 0)
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
    if (h->cc != CURLE_OK)
        snprintf (out, len, "%s", h->err [0] ? h->err : curl_easy_strerror (h->cc));
    else
        snprintf (out, len, "status %ld: %.300s", h->status, h->resp.data ? h->resp.data : "");
}
