/*  wire/msg_mesh.h - the mesh's messages inside the broker
    QN_MSG_MESH_QCONF (260), event "qconf": [tenant, queue]
        a queue's settings changed (configure on this broker: codec_http ->
        mesh; or on a peer: mesh -> codec_http, which drops its cached
        settings and encryption flag of that queue).
    QN_MSG_MESH_STALE (261), event "qconf": []
        mesh -> codec_http: drop every cached queue setting (a peer
        reconnected, or this broker was frozen).
    QN_MSG_MESH_STATUS (262), event "mesh": [status json]
        mesh -> codec_http: peers, their state and hint counts for /health
        and /metrics, every second.
    QN_MSG_MESH_MAINT_POLL (263): []
        mesh -> pg_writer: a peer changed the maintenance flags: read them
        now rather than at the next 2 s poll.
    QN_MSG_MESH_GROUP (266), event "group": [tenant, queue, group, what]
        a consumer group was deleted (what 1; queue "" = from every queue)
        or sought (what 2): codec_http's admin routes -> mesh, which sends
        a GROUP hint; on a peer, mesh -> whoever caches group state (and a
        "committed" of the queue wakes its parked pops).
    Pure.
*/
#ifndef QN_WIRE_MSG_MESH_H
#define QN_WIRE_MSG_MESH_H

#include <msgpack.h>
#include <stddef.h>

typedef struct {
    const char *tenant;
    size_t tenant_len;
    const char *queue;
    size_t queue_len;
} qn_msg_mesh_qconf_t;

void qn_msg_mesh_qconf_encode (msgpack_sbuffer *out, const qn_msg_mesh_qconf_t *m);
//  Slices point into buf. 0, or -1 when malformed.
int qn_msg_mesh_qconf_decode (const char *buf, size_t len, qn_msg_mesh_qconf_t *out);

typedef struct {
    const char *tenant;
    size_t tenant_len;
    const char *queue;
    size_t queue_len;
    const char *group;
    size_t group_len;
    int64_t what;               //  QN_MESH_GROUP_DELETED, QN_MESH_GROUP_SOUGHT (wire/mesh.h)
} qn_msg_mesh_group_t;

void qn_msg_mesh_group_encode (msgpack_sbuffer *out, const qn_msg_mesh_group_t *m);
//  Slices point into buf. 0, or -1 when malformed.
int qn_msg_mesh_group_decode (const char *buf, size_t len, qn_msg_mesh_group_t *out);

//  [json]: the status document (a JSON object, UTF-8).
void qn_msg_mesh_status_encode (msgpack_sbuffer *out, const char *json, size_t len);
int qn_msg_mesh_status_decode (const char *buf, size_t len, const char **json, size_t *json_len);

//  [] for STALE and MAINT_POLL.
void qn_msg_mesh_empty_encode (msgpack_sbuffer *out);

#endif
