/*  actors/http/dashboard.c - GET / and /dashboard/:file
    Serves the single-page dashboard (dashboard/ in the repository, uPlot
    from npm) embedded in the binary at build time (actors/http/dashboard.h).
    The files hold no data: they are public; everything the page shows comes
    from the same HTTP API a client uses, with the token the operator
    enters when JWT auth is on.
    Receives  routed requests from codec_http
    Failure   an unknown file is 404
*/
#include "actors/http/codec.h"
#include "actors/http/dashboard.h"

#include <string.h>

static const qn_dashboard_file_t *
s_file (const char *name, size_t len)
{
    for (const qn_dashboard_file_t *f = qn_dashboard_files; f->name; f++)
        if (strlen (f->name) == len && !memcmp (f->name, name, len))
            return f;
    return NULL;
}

static void
s_send (qn_http_ctx_t *ctx, const qn_dashboard_file_t *f)
{
    //  index.html is re-read on every load (it names the assets); the
    //  assets change only with the binary.
    bool index = !strcmp (f->name, "index.html");
    qn_http_reply_raw (ctx, 200, f->content_type,
                       index ? "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n"
                             : "Cache-Control: max-age=300\r\nX-Content-Type-Options: nosniff\r\n",
                       (const char *) f->data, f->len);
}

static void
s_index (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    (void) codec;
    const qn_dashboard_file_t *f = s_file ("index.html", 10);
    if (!f) {
        qn_http_reply_error (ctx, 404, "Not found");
        return;
    }
    s_send (ctx, f);
}

static void
s_asset (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    (void) codec;
    const char *name = qn_http_param (ctx, 0);
    const qn_dashboard_file_t *f = name ? s_file (name, ctx->param_len [0]) : NULL;
    if (!f) {
        qn_http_reply_error (ctx, 404, "Not found");
        return;
    }
    s_send (ctx, f);
}

const qn_http_route_t qn_http_routes_dashboard [] = {
    { "GET", "/", s_index, QN_AUTH_PUBLIC },
    { "GET", "/dashboard/:file", s_asset, QN_AUTH_PUBLIC },
    { NULL, NULL, NULL, 0 }
};
