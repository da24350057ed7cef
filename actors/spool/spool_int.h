/*  actors/spool/spool_int.h - what the files of the spool actor share
    One actor in three files, split at its seams:
      spool.c   the actor: appends and their group sync, answers to the
                pushers, DRAINED reports to pg_writer, stats, lifecycle
      store.c   the files: segments, checkpoint, failed records, recovery
                of a torn or damaged tail at start
      replay.c  replay into pg_writer (QN_MSG_PUSH flagged replay), retry
                and refusal handling, the "db" and "maintenance" events
    Nothing here is used outside actors/spool/.
*/
#ifndef QN_ACTORS_SPOOL_INT_H
#define QN_ACTORS_SPOOL_INT_H

#include "actors/actors.h"

#include <msgpack.h>

#define QN_SP_ROTATE_BYTES      (64u << 20)     //  Start a new segment past this
#define QN_SP_GROUP_MAX         1024            //  Appends per group sync at most
#define QN_SP_REPLAY_RECORDS    64              //  Records merged into one replay QN_MSG_PUSH
#define QN_SP_REPLAY_BYTES      (4u << 20)
#define QN_SP_TICK_MS           2000            //  Repeat DRAINED, retry replay
#define QN_SP_BACKOFF_MIN_MS    100
#define QN_SP_BACKOFF_MAX_MS    2000
#define QN_SP_PERMANENT_TRIES   3

typedef struct {
    char reply_to [QN_ENV_MAX_NAME + 1];
    uint64_t corr;
    uint32_t items;
    char *answer;               //  Owned: the PUSH_ANSWER sent once synced
    size_t answer_len;
} qn_sp_waiter_t;

typedef struct qn_sp {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    char *dir;                  //  Owned
    //  Segment files on disk, ascending; the last may be the write segment
    uint64_t *segs;             //  Owned
    uint32_t seg_count, seg_cap;
    uint64_t next_seq;
    //  Appends
    int wfd;                    //  Write segment, or -1
    uint64_t wseq;
    uint64_t wsize;             //  Bytes written, synced or not
    uint64_t wsynced;           //  Durable end of the write segment
    qn_sp_waiter_t *group;          //  Owned: appends waiting for the sync
    uint32_t group_count, group_cap;
    uint64_t group_timer;
    bool healthy;               //  The last write and sync worked
    //  Replay: everything before (rseq, roff) is in PostgreSQL
    uint64_t rseq, roff;
    int rfd;                    //  Read handle of segment rfd_seq, or -1
    uint64_t rfd_seq;
    bool in_flight;
    uint64_t flight_off;        //  roff once the records in flight commit
    uint64_t flight_items;
    uint32_t flight_records;
    qn_buf_t flight_tenant;
    bool solo;                  //  One record at a time (isolating a refusal)
    int tries;
    int64_t backoff_ms;
    uint64_t retry_timer;
    //  Counts
    uint64_t pending, failed, failed_bytes;
    uint64_t appends;           //  SPOOL_APPENDs handled since start
    //  Database and push maintenance, read from events
    bool db_up;
    bool push_maint;
    bool stopping;
    qn_buf_t io;                //  Reusable record buffer
    msgpack_sbuffer out;        //  Reusable encode buffer
} qn_sp_t;

// ------------------------------------------------------------------ spool.c
void qn_sp_progress (qn_sp_t *self);
void qn_sp_group_flush (qn_sp_t *self);

// ------------------------------------------------------------------ store.c
void qn_sp_checkpoint_save (qn_sp_t *self);
void qn_sp_close_read (qn_sp_t *self);
void qn_sp_close_write (qn_sp_t *self);
//  End of the replayable data of segment seq (opens the read handle). 0,
//  or -1 with errno.
int qn_sp_seg_end (qn_sp_t *self, uint64_t seq, uint64_t *end);
//  Drops fully replayed segments; keeps the cursor on the first left.
void qn_sp_advance (qn_sp_t *self);
//  Writes one record, not yet synced. 0, or -1 with `why` set.
int qn_sp_write_record (qn_sp_t *self, const char *body, size_t len, char *why, size_t why_len);
//  Reads the record at off (before end) into self->io: its size, 0 at
//  the end, -1 when damaged.
int64_t qn_sp_read_record (qn_sp_t *self, uint64_t off, uint64_t end);
int qn_sp_set_aside (qn_sp_t *self, uint64_t seq, uint64_t off, const char *what);
int qn_sp_move_to_failed (qn_sp_t *self, const char *sqlstate, const char *message);
void qn_sp_recover (qn_sp_t *self);

// ------------------------------------------------------------------ replay.c
//  Sends the next records to pg_writer unless replay must wait.
void qn_sp_replay_next (qn_sp_t *self);
int qn_sp_on_maintenance (void *self_, const qn_env_t *env);
int qn_sp_on_db (void *self_, const qn_env_t *env);

#endif
