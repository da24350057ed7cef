/*  cmd/queen-verify/broker.c - a broker child process (--broker-bin, --chaos)
    Starts the broker binary on a free 127.0.0.1 port with its own spool
    directory (kept across restarts, so a push the broker spooled before a
    kill is replayed by the next one) and the PostgreSQL settings from the
    flags or the environment. With chaos it SIGKILLs the broker at random
    intervals and restarts it at once; an exit we did not cause is counted
    as a crash and the broker is restarted too.
    Owns      the child process, its spool directory, the log descriptor
    Failure   vf_broker_new fails when the binary is missing or no port or
              directory can be had; later start failures count as crashes
*/
#include "cmd/queen-verify/verify.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_RESTART_DELAY_MS 200  //  After an exit we did not cause

struct vf_broker_s {
    const vf_opts_t *opts;      //  Not owned
    int port;
    char url [64];
    char spool [64];            //  mkdtemp'd directory
    int log_fd;
    pid_t pid;                  //  0 while not running
    int64_t restart_at_ms;      //  When to start again (after a crash)
    int64_t next_kill_ms;
    uint64_t rng;
    int starts, kills, restarts, crashes;
    int final_status;           //  Exit status after vf_broker_stop
};

//  A port below Linux's ephemeral range that we can bind now.
static int
s_free_port (uint64_t *rng)
{
    for (int tries = 0; tries < 200; tries++) {
        int port = 20000 + (int) (vf_rand (rng) % 12000);
        int fd = socket (AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            return -1;
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
        a.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
        int rc = bind (fd, (struct sockaddr *) &a, sizeof a);
        close (fd);
        if (rc == 0)
            return port;
    }
    return -1;
}

static int64_t
s_next_interval_ms (vf_broker_t *self)
{
    double lo = self->opts->chaos_min_s, hi = self->opts->chaos_max_s;
    double u = (double) (vf_rand (&self->rng) >> 11) / (double) (1ULL << 53);
    return (int64_t) ((lo + (hi - lo) * u) * 1000.0);
}

//  Forks and execs the broker. The child dies with us (PDEATHSIG).
static int
s_start (vf_broker_t *self)
{
    const vf_opts_t *o = self->opts;
    char port [16];
    snprintf (port, sizeof port, "%d", self->port);
    dprintf (self->log_fd, "--- queen-verify: starting broker #%d on port %d ---\n",
             self->starts + 1, self->port);
    pid_t pid = fork ();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        prctl (PR_SET_PDEATHSIG, SIGKILL);
        setenv ("PORT", port, 1);
        setenv ("HOST", "127.0.0.1", 1);
        setenv ("FILE_BUFFER_DIR", self->spool, 1);
        setenv ("PG_HOST", o->pg_host, 1);
        if (o->pg_port)
            setenv ("PG_PORT", o->pg_port, 1);
        if (o->pg_db)
            setenv ("PG_DB", o->pg_db, 1);
        if (o->pg_user)
            setenv ("PG_USER", o->pg_user, 1);
        if (o->pg_password)
            setenv ("PG_PASSWORD", o->pg_password, 1);
        if (!getenv ("LOG_LEVEL"))
            setenv ("LOG_LEVEL", "warn", 1);
        dup2 (self->log_fd, 1);
        dup2 (self->log_fd, 2);
        int devnull = open ("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2 (devnull, 0);
        execl (o->broker_bin, o->broker_bin, (char *) NULL);
        dprintf (2, "queen-verify: cannot run %s: %s\n", o->broker_bin, strerror (errno));
        _exit (127);
    }
    self->pid = pid;
    self->starts++;
    return 0;
}

vf_broker_t *
vf_broker_new (const vf_opts_t *opts, char *err, size_t err_len)
{
    if (access (opts->broker_bin, X_OK) != 0) {
        snprintf (err, err_len, "broker binary %s: %s", opts->broker_bin, strerror (errno));
        return NULL;
    }
    vf_broker_t *self = qn_zalloc (sizeof *self);
    self->opts = opts;
    self->rng = (opts->seed ^ 0x9e3779b97f4a7c15ULL) | 1;
    self->log_fd = -1;
    self->port = s_free_port (&self->rng);
    snprintf (self->spool, sizeof self->spool, "/tmp/queen-verify-XXXXXX");
    if (self->port < 0 || !mkdtemp (self->spool)) {
        snprintf (err, err_len, "no free port or temporary directory: %s", strerror (errno));
        self->spool [0] = 0;
        vf_broker_destroy (&self);
        return NULL;
    }
    snprintf (self->url, sizeof self->url, "http://127.0.0.1:%d", self->port);
    const char *log = opts->broker_log ? opts->broker_log : "/dev/null";
    self->log_fd = open (log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (self->log_fd < 0 || s_start (self) < 0) {
        snprintf (err, err_len, "cannot start the broker (log %s): %s", log, strerror (errno));
        vf_broker_destroy (&self);
        return NULL;
    }
    self->next_kill_ms = vf_now_ms () + s_next_interval_ms (self);
    return self;
}

static int
s_rm (const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void) sb; (void) flag; (void) ftw;
    remove (path);
    return 0;
}

int
vf_broker_stop (vf_broker_t *self)
{
    if (self->pid > 0) {
        kill (self->pid, SIGTERM);
        int status = 0;
        int64_t deadline = vf_now_ms () + 20000;
        while (waitpid (self->pid, &status, WNOHANG) == 0) {
            if (vf_now_ms () > deadline) {
                kill (self->pid, SIGKILL);
                waitpid (self->pid, &status, 0);
                break;
            }
            usleep (20000);
        }
        self->pid = 0;
        self->final_status = WIFSIGNALED (status) ? 128 + WTERMSIG (status) : WEXITSTATUS (status);
        if (self->final_status)
            self->crashes++;
        dprintf (self->log_fd, "--- queen-verify: broker stopped, exit status %d ---\n",
                 self->final_status);
    }
    return self->final_status;
}

void
vf_broker_destroy (vf_broker_t **self_p)
{
    vf_broker_t *self = *self_p;
    if (!self)
        return;
    vf_broker_stop (self);
    if (self->spool [0])
        nftw (self->spool, s_rm, 16, FTW_DEPTH | FTW_PHYS);
    if (self->log_fd >= 0)
        close (self->log_fd);
    free (self);
    *self_p = NULL;
}

const char *
vf_broker_url (const vf_broker_t *self)
{
    return self->url;
}

void
vf_broker_tick (vf_broker_t *self, int64_t now_ms, bool chaos)
{
    int status;
    if (self->pid > 0 && waitpid (self->pid, &status, WNOHANG) == self->pid) {
        //  Not our doing: a crash, or a start that failed
        self->pid = 0;
        self->crashes++;
        self->restart_at_ms = now_ms + S_RESTART_DELAY_MS;
        dprintf (self->log_fd, "--- queen-verify: broker exited by itself (%s %d) ---\n",
                 WIFSIGNALED (status) ? "signal" : "status",
                 WIFSIGNALED (status) ? WTERMSIG (status) : WEXITSTATUS (status));
    }
    if (self->pid == 0 && now_ms >= self->restart_at_ms) {
        if (s_start (self) == 0)
            self->restarts++;
        else
            self->restart_at_ms = now_ms + S_RESTART_DELAY_MS;
        return;
    }
    bool may_kill = self->opts->chaos_kills <= 0 || self->kills < self->opts->chaos_kills;
    if (chaos && may_kill && self->pid > 0 && now_ms >= self->next_kill_ms) {
        kill (self->pid, SIGKILL);
        waitpid (self->pid, &status, 0);
        self->pid = 0;
        self->kills++;
        dprintf (self->log_fd, "--- queen-verify: SIGKILL #%d ---\n", self->kills);
        if (s_start (self) == 0)
            self->restarts++;
        else
            self->restart_at_ms = now_ms + S_RESTART_DELAY_MS;
        self->next_kill_ms = now_ms + s_next_interval_ms (self);
    }
}

int
vf_broker_kills (const vf_broker_t *self)
{
    return self ? self->kills : 0;
}

int
vf_broker_restarts (const vf_broker_t *self)
{
    return self ? self->restarts : 0;
}

int
vf_broker_final_status (const vf_broker_t *self)
{
    return self ? self->final_status : 0;
}

int
vf_broker_crashes (const vf_broker_t *self)
{
    return self ? self->crashes : 0;
}
