/*  actors/spool/store.c - the spool's files
    Segment files segment-<16 digits>.qspool (records, wire/spool_codec.h)
    rotated at 64 MiB; checkpoint (the replay position, replaced by
    rename); failed.qspool (records the database refused for good, kept
    for the operator); segment-*.qspool.bad-<offset> (a damaged tail with
    valid records after it, set aside at recovery or replay). At start,
    recovery drops replayed segments, cuts a torn tail and counts what is
    left to replay.
    Part of the spool actor (spool_int.h): no state of its own.
    Receives  nothing (called by spool.c and replay.c)
    Sends     nothing
    Owns      the spool directory's files through the actor's descriptors
    Failure   a write that fails leaves no partial record behind; damage
              is set aside, never deleted
*/
#include "actors/spool/spool_int.h"
#include "wire/spool_codec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int
s_u64_cmp (const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}


// ------------------------------------------------------------------ files
static void
s_path (qn_sp_t *self, const char *name, char *out, size_t len)
{
    snprintf (out, len, "%s/%s", self->dir, name);
}

static void
s_seg_path (qn_sp_t *self, uint64_t seq, char *out, size_t len)
{
    char name [QN_SPOOL_NAME_MAX];
    qn_spool_segment_name (seq, name);
    s_path (self, name, out, len);
}

//  Makes directory entries (created, renamed, removed files) durable.
static void
s_fsync_dir (qn_sp_t *self)
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
s_replace_file (qn_sp_t *self, const char *name, const char *data, size_t len)
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

void
qn_sp_checkpoint_save (qn_sp_t *self)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_spool_checkpoint_encode (&b, self->rseq, self->roff);
    //  A lost checkpoint only replays again, which the txn ids make harmless.
    if (s_replace_file (self, "checkpoint", b.data, b.len))
        qn_warn ("spool checkpoint not written: dir=%s error=%s", self->dir, strerror (errno));
    qn_buf_free (&b);
}

static int
s_checkpoint_load (qn_sp_t *self, uint64_t *seg, uint64_t *off)
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
s_segs_push (qn_sp_t *self, uint64_t seq)
{
    if (self->seg_count == self->seg_cap) {
        self->seg_cap = self->seg_cap ? self->seg_cap * 2 : 16;
        self->segs = qn_realloc (self->segs, self->seg_cap * sizeof *self->segs);
    }
    self->segs [self->seg_count++] = seq;
}

static void
s_segs_pop_front (qn_sp_t *self)
{
    memmove (self->segs, self->segs + 1, (self->seg_count - 1) * sizeof *self->segs);
    self->seg_count--;
}

void
qn_sp_close_read (qn_sp_t *self)
{
    if (self->rfd >= 0)
        close (self->rfd);
    self->rfd = -1;
}

void
qn_sp_close_write (qn_sp_t *self)
{
    if (self->wfd >= 0)
        close (self->wfd);
    self->wfd = -1;
}

//  End of the replayable data of segment seq: the synced end for the write
//  segment, the file size for the others. Opens the read handle. 0, or -1
//  with errno.
int
qn_sp_seg_end (qn_sp_t *self, uint64_t seq, uint64_t *end)
{
    if (self->rfd < 0 || self->rfd_seq != seq) {
        qn_sp_close_read (self);
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
void
qn_sp_advance (qn_sp_t *self)
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
            if (qn_sp_seg_end (self, first, &end)) {
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
                qn_sp_close_write (self);
            }
        }
        if (self->rfd_seq == first)
            qn_sp_close_read (self);
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
        qn_sp_checkpoint_save (self);
    }
}

//  Opens a new segment for appends. 0, or -1 with errno.
static int
s_open_write (qn_sp_t *self)
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
int
qn_sp_write_record (qn_sp_t *self, const char *body, size_t len, char *why, size_t why_len)
{
    if (self->wfd >= 0 && self->wsize >= QN_SP_ROTATE_BYTES) {
        qn_sp_group_flush (self);
        qn_sp_close_write (self);
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
            qn_sp_group_flush (self);
            qn_sp_close_write (self);
        }
        return -1;
    }
    self->wsize += self->io.len;
    return 0;
}

// ------------------------------------------------------------------ records at the cursor
//  Reads the record at `off` (before `end`) of the read segment into
//  self->io. Returns its size, 0 at the end, or -1 when it is damaged.
int64_t
qn_sp_read_record (qn_sp_t *self, uint64_t off, uint64_t end)
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
int
qn_sp_set_aside (qn_sp_t *self, uint64_t seq, uint64_t off, const char *what)
{
    char path [4096], side [4200];
    if (self->wfd >= 0 && seq == self->wseq) {
        qn_sp_group_flush (self);
        qn_sp_close_write (self);
    }
    qn_sp_close_read (self);
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

//  Moves the record at the cursor to failed.qspool (synced) and steps over
//  it. Returns 0, or -1 (nothing changed: retried later).
int
qn_sp_move_to_failed (qn_sp_t *self, const char *sqlstate, const char *message)
{
    uint64_t end = 0;
    if (qn_sp_seg_end (self, self->rseq, &end))
        return -1;
    int64_t n = qn_sp_read_record (self, self->roff, end);
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
    qn_sp_checkpoint_save (self);
    return 0;
}

// ------------------------------------------------------------------ recovery
//  Validates segment seq from `from` on: cuts a torn or damaged tail (a
//  damaged one with valid records after it is set aside first) and counts
//  the items still to replay. Returns the valid size, or -1 if unreadable.
static int64_t
s_recover_segment (qn_sp_t *self, uint64_t seq, uint64_t from)
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
        qn_sp_set_aside (self, seq, valid, "bad record with valid records after it");
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
s_count_failed (qn_sp_t *self)
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
void
qn_sp_recover (qn_sp_t *self)
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
    if (self->seg_count && last_size >= 0 && (uint64_t) last_size < QN_SP_ROTATE_BYTES) {
        char path [4096];
        s_seg_path (self, top, path, sizeof path);
        self->wfd = open (path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (self->wfd >= 0) {
            self->wseq = top;
            self->wsize = self->wsynced = (uint64_t) last_size;
        }
    }
    s_count_failed (self);
    qn_sp_advance (self);
    qn_info ("spool ready: dir=%s segments=%u pending=%llu failed=%llu", self->dir,
             self->seg_count, (unsigned long long) self->pending, (unsigned long long) self->failed);
}

