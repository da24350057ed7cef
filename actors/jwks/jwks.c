/*  actors/jwks/jwks.c - background JWKS fetcher
    Fetches JWT_JWKS_URL with libcurl's multi interface, driven by this
    actor's own loop: curl's sockets are watched with qn_fd_watch and its
    timeouts are kernel timers, so nothing ever blocks (not even DNS, which
    curl resolves on its own thread). A document with at least one usable
    key (wire/jwt.h) is published on the bus; the codec builds its key set
    from it. Refreshes every JWT_JWKS_REFRESH_MS; after a failure it
    retries sooner (1 s, doubling, up to the refresh period) and keeps
    serving the last good document, so a flaky key server never empties
    the key set.
    Receives  QN_MSG_JWKS_REFRESH (a token named an unknown key: fetch now,
              at most once a second; else republish)
    Sends     event "jwks" QN_MSG_JWKS_KEYS [generation, jwks json (bin)]
    Owns      the curl handles, the last good document
    Failure   fetch errors are logged (never the document) and retried;
              without JWT_ENABLED or JWT_JWKS_URL the actor stays idle
*/
#include "actors/actors.h"
#include "wire/jwt.h"
#include "wire/msg_jwks.h"

#include <curl/curl.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#define S_FETCH_TIMEOUT_MS   10000
#define S_CONNECT_TIMEOUT_MS 5000
#define S_RETRY_MIN_MS       1000
#define S_FETCH_GAP_MS       1000   //  Least time between asked-for fetches

typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    char *url;                  //  Owned; NULL = idle
    uint32_t refresh_ms;
    CURLM *multi;               //  Owned
    CURL *easy;                 //  Owned: the transfer in flight, or NULL
    qn_buf_t body;              //  Response being received
    qn_buf_t good;              //  Last usable document
    uint64_t generation;        //  Bumped whenever `good` changes
    uint64_t curl_timer;        //  Kernel timer for curl's timeout, 0 = none
    uint64_t refresh_timer;     //  Next scheduled fetch, 0 = none
    int64_t started_ms;         //  When the last fetch started (monotonic)
    uint32_t failures;          //  Consecutive
} self_t;

static void s_fetch (self_t *self);

// ------------------------------------------------------------------ publishing
static void
s_publish (self_t *self)
{
    if (!self->good.len)
        return;
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_jwks_keys_t keys = {
        .generation = self->generation, .json = self->good.data, .json_len = self->good.len
    };
    qn_msg_jwks_keys_encode (&pk, &keys);
    qn_publish (self->kernel, "jwks", QN_MSG_JWKS_KEYS, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
}

static void
s_on_refresh_timer (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->refresh_timer = 0;
    s_fetch (self);
}

static void
s_schedule (self_t *self, uint32_t delay_ms)
{
    if (self->refresh_timer)
        qn_timer_cancel (self->kernel, self->refresh_timer);
    self->refresh_timer = qn_timer_add (self->kernel, delay_ms, 0, s_on_refresh_timer, NULL);
}

//  Judges a finished transfer, publishes a usable document and plans the
//  next fetch.
static void
s_finished (self_t *self, CURLcode result)
{
    long status = 0;
    curl_easy_getinfo (self->easy, CURLINFO_RESPONSE_CODE, &status);
    char why [160] = "";
    int keys = -1;
    if (result != CURLE_OK)
        snprintf (why, sizeof why, "%s", curl_easy_strerror (result));
    else
    if (status != 200)
        snprintf (why, sizeof why, "http status %ld", status);
    else {
        qn_jwt_keys_t *set = qn_jwt_keys_new ();
        keys = qn_jwt_keys_add_jwks (set, self->body.data ? self->body.data : "", self->body.len,
                                     why, sizeof why);
        qn_jwt_keys_destroy (&set);
        if (keys == 0)
            snprintf (why, sizeof why, "no usable key (RSA RS256 or OKP Ed25519)");
    }
    if (keys > 0) {
        bool changed = self->good.len != self->body.len
                    || memcmp (self->good.data, self->body.data, self->body.len);
        if (changed) {
            qn_buf_reset (&self->good);
            qn_buf_append (&self->good, self->body.data, self->body.len);
            self->generation++;
            qn_info ("jwks loaded: keys=%d generation=%llu", keys,
                     (unsigned long long) self->generation);
        }
        self->failures = 0;
        s_publish (self);
        s_schedule (self, self->refresh_ms);
    }
    else {
        self->failures++;
        qn_warn ("jwks fetch failed: error=%s failures=%u", why, self->failures);
        uint32_t shift = self->failures < 8 ? self->failures - 1 : 7;
        uint32_t delay = S_RETRY_MIN_MS << shift;
        s_schedule (self, delay < self->refresh_ms ? delay : self->refresh_ms);
    }
    qn_buf_reset (&self->body);
}

//  Collects finished transfers (there is at most one).
static void
s_check_done (self_t *self)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read (self->multi, &left)))
        if (m->msg == CURLMSG_DONE && m->easy_handle == self->easy) {
            CURLcode result = m->data.result;
            s_finished (self, result);
            curl_multi_remove_handle (self->multi, self->easy);
            curl_easy_cleanup (self->easy);
            self->easy = NULL;
        }
}

// ------------------------------------------------------------------ curl glue
static void
s_on_fd (void *self_, int fd, uint32_t events)
{
    self_t *self = self_;
    int flags = 0;
    if (events & QN_FD_IN)
        flags |= CURL_CSELECT_IN;
    if (events & QN_FD_OUT)
        flags |= CURL_CSELECT_OUT;
    if (events & (QN_FD_ERR | QN_FD_HUP))
        flags |= CURL_CSELECT_ERR;
    int running;
    curl_multi_socket_action (self->multi, fd, flags, &running);
    s_check_done (self);
}

static void
s_on_curl_timer (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->curl_timer = 0;
    int running;
    curl_multi_socket_action (self->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    s_check_done (self);
}

//  CURLMOPT_SOCKETFUNCTION: keeps the kernel's fd watch in step with what
//  curl wants to wait for. socketp marks sockets already watched.
static int
s_curl_socket (CURL *easy, curl_socket_t fd, int what, void *self_, void *socketp)
{
    (void) easy;
    self_t *self = self_;
    if (what == CURL_POLL_REMOVE) {
        if (socketp)
            qn_fd_unwatch (self->kernel, fd);
        curl_multi_assign (self->multi, fd, NULL);
        return 0;
    }
    uint32_t events = (what & CURL_POLL_IN ? QN_FD_IN : 0) | (what & CURL_POLL_OUT ? QN_FD_OUT : 0);
    if (socketp)
        return qn_fd_modify (self->kernel, fd, events) ? -1 : 0;
    if (qn_fd_watch (self->kernel, fd, events, s_on_fd))
        return -1;
    curl_multi_assign (self->multi, fd, self);
    return 0;
}

//  CURLMOPT_TIMERFUNCTION: one kernel timer mirrors curl's single timeout.
static int
s_curl_timer (CURLM *multi, long timeout_ms, void *self_)
{
    (void) multi;
    self_t *self = self_;
    if (self->curl_timer)
        qn_timer_cancel (self->kernel, self->curl_timer);
    self->curl_timer = 0;
    if (timeout_ms >= 0)
        self->curl_timer = qn_timer_add (self->kernel, (uint32_t) timeout_ms, 0, s_on_curl_timer, NULL);
    return 0;
}

static size_t
s_on_data (char *data, size_t size, size_t count, void *self_)
{
    self_t *self = self_;
    size_t n = size * count;
    if (self->body.len + n > QN_JWT_MAX_JWKS)
        return 0;                   //  Aborts the transfer: too large
    qn_buf_append (&self->body, data, n);
    return n;
}

//  Starts a fetch unless one is in flight.
static void
s_fetch (self_t *self)
{
    if (self->easy || !self->url)
        return;
    CURL *e = curl_easy_init ();
    if (!e) {
        s_schedule (self, S_RETRY_MIN_MS);
        return;
    }
    qn_buf_reset (&self->body);
    curl_easy_setopt (e, CURLOPT_URL, self->url);
    curl_easy_setopt (e, CURLOPT_WRITEFUNCTION, s_on_data);
    curl_easy_setopt (e, CURLOPT_WRITEDATA, self);
    curl_easy_setopt (e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt (e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt (e, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt (e, CURLOPT_MAXREDIRS, 3L);
    curl_easy_setopt (e, CURLOPT_TIMEOUT_MS, (long) S_FETCH_TIMEOUT_MS);
    curl_easy_setopt (e, CURLOPT_CONNECTTIMEOUT_MS, (long) S_CONNECT_TIMEOUT_MS);
    curl_easy_setopt (e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (e, CURLOPT_USERAGENT, "queen-jwks/0.1");
    curl_easy_setopt (e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) QN_JWT_MAX_JWKS);
    self->easy = e;
    self->started_ms = qn_now_ms ();
    if (curl_multi_add_handle (self->multi, e) != CURLM_OK) {
        curl_easy_cleanup (e);
        self->easy = NULL;
        s_schedule (self, S_RETRY_MIN_MS);
    }
}

// ------------------------------------------------------------------ handlers
static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    if (!self->url)
        return 0;
    self->multi = curl_multi_init ();
    if (!self->multi)
        return QN_EIO;
    curl_multi_setopt (self->multi, CURLMOPT_SOCKETFUNCTION, s_curl_socket);
    curl_multi_setopt (self->multi, CURLMOPT_SOCKETDATA, self);
    curl_multi_setopt (self->multi, CURLMOPT_TIMERFUNCTION, s_curl_timer);
    curl_multi_setopt (self->multi, CURLMOPT_TIMERDATA, self);
    s_fetch (self);
    return 0;
}

static int
s_on_refresh (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    if (qn_msg_jwks_refresh_decode (env->body.ptr, env->body.len))
        return QN_EPROTO;
    if (!self->url || self->easy)
        return 0;
    if (qn_now_ms () - self->started_ms >= S_FETCH_GAP_MS)
        s_fetch (self);
    else
        s_publish (self);           //  The asker may have missed the last event
    return 0;
}

//  Drops the transfer in flight while the loop (and qn_fd_unwatch) still
//  works: curl's socket callback runs from curl_multi_remove_handle.
static void
s_abort_transfer (self_t *self)
{
    if (self->easy) {
        curl_multi_remove_handle (self->multi, self->easy);
        curl_easy_cleanup (self->easy);
        self->easy = NULL;
    }
}

static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    s_abort_transfer (self);
    if (self->refresh_timer)
        qn_timer_cancel (self->kernel, self->refresh_timer);
    if (self->curl_timer)
        qn_timer_cancel (self->kernel, self->curl_timer);
    self->refresh_timer = self->curl_timer = 0;
    return QN_DONE;
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    if (self->multi) {
        //  Off the actor thread now: curl must not call back into the kernel.
        curl_multi_setopt (self->multi, CURLMOPT_SOCKETFUNCTION, NULL);
        curl_multi_setopt (self->multi, CURLMOPT_TIMERFUNCTION, NULL);
        if (self->easy) {
            curl_multi_remove_handle (self->multi, self->easy);
            curl_easy_cleanup (self->easy);
        }
        curl_multi_cleanup (self->multi);
    }
    qn_buf_free (&self->body);
    qn_buf_free (&self->good);
    free (self->url);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_JWKS_REFRESH, s_on_refresh },
    { QN_MSG_STOP, s_on_stop },
    { 0, NULL }
};

qn_actor_t *
qn_jwks_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->refresh_ms = (uint32_t) config->jwt_jwks_refresh_ms;
    if (config->jwt_enabled && config->jwt_jwks_url [0]) {
        //  Once per process, before the actor thread exists.
        curl_global_init (CURL_GLOBAL_DEFAULT);
        self->url = qn_strdup (config->jwt_jwks_url);
    }
    qn_actor_def_t def = {
        .name = "jwks", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
