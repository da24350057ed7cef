/*  client/slot.c - libqueen: asynchronous request slots
    A slot owns one libcurl easy handle (one keep-alive connection) and runs
    one request at a time on the client's curl multi handle, which
    queen_poll / queen_wait drive in the caller's thread. Made for event
    loops with many requests in flight (queen-verify's pipeline); the
    caller does its own retries, told by queen_slot_maybe_sent whether a
    failed attempt may have been applied.
    Owns      the easy handle, the URL and answer buffers
    Failure   queen_slot_result: the code, HTTP status and answer, or the
              transport error in queen_slot_error
*/
#include "client/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct queen_slot_s {
    queen_client_t *client;     //  Not owned
    void *owner;
    CURL *easy;
    qn_buf_t url;
    qn_buf_t resp;
    long status;
    CURLcode cc;
    queen_code_t code;
    bool busy;
    bool connected;             //  The last attempt got an answer
    bool maybe_sent;
    char err [CURL_ERROR_SIZE];
    char describe [400];
};

static size_t
s_on_data (char *ptr, size_t size, size_t nmemb, void *arg)
{
    qn_buf_append ((qn_buf_t *) arg, ptr, size * nmemb);
    return size * nmemb;
}

queen_slot_t *
queen_slot_new (queen_client_t *client, void *owner)
{
    if (!client)
        return NULL;
    if (!client->multi)
        client->multi = curl_multi_init ();
    queen_slot_t *self = calloc (1, sizeof *self);
    self->client = client;
    self->owner = owner;
    qn_buf_init (&self->url);
    qn_buf_init (&self->resp);
    self->easy = curl_easy_init ();
    if (!self->easy || !client->multi) {
        fprintf (stderr, "libqueen: out of memory in libcurl\n");
        abort ();
    }
    curl_easy_setopt (self->easy, CURLOPT_PRIVATE, self);
    curl_easy_setopt (self->easy, CURLOPT_HTTPHEADER, client->headers);
    curl_easy_setopt (self->easy, CURLOPT_WRITEFUNCTION, s_on_data);
    curl_easy_setopt (self->easy, CURLOPT_WRITEDATA, &self->resp);
    curl_easy_setopt (self->easy, CURLOPT_ERRORBUFFER, self->err);
    curl_easy_setopt (self->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (self->easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt (self->easy, CURLOPT_CONNECTTIMEOUT_MS, client->connect_timeout_ms);
    curl_easy_setopt (self->easy, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_1_1);
    return self;
}

void
queen_slot_destroy (queen_slot_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    queen_slot_t *self = *self_p;
    queen_slot_cancel (self);
    curl_easy_cleanup (self->easy);
    qn_buf_free (&self->url);
    qn_buf_free (&self->resp);
    free (self);
    *self_p = NULL;
}

void *
queen_slot_owner (const queen_slot_t *self)
{
    return self->owner;
}

queen_code_t
queen_slot_start (queen_slot_t *self, const char *method, const char *path,
                  const char *body, size_t len, long timeout_ms)
{
    if (!self || self->busy || !method || !path || path [0] != '/')
        return QUEEN_ERR_ARG;
    qn_buf_reset (&self->url);
    qn_buf_printf (&self->url, "%s%s", self->client->url, path);
    qn_buf_reset (&self->resp);
    self->status = 0;
    self->cc = CURLE_OK;
    self->code = QUEEN_OK;
    self->err [0] = 0;
    CURL *e = self->easy;
    curl_easy_setopt (e, CURLOPT_URL, self->url.data);
    curl_easy_setopt (e, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : self->client->timeout_ms);
    curl_easy_setopt (e, CURLOPT_CUSTOMREQUEST, NULL);
    if (body || strcmp (method, "GET")) {
        curl_easy_setopt (e, CURLOPT_POST, 1L);
        curl_easy_setopt (e, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt (e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) (body ? len : 0));
        if (strcmp (method, "POST"))
            curl_easy_setopt (e, CURLOPT_CUSTOMREQUEST, method);
    }
    else
        curl_easy_setopt (e, CURLOPT_HTTPGET, 1L);
    self->busy = true;
    curl_multi_add_handle (self->client->multi, e);
    return QUEEN_OK;
}

bool
queen_slot_busy (const queen_slot_t *self)
{
    return self->busy;
}

void
queen_slot_cancel (queen_slot_t *self)
{
    if (self && self->busy) {
        curl_multi_remove_handle (self->client->multi, self->easy);
        self->busy = false;
    }
}

//  See queen_slot_maybe_sent.
static void
s_record (queen_slot_t *self, CURLcode cc)
{
    self->cc = cc;
    self->status = 0;
    if (cc != CURLE_OK) {
        self->maybe_sent = true;
        self->connected = false;
        self->code = cc == CURLE_OPERATION_TIMEDOUT ? QUEEN_ERR_TIMEOUT : QUEEN_ERR_CONNECT;
        return;
    }
    long connects = 0;
    curl_easy_getinfo (self->easy, CURLINFO_RESPONSE_CODE, &self->status);
    curl_easy_getinfo (self->easy, CURLINFO_NUM_CONNECTS, &connects);
    if (self->status >= 500 || (connects > 0 && self->connected))
        self->maybe_sent = true;
    self->connected = true;
    self->code = queen__code_for_status (self->status);
}

int
queen_poll (queen_client_t *client, queen_slot_t **done, int max)
{
    if (!client || !client->multi || max <= 0)
        return 0;
    int running, n = 0;
    curl_multi_perform (client->multi, &running);
    CURLMsg *msg;
    int left;
    while (n < max && (msg = curl_multi_info_read (client->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        queen_slot_t *slot = NULL;
        curl_easy_getinfo (msg->easy_handle, CURLINFO_PRIVATE, (char **) &slot);
        CURLcode cc = msg->data.result;
        curl_multi_remove_handle (client->multi, slot->easy);
        slot->busy = false;
        s_record (slot, cc);
        done [n++] = slot;
    }
    return n;
}

void
queen_wait (queen_client_t *client, long timeout_ms)
{
    if (client && client->multi && timeout_ms > 0)
        curl_multi_poll (client->multi, NULL, 0, (int) timeout_ms, NULL);
}

queen_code_t
queen_slot_result (const queen_slot_t *self, long *status, const char **body, size_t *len)
{
    if (status)
        *status = self->status;
    if (body)
        *body = self->resp.data;
    if (len)
        *len = self->resp.len;
    return self->code;
}

const char *
queen_slot_error (const queen_slot_t *self)
{
    queen_slot_t *mut = (queen_slot_t *) self;
    if (self->cc != CURLE_OK)
        snprintf (mut->describe, sizeof mut->describe, "%s",
                  self->err [0] ? self->err : curl_easy_strerror (self->cc));
    else
        snprintf (mut->describe, sizeof mut->describe, "status %ld: %.300s", self->status,
                  self->resp.data ? self->resp.data : "");
    return self->describe;
}

bool
queen_slot_maybe_sent (const queen_slot_t *self)
{
    return self->maybe_sent;
}

void
queen_slot_clear_maybe_sent (queen_slot_t *self)
{
    self->maybe_sent = false;
}
