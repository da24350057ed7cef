/*  actors/proxy/hasher.c - queen-proxy's password hasher
    Argon2id at the interactive cost (wire/proxy_keys.h qn_password_*)
    takes tens to hundreds of milliseconds and 64 MiB: it runs here, on its
    own thread, never on the proxy's event loop, which keeps forwarding
    while a login is checked. One request at a time, in arrival order; the
    proxy bounds how many it has outstanding.
    Receives  QN_MSG_PW_WORK [op, password, hash] (wire/msg_password.h)
    Sends     QN_MSG_PW_DONE [ok, hash] as the reply
    Owns      a dummy hash (made at start) that unknown users verify
              against, so they cost what known ones do
    Failure   a malformed request is dropped (the proxy's request times
              out); libsodium failing answers ok = false. Never logs a
              password or a hash.
*/
#include "actors/actors.h"
#include "wire/msg_password.h"
#include "wire/msg_types.h"
#include "wire/proxy_keys.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    char dummy [QN_KEY_HASH_MAX];
} self_t;

static int
s_on_work (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_pw_work_t w;
    if (qn_msg_pw_work_decode (env->body.ptr, env->body.len, &w))
        return QN_EPROTO;
    char hash [QN_KEY_HASH_MAX] = "";
    qn_msg_pw_done_t d = { .ok = false, .hash = "", .hash_len = 0 };
    if (w.op == QN_PW_HASH) {
        d.ok = w.password_len && qn_password_hash (hash, w.password, w.password_len) == 0;
        if (d.ok)
            d.hash = hash, d.hash_len = strlen (hash);
    }
    else {
        char stored [QN_KEY_HASH_MAX];
        bool dummy = !w.hash_len || w.hash_len >= sizeof stored;
        snprintf (stored, sizeof stored, "%.*s", dummy ? 0 : (int) w.hash_len, w.hash);
        bool match = qn_password_verify (dummy ? self->dummy : stored, w.password, w.password_len);
        d.ok = match && !dummy;
    }
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_pw_done_encode (&pk, &d);
    qn_reply (self->kernel, env, QN_MSG_PW_DONE, b.data, b.size, NULL, 0);
    msgpack_sbuffer_destroy (&b);
    return 0;
}

static void
s_destroy (void **self_p)
{
    free (*self_p);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_PW_WORK, s_on_work },
    { 0, NULL }
};

qn_actor_t *
qn_proxy_hasher_new (qn_kernel_t *kernel)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    unsigned char random [32];
    randombytes_buf (random, sizeof random);
    if (qn_password_hash (self->dummy, (const char *) random, sizeof random)) {
        qn_error ("password hashing unavailable (libsodium)");
        free (self);
        return NULL;
    }
    return qn_actor_spawn (kernel, &(qn_actor_def_t) {
        .name = "proxy_hasher", .routes = s_routes, .self = self, .destroy = s_destroy
    });
}
