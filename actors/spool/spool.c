/*  actors/spool/spool.c - the disk spool
    Keeps pushes that PostgreSQL cannot take right now (database down, push
    maintenance, or anything still spooled ahead of them) in CRC-framed
    segment files under FILE_BUFFER_DIR, answers them only once they are on
    disk (fdatasync, grouped within SPOOL_FSYNC_MS), and replays them in
    order into pg_writer when the database is up and push maintenance is
    off. Replay is idempotent: every spooled item carries a transaction id,
    and queen.push deduplicates by it.
    Also the keeper of the maintenance flags: it reads queen.system_state
    at start and every 2 s (another broker may flip them) and publishes
    them.

    Files: segment-<16 digits>.qspool (records, see wire/spool_codec.h),
    rotated at 64 MiB; checkpoint (the replay position, replaced by
    rename); failed.qspool (records the database refused for good, kept for
    the operator); segment-*.qspool.bad-<offset> (a damaged tail with valid
    records after it, set aside at recovery).

    Receives  QN_MSG_SPOOL_APPEND [tenant, [item...]] (request: replies
              PG_RESULT [ok, sqlstate, message, detail, []] after the sync),
              QN_MSG_SPOOL_STATS (request: replies [pending, failed,
              db_healthy, buffer_healthy, failed_bytes, event_seq]), "db" and
              "maintenance" events, PG_RESULT replies
    Sends     QN_MSG_PG_PUSH to pg_writer, QN_MSG_PG_EXEC to pg_reader;
              events "spool" QN_MSG_SPOOL_STATS [pending, failed,
              event_seq] (event_seq counts the events: a reader that also
              asks directly can tell an event older than an answer),
              "maintenance" QN_MSG_CONFIG [push, pop], "committed"
              QN_MSG_COMMITTED [tenant, queue]
    Owns      the spool directory and its file descriptors
    Failure   an append that cannot be made durable (EACCES, ENOSPC, EIO,
              EROFS...) is answered ok=false, SQLSTATE 58030, and removed
              from the file again; a replay the database refuses is retried
              with backoff (for good: after 3 tries, moved to failed.qspool)
*/
#include "actors/actors.h"
#include "actors/pg/call.h"
#include "wire/json.h"
#include "wire/mp.h"
#include "wire/spool_codec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_ROTATE_BYTES      (64u << 20)     //  Start a new segment past this
#define S_GROUP_MAX         1024            //  Appends per group sync at most
#define S_REPLAY_RECORDS    64              //  Records merged into one PG_PUSH
#define S_REPLAY_BYTES      (4u << 20)
#define S_TICK_MS           2000            //  Maintenance poll, republish
#define S_BACKOFF_MIN_MS    100
#define S_BACKOFF_MAX_MS    2000
#define S_PERMANENT_TRIES   3
#define S_MAX_QUEUES        256             //  Distinct queues woken per replay

typedef struct {
    char reply_to [QN_ENV_MAX_NAME + 1];
    uint64_t corr;
    uint32_t items;
} s_waiter_t;

typedef struct {
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
    s_waiter_t *group;          //  Owned: appends waiting for the sync
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
    qn_buf_t flight_queues;     //  NUL-separated distinct queue names
    uint32_t flight_queue_count;
    bool solo;                  //  One record at a time (isolating a refusal)
    int tries;
    int64_t backoff_ms;
    uint64_t retry_timer;
    //  Counts
    uint64_t pending, failed, failed_bytes;
    bool published;
    uint64_t published_pending, published_failed;
    uint64_t event_seq;         //  "spool" events published so far
    //  Database and maintenance state
    bool db_up;
    bool maint_known, push_maint, pop_maint;
    uint64_t maint_gen, poll_gen;
    bool poll_in_flight;
    bool stopping;
    qn_buf_t io;                //  Reusable record buffer
    msgpack_sbuffer out;        //  Reusable encode buffer
} self_t;

static void s_replay_next (self_t *self);

// ------------------------------------------------------------------ files
static void
s_path (self_t *self, const char *name, char *out, size_t len)
{
    snprintf (out, len, "%s/%s", self->dir, name);
}

static void
s_seg_path (self_t *self, uint64_t seq, char *out, size_t len)
{
    char name [QN_SPOOL_NAME_MAX];
    qn_spool_segment_name (seq, name);
    s_path (self, name, out, len);
}

//  Makes directory entries (created, renamed, removed files) durable.
static void
s_fsync_dir (self_t *self)
{
    int fd = open (self->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        if (fsync (fd))
            qn_warn ("spool directory fsync failed: dir=%s error=%s", self->dir, strerror (errno));
        close (fd);
    }
}

//  mkdir -p. 0 or -1 with errno.
static int
s_mkdirs (const char *dir)
{
    char path [4096];
    snprintf (path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir (path, 0755) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    if (mkdir (path, 0755) && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat (path, &st))
        return -1;
    if (!S_ISDIR (st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static int
s_write_all (int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = write (fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        data += n;
        len -= (size_t) n;
    }
    return 0;
}

static int
s_pread_all (int fd, char *data, size_t len, uint64_t off)
{
    while (len) {
        ssize_t n = pread (fd, data, len, (off_t) off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        data += n;
        len -= (size_t) n;
        off += (uint64_t) n;
    }
    return 0;
}

//  Writes a whole small file durably under `name` (tmp, sync, rename).
static int
s_replace_file (self_t *self, const char *name, const char *data, size_t len)
{
    char tmp [4200], path [4096];
    s_path (self, name, path, sizeof path);
    snprintf (tmp, sizeof tmp, "%s.tmp", path);
    int fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    if (s_write_all (fd, data, len) || fdatasync (fd)) {
        int e = errno;
        close (fd);
        unlink (tmp);
        errno = e;
        return -1;
    }
    close (fd);
    if (rename (tmp, path))
        return -1;
    s_fsync_dir (self);
    return 0;
}

static void
s_checkpoint_save (self_t *self)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_spool_checkpoint_encode (&b, self->rseq, self->roff);
    //  A lost checkpoint only replays again, which the txn ids make harmless.
    if (s_replace_file (self, "checkpoint", b.data, b.len))
        qn_warn ("spool checkpoint not written: dir=%s error=%s", self->dir, strerror (errno));
    qn_buf_free (&b);
}

static int
s_checkpoint_load (self_t *self, uint64_t *seg, uint64_t *off)
{
    char path [4096], text [256];
    s_path (self, "checkpoint", path, sizeof path);
    int fd = open (path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read (fd, text, sizeof text);
    close (fd);
    if (n <= 0 || qn_spool_checkpoint_decode (text, (size_t) n, seg, off)) {
        qn_warn ("spool checkpoint unreadable, replaying from the first segment: dir=%s", self->dir);
        return -1;
    }
    return 0;
}

// ------------------------------------------------------------------ segment list
static void
s_segs_push (self_t *self, uint64_t seq)
{
    if (self->seg_count == self->seg_cap) {
        self->seg_cap = self->seg_cap ? self->seg_cap * 2 : 16;
        self->segs = qn_realloc (self->segs, self->seg_cap * sizeof *self->segs);
    }
    self->segs [self->seg_count++] = seq;
}

static void
s_segs_pop_front (self_t *self)
{
    memmove (self->segs, self->segs + 1, (self->seg_count - 1) * sizeof *self->segs);
    self->seg_count--;
}

static int
s_u64_cmp (const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

static void
s_close_read (self_t *self)
{
    if (self->rfd >= 0)
        close (self->rfd);
    self->rfd = -1;
}

static void
s_close_write (self_t *self)
{
    if (self->wfd >= 0)
        close (self->wfd);
    self->wfd = -1;
}

//  End of the replayable data of segment seq: the synced end for the write
//  segment, the file size for the others. Opens the read handle. 0, or -1
//  with errno.
static int
s_seg_end (self_t *self, uint64_t seq, uint64_t *end)
{
    if (self->rfd < 0 || self->rfd_seq != seq) {
        s_close_read (self);
        char path [4096];
        s_seg_path (self, seq, path, sizeof path);
        self->rfd = open (path, O_RDONLY | O_CLOEXEC);
        if (self->rfd < 0)
            return -1;
        self->rfd_seq = seq;
    }
    if (self->wfd >= 0 && seq == self->wseq) {
        *end = self->wsynced;
        return 0;
    }
    struct stat st;
    if (fstat (self->rfd, &st))
        return -1;
    *end = (uint64_t) st.st_size;
    return 0;
}

//  Removes segments that are fully replayed (the write segment too, once
//  idle) and keeps the cursor on the first one left.
static void
s_advance (self_t *self)
{
    bool moved = false;
    while (self->seg_count) {
        uint64_t first = self->segs [0];
        if (self->rseq < first) {
            self->rseq = first;
            self->roff = 0;
            moved = true;
        }
        if (self->rseq == first) {
            uint64_t end = 0;
            if (s_seg_end (self, first, &end)) {
                if (errno != ENOENT) {
                    //  Unreadable is not replayed: leave it, say so.
                    qn_error ("spool segment unreadable: segment=%llu error=%s",
                              (unsigned long long) first, strerror (errno));
                    break;
                }
            }
            else
            if (self->roff < end)
                break;
            if (self->wfd >= 0 && first == self->wseq) {
                if (self->group_count || self->wsize > self->wsynced)
                    break;
                s_close_write (self);
            }
        }
        if (self->rfd_seq == first)
            s_close_read (self);
        char path [4096];
        s_seg_path (self, first, path, sizeof path);
        if (unlink (path) && errno != ENOENT)
            qn_warn ("spool segment not removed: file=%s error=%s", path, strerror (errno));
        s_segs_pop_front (self);
        self->rseq = self->seg_count ? self->segs [0] : self->next_seq;
        self->roff = 0;
        moved = true;
    }
    if (!self->seg_count && !self->in_flight)
        self->pending = 0;      //  Nothing on disk: nothing pending
    if (moved) {
        s_fsync_dir (self);
        s_checkpoint_save (self);
    }
}

// ------------------------------------------------------------------ events
static void
s_publish_stats (self_t *self, bool force)
{
    if (!force && self->published && self->published_pending == self->pending
    &&  self->published_failed == self->failed)
        return;
    msgpack_sbuffer_clear (&self->out);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 3);
    msgpack_pack_uint64 (&pk, self->pending);
    msgpack_pack_uint64 (&pk, self->failed);
    msgpack_pack_uint64 (&pk, ++self->event_seq);
    qn_publish (self->kernel, "spool", QN_MSG_SPOOL_STATS, self->out.data, self->out.size);
    self->published = true;
    self->published_pending = self->pending;
    self->published_failed = self->failed;
    qn_gauge_set (self->kernel, "spool_pending", (int64_t) self->pending);
}

static void
s_publish_maint (self_t *self)
{
    msgpack_sbuffer_clear (&self->out);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 2);
    self->push_maint ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
    self->pop_maint ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
    qn_publish (self->kernel, "maintenance", QN_MSG_CONFIG, self->out.data, self->out.size);
}

static void
s_publish_committed (self_t *self)
{
    const char *name = self->flight_queues.data;
    for (uint32_t i = 0; i < self->flight_queue_count; i++) {
        size_t len = strlen (name);
        msgpack_sbuffer_clear (&self->out);
        msgpack_packer pk;
        msgpack_packer_init (&pk, &self->out, msgpack_sbuffer_write);
        msgpack_pack_array (&pk, 2);
        msgpack_pack_str (&pk, self->flight_tenant.len);
        msgpack_pack_str_body (&pk, self->flight_tenant.data, self->flight_tenant.len);
        msgpack_pack_str (&pk, len);
        msgpack_pack_str_body (&pk, name, len);
        qn_publish (self->kernel, "committed", QN_MSG_COMMITTED, self->out.data, self->out.size);
        name += len + 1;
    }
}

// ------------------------------------------------------------------ appends
//  Answers a request with a PG_RESULT body (the push route reads it with
//  qn_codec_call).
static void
s_answer (self_t *self, const char *to, uint64_t corr, bool ok, const char *sqlstate,
          const char *message)
{
    msgpack_sbuffer_clear (&self->out);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 5);
    ok ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
    msgpack_pack_str (&pk, 5);
    msgpack_pack_str_body (&pk, sqlstate, 5);
    msgpack_pack_str (&pk, strlen (message));
    msgpack_pack_str_body (&pk, message, strlen (message));
    msgpack_pack_str (&pk, 0);
    msgpack_pack_array (&pk, 0);
    qn_msg_t msg = {
        .to = to, .type = QN_MSG_PG_RESULT, .corr = corr, .flags = QN_ENV_FLAG_REPLY,
        .body = self->out.data, .body_len = self->out.size
    };
    if (qn_send (self->kernel, &msg))
        qn_count (self->kernel, "spool_reply_dropped", 1);
}

//  Makes the appends written since the last sync durable and answers them:
//  ok after fdatasync, else an error, with their bytes cut off the file.
static void
s_group_flush (self_t *self)
{
    if (self->group_timer)
        qn_timer_cancel (self->kernel, self->group_timer);
    self->group_timer = 0;
    if (!self->group_count)
        return;
    char why [256] = "";
    if (self->wfd < 0 || fdatasync (self->wfd)) {
        snprintf (why, sizeof why, "spool write failed: fdatasync: %s (dir=%s)",
                  strerror (self->wfd < 0 ? EBADF : errno), self->dir);
        //  After a failed sync the page cache can no longer be trusted:
        //  drop what we answer as failed and start a fresh segment.
        if (self->wfd >= 0 && ftruncate (self->wfd, (off_t) self->wsynced))
            qn_warn ("spool truncate failed: error=%s", strerror (errno));
        self->wsize = self->wsynced;
        s_close_write (self);
        self->healthy = false;
        qn_error ("%s", why);
    }
    else {
        self->wsynced = self->wsize;
        self->healthy = true;
        qn_count (self->kernel, "spool_fsyncs", 1);
    }
    uint64_t items = 0;
    for (uint32_t i = 0; i < self->group_count; i++) {
        s_waiter_t *w = &self->group [i];
        s_answer (self, w->reply_to, w->corr, !why [0], why [0] ? "58030" : "00000", why);
        items += w->items;
    }
    self->group_count = 0;
    if (!why [0]) {
        self->pending += items;
        qn_count (self->kernel, "spool_appended", (int64_t) items);
    }
    s_publish_stats (self, false);
}

static void
s_group_sync (self_t *self)
{
    s_group_flush (self);
    s_replay_next (self);
}

static void
s_on_group_timer (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->group_timer = 0;
    s_group_sync (self);
}

//  Opens a new segment for appends. 0, or -1 with errno.
static int
s_open_write (self_t *self)
{
    if (s_mkdirs (self->dir))
        return -1;
    uint64_t seq;
    int fd = -1;
    //  A name taken by a stray file is skipped, never appended to.
    for (int tries = 0; fd < 0 && tries < 8; tries++) {
        seq = self->next_seq++;
        char path [4096];
        s_seg_path (self, seq, path, sizeof path);
        fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            return -1;
    }
    if (fd < 0)
        return -1;
    s_fsync_dir (self);
    s_segs_push (self, seq);
    self->wfd = fd;
    self->wseq = seq;
    self->wsize = self->wsynced = 0;
    return 0;
}

//  Writes one record (not yet synced). 0, or -1 with `why` set; a failed
//  write leaves nothing of the record behind.
static int
s_write_record (self_t *self, const char *body, size_t len, char *why, size_t why_len)
{
    if (self->wfd >= 0 && self->wsize >= S_ROTATE_BYTES) {
        s_group_flush (self);
        s_close_write (self);
    }
    if (self->wfd < 0 && s_open_write (self)) {
        snprintf (why, why_len, "spool write failed: %s (dir=%s)", strerror (errno), self->dir);
        return -1;
    }
    qn_buf_reset (&self->io);
    qn_spool_record_encode (&self->io, body, len);
    if (s_write_all (self->wfd, self->io.data, self->io.len)) {
        snprintf (why, why_len, "spool write failed: %s (dir=%s)", strerror (errno), self->dir);
        //  Cut the partial record off, or never append after it again.
        if (ftruncate (self->wfd, (off_t) self->wsize)) {
            s_group_flush (self);
            s_close_write (self);
        }
        return -1;
    }
    self->wsize += self->io.len;
    return 0;
}

static int
s_on_append (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    char to [QN_ENV_MAX_NAME + 1];
    memcpy (to, env->reply_to.ptr, env->reply_to.len);
    to [env->reply_to.len] = 0;
    int64_t items = qn_spool_body_check (env->body.ptr, env->body.len);
    if (items < 0) {
        s_answer (self, to, env->corr, false, "XX000", "malformed spool append");
        return QN_EPROTO;
    }
    char why [512];
    if (s_write_record (self, env->body.ptr, env->body.len, why, sizeof why)) {
        self->healthy = false;
        qn_error ("%s", why);
        qn_count (self->kernel, "spool_append_failed", 1);
        s_answer (self, to, env->corr, false, "58030", why);
        return 0;
    }
    if (self->group_count == self->group_cap) {
        self->group_cap = self->group_cap ? self->group_cap * 2 : 64;
        self->group = qn_realloc (self->group, self->group_cap * sizeof *self->group);
    }
    s_waiter_t *w = &self->group [self->group_count++];
    memcpy (w->reply_to, to, sizeof to);
    w->corr = env->corr;
    w->items = (uint32_t) items;
    if (self->config->spool_fsync_ms <= 0 || self->group_count >= S_GROUP_MAX)
        s_group_sync (self);
    else
    if (!self->group_timer)
        self->group_timer = qn_timer_add (self->kernel, (uint32_t) self->config->spool_fsync_ms,
                                          0, s_on_group_timer, NULL);
    return 0;
}

// ------------------------------------------------------------------ replay
//  Reads the record at `off` (before `end`) of the read segment into
//  self->io. Returns its size, 0 at the end, or -1 when it is damaged.
static int64_t
s_read_record (self_t *self, uint64_t off, uint64_t end)
{
    if (off >= end)
        return 0;
    if (end - off < QN_SPOOL_HEADER_LEN)
        return -1;
    qn_buf_reset (&self->io);
    qn_buf_reserve (&self->io, QN_SPOOL_HEADER_LEN);
    if (s_pread_all (self->rfd, self->io.data, QN_SPOOL_HEADER_LEN, off))
        return -1;
    uint32_t n = (uint32_t) (uint8_t) self->io.data [4] | (uint32_t) (uint8_t) self->io.data [5] << 8
               | (uint32_t) (uint8_t) self->io.data [6] << 16 | (uint32_t) (uint8_t) self->io.data [7] << 24;
    if (n > QN_SPOOL_MAX_BODY || end - off - QN_SPOOL_HEADER_LEN < n)
        return -1;
    qn_buf_reserve (&self->io, QN_SPOOL_HEADER_LEN + n);
    if (s_pread_all (self->rfd, self->io.data + QN_SPOOL_HEADER_LEN, n, off + QN_SPOOL_HEADER_LEN))
        return -1;
    self->io.len = QN_SPOOL_HEADER_LEN + n;
    const char *body;
    size_t body_len;
    return qn_spool_record_decode (self->io.data, self->io.len, &body, &body_len) > 0
         ? (int64_t) self->io.len : -1;
}

//  Copies segment seq from `off` to its end into a side file, then cuts
//  the segment there: damage with (possibly) good records after it is kept
//  for the operator, never deleted. Returns 0, or -1 (nothing changed).
static int
s_set_aside (self_t *self, uint64_t seq, uint64_t off, const char *what)
{
    char path [4096], side [4200];
    if (self->wfd >= 0 && seq == self->wseq) {
        s_group_flush (self);
        s_close_write (self);
    }
    s_close_read (self);
    s_seg_path (self, seq, path, sizeof path);
    snprintf (side, sizeof side, "%s.bad-%llu", path, (unsigned long long) off);
    int in = open (path, O_RDWR | O_CLOEXEC);
    int out = open (side, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    struct stat st;
    bool ok = in >= 0 && out >= 0 && !fstat (in, &st);
    uint64_t end = ok ? (uint64_t) st.st_size : 0;
    char buf [65536];
    for (uint64_t at = off; ok && at < end;) {
        size_t n = end - at < sizeof buf ? (size_t) (end - at) : sizeof buf;
        ok = !s_pread_all (in, buf, n, at) && !s_write_all (out, buf, n);
        at += n;
    }
    ok = ok && !fdatasync (out) && !ftruncate (in, (off_t) off) && !fdatasync (in);
    if (ok)
        qn_error ("spool segment damaged, tail set aside: file=%s offset=%llu bytes=%llu kept=%s "
                  "reason=%s", path, (unsigned long long) off, (unsigned long long) (end - off),
                  side, what);
    else
        qn_error ("spool segment damaged and could not be set aside: file=%s offset=%llu error=%s",
                  path, (unsigned long long) off, strerror (errno));
    if (in >= 0)
        close (in);
    if (out >= 0)
        close (out);
    return ok ? 0 : -1;
}

//  Remembers a queue name of the records in flight (distinct, bounded).
static void
s_flight_queue (self_t *self, const char *name, size_t len)
{
    const char *p = self->flight_queues.data;
    for (uint32_t i = 0; i < self->flight_queue_count; i++) {
        size_t plen = strlen (p);
        if (plen == len && (!len || !memcmp (p, name, len)))
            return;
        p += plen + 1;
    }
    if (self->flight_queue_count == S_MAX_QUEUES || (len && memchr (name, 0, len)))
        return;
    qn_buf_append (&self->flight_queues, name, len);
    qn_buf_putc (&self->flight_queues, 0);
    self->flight_queue_count++;
}

static void s_on_replay_reply (void *self_, void *arg, const qn_env_t *env);

static void
s_on_retry (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->retry_timer = 0;
    s_replay_next (self);
}

static void
s_retry_later (self_t *self, const char *sqlstate, const char *message)
{
    if (!self->backoff_ms)
        qn_warn ("spool replay failed, retrying: sqlstate=%s message=%s pending=%llu",
                 sqlstate, message, (unsigned long long) self->pending);
    else
        qn_debug ("spool replay failed, retrying: sqlstate=%s message=%s", sqlstate, message);
    self->backoff_ms = self->backoff_ms ? self->backoff_ms * 2 : S_BACKOFF_MIN_MS;
    if (self->backoff_ms > S_BACKOFF_MAX_MS)
        self->backoff_ms = S_BACKOFF_MAX_MS;
    if (!self->retry_timer)
        self->retry_timer = qn_timer_add (self->kernel, (uint32_t) self->backoff_ms, 0,
                                          s_on_retry, NULL);
}

typedef struct {
    msgpack_sbuffer items;      //  Packed items of the records taken
    msgpack_packer pk;
    uint64_t count;             //  Items
    uint32_t records;
} s_batch_t;

//  Adds the record in self->io (n bytes) to the batch. Returns 1 when
//  added, 0 when it belongs in a later batch (other tenant, batch full),
//  -1 when it does not decode.
static int
s_batch_add (self_t *self, s_batch_t *b, int64_t n)
{
    msgpack_unpacked rec;
    msgpack_unpacked_init (&rec);
    const msgpack_object *o = &rec.data;
    if (msgpack_unpack_next (&rec, self->io.data + QN_SPOOL_HEADER_LEN,
                             (size_t) n - QN_SPOOL_HEADER_LEN, NULL) != MSGPACK_UNPACK_SUCCESS
    ||  o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 2
    ||  o->via.array.ptr [0].type != MSGPACK_OBJECT_STR
    ||  o->via.array.ptr [1].type != MSGPACK_OBJECT_ARRAY) {
        msgpack_unpacked_destroy (&rec);
        return -1;
    }
    const msgpack_object *tenant = &o->via.array.ptr [0];
    const msgpack_object *list = &o->via.array.ptr [1];
    if (b->records && (tenant->via.str.size != self->flight_tenant.len
            || (tenant->via.str.size
                && memcmp (tenant->via.str.ptr, self->flight_tenant.data, tenant->via.str.size))
            || b->count + list->via.array.size > (uint64_t) self->config->push_max_batch)) {
        msgpack_unpacked_destroy (&rec);
        return 0;
    }
    if (!b->records)
        qn_buf_append (&self->flight_tenant, tenant->via.str.ptr, tenant->via.str.size);
    for (uint32_t i = 0; i < list->via.array.size; i++) {
        const msgpack_object *item = &list->via.array.ptr [i];
        msgpack_pack_object (&b->pk, *item);
        if (item->type == MSGPACK_OBJECT_ARRAY && item->via.array.size
        &&  item->via.array.ptr [0].type == MSGPACK_OBJECT_STR)
            s_flight_queue (self, item->via.array.ptr [0].via.str.ptr,
                            item->via.array.ptr [0].via.str.size);
    }
    b->count += list->via.array.size;
    b->records++;
    msgpack_unpacked_destroy (&rec);
    return 1;
}

static int s_move_to_failed (self_t *self, const char *sqlstate, const char *message);

//  Reads the next records (same tenant, bounded) and sends them to
//  pg_writer as one PG_PUSH [tenant, [items...]], unless replay must wait.
static void
s_replay_next (self_t *self)
{
    if (self->in_flight || self->retry_timer || self->stopping || !self->maint_known
    ||  self->push_maint)
        return;
    s_advance (self);
    uint64_t end = 0;
    if (!self->seg_count || s_seg_end (self, self->rseq, &end) || self->roff >= end)
        return;
    s_batch_t b = { .count = 0 };
    msgpack_sbuffer_init (&b.items);
    msgpack_packer_init (&b.pk, &b.items, msgpack_sbuffer_write);
    qn_buf_reset (&self->flight_tenant);
    qn_buf_reset (&self->flight_queues);
    self->flight_queue_count = 0;
    uint64_t off = self->roff;
    uint32_t max_records = self->solo ? 1 : S_REPLAY_RECORDS;
    int damage = 0;             //  1: bad frame, 2: frame fine, body not
    while (b.records < max_records && off - self->roff < S_REPLAY_BYTES) {
        int64_t n = s_read_record (self, off, end);
        int rc = n > 0 ? s_batch_add (self, &b, n) : 0;
        if (n < 0 || rc < 0)
            damage = n < 0 ? 1 : 2;
        if (n <= 0 || rc <= 0)
            break;
        off += (uint64_t) n;
    }
    if (!b.records) {
        msgpack_sbuffer_destroy (&b.items);
        //  Damage at the cursor: keep it aside, then go on after it.
        int rc = damage == 1 ? s_set_aside (self, self->rseq, off, "bad record at replay")
               : damage == 2 ? s_move_to_failed (self, "XX000", "spool record does not decode")
               : -1;
        if (rc)
            s_retry_later (self, "58030", "damaged spool record");
        else {
            s_advance (self);
            s_replay_next (self);
        }
        return;
    }
    msgpack_sbuffer_clear (&self->out);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 2);
    msgpack_pack_str (&pk, self->flight_tenant.len);
    msgpack_pack_str_body (&pk, self->flight_tenant.data, self->flight_tenant.len);
    msgpack_pack_array (&pk, (size_t) b.count);
    msgpack_sbuffer_write (&self->out, b.items.data, b.items.size);
    msgpack_sbuffer_destroy (&b.items);
    qn_msg_t msg = {
        .to = "pg_writer", .type = QN_MSG_PG_PUSH,
        .body = self->out.data, .body_len = self->out.size
    };
    uint32_t timeout = (uint32_t) self->config->db_statement_timeout_ms + 2000;
    if (qn_request (self->kernel, &msg, timeout, s_on_replay_reply, NULL)) {
        s_retry_later (self, "53300", "pg_writer is busy");
        return;
    }
    self->in_flight = true;
    self->flight_off = off;
    self->flight_items = b.count;
    self->flight_records = b.records;
}

//  Errors that a retry cannot fix: the records themselves are refused.
static bool
s_permanent (const char *sqlstate)
{
    return !strncmp (sqlstate, "22", 2) || !strncmp (sqlstate, "23", 2)
        || !strncmp (sqlstate, "54", 2) || !strcmp (sqlstate, "XX000");
}

//  Moves the record at the cursor to failed.qspool (synced) and steps over
//  it. Returns 0, or -1 (nothing changed: retried later).
static int
s_move_to_failed (self_t *self, const char *sqlstate, const char *message)
{
    uint64_t end = 0;
    if (s_seg_end (self, self->rseq, &end))
        return -1;
    int64_t n = s_read_record (self, self->roff, end);
    if (n <= 0)
        return -1;
    int64_t items = qn_spool_body_check (self->io.data + QN_SPOOL_HEADER_LEN,
                                         (size_t) n - QN_SPOOL_HEADER_LEN);
    char path [4096];
    s_path (self, "failed.qspool", path, sizeof path);
    int fd = open (path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 || s_write_all (fd, self->io.data, (size_t) n) || fdatasync (fd)) {
        qn_error ("spool failed-record file not writable: file=%s error=%s", path, strerror (errno));
        if (fd >= 0)
            close (fd);
        return -1;
    }
    close (fd);
    qn_error ("spool record refused by the database, moved aside: file=%s items=%lld "
              "sqlstate=%s message=%s", path, (long long) (items > 0 ? items : 1), sqlstate, message);
    uint64_t k = items > 0 ? (uint64_t) items : 1;
    self->failed += k;
    self->failed_bytes += (uint64_t) n;
    self->pending = self->pending > k ? self->pending - k : 0;
    self->roff += (uint64_t) n;
    qn_count (self->kernel, "spool_failed_items", (int64_t) k);
    s_checkpoint_save (self);
    return 0;
}

static void
s_on_replay_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->in_flight = false;
    if (self->stopping)
        return;
    msgpack_unpacked res;
    msgpack_unpacked_init (&res);
    const msgpack_object *o = &res.data;
    bool ok = false;
    char sqlstate [6] = "57014", message [256] = "no answer from pg_writer in time";
    uint64_t duplicates = 0;
    if (env && msgpack_unpack_next (&res, env->body.ptr, env->body.len, NULL) == MSGPACK_UNPACK_SUCCESS
    &&  o->type == MSGPACK_OBJECT_ARRAY && o->via.array.size == 5
    &&  o->via.array.ptr [0].type == MSGPACK_OBJECT_BOOLEAN) {
        const msgpack_object *f = o->via.array.ptr;
        ok = f [0].via.boolean;
        if (f [1].type == MSGPACK_OBJECT_STR && f [1].via.str.size == 5)
            memcpy (sqlstate, f [1].via.str.ptr, 5);
        if (f [2].type == MSGPACK_OBJECT_STR)
            snprintf (message, sizeof message, "%.*s", (int) f [2].via.str.size, f [2].via.str.ptr);
        for (uint32_t r = 0; ok && f [4].type == MSGPACK_OBJECT_ARRAY && r < f [4].via.array.size; r++) {
            const msgpack_object *row = &f [4].via.array.ptr [r];
            if (row->type == MSGPACK_OBJECT_ARRAY && row->via.array.size >= 5
            &&  row->via.array.ptr [4].type == MSGPACK_OBJECT_BOOLEAN && row->via.array.ptr [4].via.boolean)
                duplicates++;
        }
    }
    msgpack_unpacked_destroy (&res);
    if (ok) {
        self->roff = self->flight_off;
        self->pending = self->pending > self->flight_items ? self->pending - self->flight_items : 0;
        self->tries = 0;
        self->backoff_ms = 0;
        self->solo = false;
        qn_count (self->kernel, "spool_replayed", (int64_t) self->flight_items);
        qn_count (self->kernel, "spool_replay_duplicates", (int64_t) duplicates);
        qn_debug ("spool replayed: records=%u items=%llu duplicates=%llu pending=%llu",
                  self->flight_records, (unsigned long long) self->flight_items,
                  (unsigned long long) duplicates, (unsigned long long) self->pending);
        s_checkpoint_save (self);
        s_publish_committed (self);
        s_advance (self);
        s_publish_stats (self, false);
        s_replay_next (self);
        return;
    }
    if (s_permanent (sqlstate)) {
        if (self->flight_records > 1) {
            //  Find the record that is refused: one at a time from here.
            self->solo = true;
            self->tries = 0;
            s_replay_next (self);
            return;
        }
        if (++self->tries >= S_PERMANENT_TRIES && s_move_to_failed (self, sqlstate, message) == 0) {
            self->tries = 0;
            self->solo = false;
            s_advance (self);
            s_publish_stats (self, false);
            s_replay_next (self);
            return;
        }
    }
    s_retry_later (self, sqlstate, message);
}

// ------------------------------------------------------------------ maintenance flags
static void
s_on_poll_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->poll_in_flight = false;
    if (!env || self->stopping)
        return;
    msgpack_unpacked res;
    msgpack_unpacked_init (&res);
    const msgpack_object *rows = NULL;
    char why [300];
    if (!qn_pg_call_result (env, &res, &rows, why, sizeof why) || !rows
    ||  self->poll_gen != self->maint_gen) {
        //  Failed, or a route changed the flags while we asked: keep ours.
        msgpack_unpacked_destroy (&res);
        return;
    }
    bool flags [2] = { false, false };
    for (uint32_t r = 0; r < rows->via.array.size; r++) {
        const msgpack_object *row = &rows->via.array.ptr [r];
        if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size != 2
        ||  row->via.array.ptr [0].type != MSGPACK_OBJECT_STR
        ||  row->via.array.ptr [1].type != MSGPACK_OBJECT_STR)
            continue;
        const msgpack_object *key = &row->via.array.ptr [0], *val = &row->via.array.ptr [1];
        int which = key->via.str.size == 16 && !memcmp (key->via.str.ptr, "maintenance_mode", 16) ? 0
                  : key->via.str.size == 20 && !memcmp (key->via.str.ptr, "pop_maintenance_mode", 20) ? 1
                  : -1;
        qn_json_doc_t doc;
        qn_json_doc_init (&doc);
        if (which >= 0 && !qn_json_parse (&doc, val->via.str.ptr, val->via.str.size, 8)) {
            int t = qn_json_type (&doc, 0) == QN_JSON_OBJECT ? qn_json_get (&doc, 0, "enabled") : -1;
            if (t >= 0)
                qn_json_bool (&doc, t, &flags [which]);
        }
        qn_json_doc_free (&doc);
    }
    msgpack_unpacked_destroy (&res);
    bool changed = !self->maint_known || flags [0] != self->push_maint || flags [1] != self->pop_maint;
    bool resume = self->push_maint && !flags [0];
    self->maint_known = true;
    self->push_maint = flags [0];
    self->pop_maint = flags [1];
    if (changed) {
        qn_info ("maintenance flags: push=%s pop=%s", flags [0] ? "on" : "off", flags [1] ? "on" : "off");
        s_publish_maint (self);
    }
    if (changed || resume)
        s_replay_next (self);
}

static void
s_poll (self_t *self)
{
    if (self->poll_in_flight || self->stopping)
        return;
    static const char sql [] = "SELECT key, value FROM queen.maintenance_flags ()";
    msgpack_packer pk;
    qn_pg_call_begin (&self->out, &pk, 0, sql, 0);
    self->poll_gen = self->maint_gen;
    if (qn_pg_call_send (self->kernel, "pg_reader", &self->out, 5000, s_on_poll_reply, NULL) == 0)
        self->poll_in_flight = true;
}

static void
s_on_tick (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    s_poll (self);
    //  Events are hints and late subscribers miss the first ones: repeat.
    s_publish_stats (self, true);
    if (self->maint_known)
        s_publish_maint (self);
    s_replay_next (self);
}

//  "maintenance" [push, pop] from the system routes (ours are skipped).
static int
s_on_maintenance (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    if (env->from.len == 5 && !memcmp (env->from.ptr, "spool", 5))
        return 0;
    bool push_maint, pop_maint;
    if (qn_mp_scan (env->body.ptr, env->body.len, "bb", &push_maint, &pop_maint) == 0) {
        self->maint_gen++;
        self->maint_known = true;
        self->push_maint = push_maint;
        self->pop_maint = pop_maint;
        qn_info ("maintenance flags set: push=%s pop=%s", self->push_maint ? "on" : "off",
                 self->pop_maint ? "on" : "off");
        s_replay_next (self);
    }
    return 0;
}

static int
s_on_db (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    bool up;
    if (qn_mp_scan (env->body.ptr, env->body.len, "b", &up) == 0) {
        self->db_up = up;
        if (self->db_up) {
            //  Back: retry at once rather than at the end of the backoff.
            if (self->retry_timer)
                qn_timer_cancel (self->kernel, self->retry_timer);
            self->retry_timer = 0;
            self->backoff_ms = 0;
            s_poll (self);
            s_replay_next (self);
        }
    }
    return 0;
}

static int
s_on_stats (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    if (!env->reply_to.len)
        return 0;
    msgpack_sbuffer_clear (&self->out);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 6);
    msgpack_pack_uint64 (&pk, self->pending);
    msgpack_pack_uint64 (&pk, self->failed);
    self->db_up ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
    self->healthy ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
    msgpack_pack_uint64 (&pk, self->failed_bytes);
    msgpack_pack_uint64 (&pk, self->event_seq);
    return qn_reply (self->kernel, env, QN_MSG_SPOOL_STATS, self->out.data, self->out.size, NULL, 0);
}

// ------------------------------------------------------------------ recovery
//  Validates segment seq from `from` on: cuts a torn or damaged tail (a
//  damaged one with valid records after it is set aside first) and counts
//  the items still to replay. Returns the valid size, or -1 if unreadable.
static int64_t
s_recover_segment (self_t *self, uint64_t seq, uint64_t from)
{
    char path [4096];
    s_seg_path (self, seq, path, sizeof path);
    int fd = open (path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat (fd, &st)) {
        qn_error ("spool segment unreadable: file=%s error=%s", path, strerror (errno));
        if (fd >= 0)
            close (fd);
        return -1;
    }
    uint64_t size = (uint64_t) st.st_size;
    if (from >= size) {
        close (fd);
        return (int64_t) size;
    }
    char *map = mmap (NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close (fd);
    if (map == MAP_FAILED) {
        qn_error ("spool segment unreadable: file=%s error=%s", path, strerror (errno));
        return -1;
    }
    qn_spool_scan_t scan;
    qn_spool_scan (map + from, size - from, &scan);
    for (size_t at = 0; at < scan.valid_len;) {
        const char *body;
        size_t body_len;
        int64_t n = qn_spool_record_decode (map + from + at, scan.valid_len - at, &body, &body_len);
        int64_t items = qn_spool_body_check (body, body_len);
        self->pending += items > 0 ? (uint64_t) items : 1;
        at += (size_t) n;
    }
    uint64_t valid = from + scan.valid_len;
    bool damaged = scan.stop == QN_SPOOL_SCAN_BAD
                && qn_spool_resync (map + from, size - from, scan.valid_len) >= 0;
    munmap (map, size);
    if (damaged)
        s_set_aside (self, seq, valid, "bad record with valid records after it");
    else
    if (scan.stop != QN_SPOOL_SCAN_END) {
        int wfd = open (path, O_WRONLY | O_CLOEXEC);
        if (wfd < 0 || ftruncate (wfd, (off_t) valid) || fdatasync (wfd))
            qn_error ("spool torn tail not truncated: file=%s error=%s", path, strerror (errno));
        else
            qn_warn ("spool torn tail truncated: file=%s offset=%llu dropped_bytes=%llu",
                     path, (unsigned long long) valid, (unsigned long long) (size - valid));
        if (wfd >= 0)
            close (wfd);
    }
    return (int64_t) valid;
}

static void
s_count_failed (self_t *self)
{
    char path [4096];
    s_path (self, "failed.qspool", path, sizeof path);
    int fd = open (path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return;
    if (!fstat (fd, &st) && st.st_size > 0) {
        char *map = mmap (NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            const char *body;
            size_t body_len;
            for (size_t at = 0; at < (size_t) st.st_size;) {
                int64_t n = qn_spool_record_decode (map + at, (size_t) st.st_size - at, &body, &body_len);
                if (n <= 0)
                    break;
                int64_t items = qn_spool_body_check (body, body_len);
                self->failed += items > 0 ? (uint64_t) items : 1;
                at += (size_t) n;
            }
            munmap (map, (size_t) st.st_size);
        }
        self->failed_bytes = (uint64_t) st.st_size;
    }
    close (fd);
}

//  Finds the segments, drops those the checkpoint says are replayed,
//  validates the rest and reopens the last one for appends.
static void
s_recover (self_t *self)
{
    if (s_mkdirs (self->dir)) {
        qn_warn ("spool directory unusable: dir=%s error=%s", self->dir, strerror (errno));
        self->healthy = false;
        return;
    }
    uint64_t cseg = 0, coff = 0;
    s_checkpoint_load (self, &cseg, &coff);
    DIR *d = opendir (self->dir);
    if (!d) {
        qn_warn ("spool directory unreadable: dir=%s error=%s", self->dir, strerror (errno));
        self->healthy = false;
        return;
    }
    struct dirent *e;
    while ((e = readdir (d))) {
        uint64_t seq;
        if (qn_spool_segment_parse (e->d_name, &seq) == 0)
            s_segs_push (self, seq);
    }
    closedir (d);
    if (self->seg_count)
        qsort (self->segs, self->seg_count, sizeof *self->segs, s_u64_cmp);
    while (self->seg_count && self->segs [0] < cseg) {
        char path [4096];
        s_seg_path (self, self->segs [0], path, sizeof path);
        unlink (path);      //  Replayed before the last stop
        s_segs_pop_front (self);
    }
    self->rseq = cseg;
    self->roff = coff;
    int64_t last_size = -1;
    for (uint32_t i = 0; i < self->seg_count; i++) {
        uint64_t seq = self->segs [i];
        uint64_t from = seq == cseg ? coff : 0;
        last_size = s_recover_segment (self, seq, from);
        if (seq == cseg && last_size >= 0 && coff > (uint64_t) last_size) {
            qn_warn ("spool checkpoint past the end of its segment: segment=%llu offset=%llu size=%lld",
                     (unsigned long long) seq, (unsigned long long) coff, (long long) last_size);
            self->roff = (uint64_t) last_size;
        }
    }
    uint64_t top = self->seg_count ? self->segs [self->seg_count - 1] : 0;
    self->next_seq = (top > cseg ? top : cseg) + 1;
    if (self->seg_count && last_size >= 0 && (uint64_t) last_size < S_ROTATE_BYTES) {
        char path [4096];
        s_seg_path (self, top, path, sizeof path);
        self->wfd = open (path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (self->wfd >= 0) {
            self->wseq = top;
            self->wsize = self->wsynced = (uint64_t) last_size;
        }
    }
    s_count_failed (self);
    s_advance (self);
    qn_info ("spool ready: dir=%s segments=%u pending=%llu failed=%llu", self->dir,
             self->seg_count, (unsigned long long) self->pending, (unsigned long long) self->failed);
}

// ------------------------------------------------------------------ lifecycle
static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    s_recover (self);
    qn_subscribe (self->kernel, "db");
    qn_subscribe (self->kernel, "maintenance");
    s_publish_stats (self, true);
    s_poll (self);
    qn_timer_add (self->kernel, S_TICK_MS, S_TICK_MS, s_on_tick, NULL);
    //  Subscribers started after us (codec_http) hear the state soon.
    qn_timer_add (self->kernel, 50, 0, s_on_tick, NULL);
    qn_timer_add (self->kernel, 300, 0, s_on_tick, NULL);
    return 0;
}

static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    //  Everything answered so far is on disk; answer the rest now. A replay
    //  in flight is simply replayed again after the restart.
    self->stopping = true;
    s_group_flush (self);
    s_close_write (self);
    s_close_read (self);
    return QN_DONE;
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    if (!self)
        return;
    s_close_write (self);
    s_close_read (self);
    free (self->dir);
    free (self->segs);
    free (self->group);
    qn_buf_free (&self->flight_tenant);
    qn_buf_free (&self->flight_queues);
    qn_buf_free (&self->io);
    msgpack_sbuffer_destroy (&self->out);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { QN_MSG_SPOOL_APPEND, s_on_append },
    { QN_MSG_SPOOL_STATS, s_on_stats },
    { QN_MSG_DB_HEALTH, s_on_db },
    { QN_MSG_CONFIG, s_on_maintenance },
    { 0, NULL }
};

qn_actor_t *
qn_spool_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    self->dir = qn_strdup (config->file_buffer_dir && config->file_buffer_dir [0]
                           ? config->file_buffer_dir : ".");
    self->wfd = self->rfd = -1;
    self->healthy = true;
    self->db_up = true;         //  main connected before spawning us
    msgpack_sbuffer_init (&self->out);
    qn_actor_def_t def = {
        .name = "spool", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
