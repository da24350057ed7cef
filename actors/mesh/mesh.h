/*  actors/mesh/mesh.h - what other actors use of the mesh
    The mesh actor itself is created by qn_mesh_new (actors/actors.h).
*/
#ifndef QN_ACTORS_MESH_MESH_H
#define QN_ACTORS_MESH_MESH_H

#include "kernel/kernel.h"

#include <stddef.h>

//  Where peers' ephemeral operations (QN_MSG_MESH_EPH) go: the actor that
//  hosts the broker's ephemeral table (actors/ephemeral/table.h).
#define QN_MESH_EPH_HOST "codec_http"

//  Publishes "qconf" (QN_MSG_MESH_QCONF [tenant, queue]): this broker
//  changed a queue's settings; the mesh tells the peers, whose codecs drop
//  their cached settings of that queue. Never blocks; a hint.
void qn_mesh_qconf_publish (qn_kernel_t *kernel, const char *tenant, const char *queue,
                            size_t queue_len);

//  Publishes "group" (QN_MSG_MESH_GROUP [tenant, queue, group, what]):
//  this broker deleted (what QN_MESH_GROUP_DELETED, queue NULL = from
//  every queue) or sought (QN_MESH_GROUP_SOUGHT) a consumer group; the
//  mesh sends a GROUP hint, and each peer republishes "group" for whoever
//  caches group state there and wakes the queue's parked pops. A hint.
void qn_mesh_group_publish (qn_kernel_t *kernel, const char *tenant, const char *queue,
                            const char *group, int what);

#endif
