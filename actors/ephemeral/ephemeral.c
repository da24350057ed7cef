/*  actors/ephemeral/ephemeral.c - the ephemeral table as an actor
    Hosts an ephemeral table (actors/ephemeral/table.h) on a thread of its
    own, for callers that reach it by message. The broker does not start
    it: codec_http hosts the table in its own thread, so an HTTP call costs
    no hop to another actor (docs/ephemeral.md).
    Receives  QN_MSG_EPH_CALL (answered with one row [status, json] in a
              PG_RESULT-shaped body, wire/msg_pg.h), QN_MSG_MESH_EPH
    Sends     QN_MSG_MESH_EPH to the mesh (through the table)
    Owns      the table
    Failure   a malformed call is dropped (QN_EPROTO, counted)
*/
#include "actors/actors.h"
#include "actors/ephemeral/table.h"
#include "wire/msg_pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    qn_kernel_t *kernel;
    const qn_config_t *config;
    qn_eph_t *table;            //  Owned
    msgpack_sbuffer sb;
} self_t;

static void
s_answer (void *arg, const char *reply_to, uint64_t corr, int status, const char *json, size_t len)
{
    self_t *self = arg;
    msgpack_sbuffer_clear (&self->sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->sb, msgpack_sbuffer_write);
    qn_msg_pg_result_begin (&pk, true, "", NULL, NULL, 1);
    qn_msg_pg_result_row (&pk, 2);
    qn_msg_pg_result_int (&pk, status);
    msgpack_pack_str (&pk, len);
    msgpack_pack_str_body (&pk, json, len);
    qn_env_t env = {
        .reply_to = { reply_to, strlen (reply_to) }, .corr = corr
    };
    qn_reply (self->kernel, &env, QN_MSG_PG_RESULT, self->sb.data, self->sb.size, NULL, 0);
}

static int
s_on_call (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_eph_call_t c;
    if (qn_msg_eph_call_decode (env->body.ptr, env->body.len, &c))
        return QN_EPROTO;
    char to [QN_ENV_MAX_NAME + 1];
    const qn_slice_t *r = env->reply_to.len ? &env->reply_to : &env->from;
    snprintf (to, sizeof to, "%.*s", (int) r->len, r->ptr);
    qn_eph_call (self->table, &c, to, env->corr);
    return 0;
}

static int
s_on_peer (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    return qn_eph_peer (self->table, env->body.ptr, env->body.len);
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    qn_eph_start (self->table);
    return 0;
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    qn_eph_destroy (&self->table);
    msgpack_sbuffer_destroy (&self->sb);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_EPH_CALL, s_on_call },
    { QN_MSG_MESH_EPH, s_on_peer },
    { 0, NULL }
};

qn_actor_t *
qn_ephemeral_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    msgpack_sbuffer_init (&self->sb);
    qn_eph_def_t def = { .answer = s_answer, .arg = self };
    self->table = qn_eph_new (kernel, config, &def);
    qn_actor_def_t adef = {
        .name = "ephemeral", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &adef);
}
