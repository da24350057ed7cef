#!/bin/sh
# scripts/pg.sh - a private, throwaway PostgreSQL cluster for running and
# testing Queen. POSIX sh; works from any cwd.
#
#   pg.sh init DIR          create the cluster in DIR (idempotent)
#   pg.sh start DIR PORT    start it on 127.0.0.1:PORT, wait until ready (30 s)
#   pg.sh stop DIR          stop it (fast shutdown); no-op when not running
#   pg.sh status DIR        print "running port=N pid=P" (exit 0) or "stopped" (exit 3)
#   pg.sh freeport          print a free TCP port on 127.0.0.1
#   pg.sh user              print the OS user the server runs as
#
# PostgreSQL refuses to run as root, so as root the server runs as `postgres`
# when that user exists, else as a system user `queen` created here. Not root:
# it runs as the current user. Layout: DIR/data (cluster), DIR/log (server
# log), DIR/.s.PGSQL.PORT (unix socket), DIR/port (port of the last start).
# Database superuser `postgres`, password `postgres`, trust auth on loopback.
# Durability stays on (fsync, synchronous_commit): we benchmark with it.
#
# Environment: PG_BINDIR overrides the PostgreSQL binary directory.
set -eu
#  runuser and useradd live in sbin, which a non-login root PATH may lack
PATH="$PATH:/usr/sbin:/sbin"
export PATH

PROG=pg.sh

die () {
    echo "$PROG: $*" >&2
    exit 1
}

bindir () {
    if [ -n "${PG_BINDIR:-}" ]; then
        echo "$PG_BINDIR"
    elif [ -x /usr/lib/postgresql/15/bin/postgres ]; then
        echo /usr/lib/postgresql/15/bin
    else
        #  Any other installed major version, newest last
        found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
        [ -n "$found" ] || die "no PostgreSQL server found (install postgresql-15)"
        echo "$found"
    fi
}

#  The OS user the server runs as; creates `queen` when needed (root only).
run_user () {
    if [ "$(id -u)" != 0 ]; then
        id -un
    elif id postgres >/dev/null 2>&1; then
        echo postgres
    else
        if ! id queen >/dev/null 2>&1; then
            useradd -r -M -d /nonexistent -s /usr/sbin/nologin queen >/dev/null \
                || die "cannot create system user queen"
        fi
        echo queen
    fi
}

#  Run a command as the server's user, from / so an unreadable cwd is harmless.
as_user () {
    if [ "$(id -u)" = 0 ]; then
        (cd / && runuser -u "$USER_NAME" -- "$@")
    else
        (cd / && "$@")
    fi
}

#  Absolute path of DIR; init creates it, the others accept a missing one.
abs_dir () {
    [ -n "${1:-}" ] || die "missing DIR"
    if [ "$2" = init ]; then
        mkdir -p "$1"
    fi
    if [ -d "$1" ]; then
        (cd "$1" && pwd -P)
    else
        case "$1" in
            /*) echo "$1" ;;
            *)  echo "$(pwd -P)/$1" ;;
        esac
    fi
}

pid_of () {
    #  First line of postmaster.pid is the postmaster's pid
    if [ -f "$DIR/data/postmaster.pid" ]; then
        head -n 1 "$DIR/data/postmaster.pid"
    fi
}

is_running () {
    [ -f "$DIR/data/PG_VERSION" ] || return 1
    as_user "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1
}

#  SIGCONT the postmaster and its children, in case a test froze them.
thaw () {
    pid=$(pid_of)
    [ -n "$pid" ] || return 0
    kill -CONT "$pid" 2>/dev/null || return 0
    for child in $(ps -o pid= --ppid "$pid" 2>/dev/null); do
        kill -CONT "$child" 2>/dev/null || true
    done
}

cmd_init () {
    if [ -f "$DIR/data/PG_VERSION" ]; then
        write_conf
        return 0
    fi
    mkdir -p "$DIR/data" "$DIR/log"
    chmod 755 "$DIR"
    chmod 700 "$DIR/data"
    if [ "$(id -u)" = 0 ]; then
        chown "$USER_NAME:" "$DIR" "$DIR/data" "$DIR/log"
        #  Every parent of DIR must be searchable by the server's user
        if ! runuser -u "$USER_NAME" -- test -w "$DIR/data"; then
            die "user $USER_NAME cannot reach $DIR (a parent directory is not searchable); use a DIR under /tmp or /var/tmp"
        fi
    fi
    pwfile="$DIR/.pwfile"
    echo postgres > "$pwfile"
    if [ "$(id -u)" = 0 ]; then chown "$USER_NAME:" "$pwfile"; fi
    if ! as_user "$BIN/initdb" -D "$DIR/data" -U postgres --pwfile="$pwfile" \
            --auth-local=trust --auth-host=trust --encoding=UTF8 --no-locale \
            > "$DIR/log/initdb.log" 2>&1; then
        rm -f "$pwfile"
        cat "$DIR/log/initdb.log" >&2
        die "initdb failed in $DIR/data"
    fi
    rm -f "$pwfile"
    write_conf
    echo "$PROG: initialised $DIR (server user $USER_NAME)"
}

#  Our settings live in DIR/data/queen.conf, included once from
#  postgresql.conf, so re-running init updates them without a new cluster.
write_conf () {
    socket_dir="$DIR"
    #  sun_path holds 107 bytes; "/.s.PGSQL.NNNNN" takes 15 of them
    if [ ${#DIR} -gt 90 ]; then
        socket_dir=""
    fi
    conf="$DIR/data/queen.conf"
    cat > "$conf" <<EOF
# Written by scripts/pg.sh; rewritten on every init.
listen_addresses = '127.0.0.1'
unix_socket_directories = '$socket_dir'
unix_socket_permissions = 0777
max_connections = 200
max_locks_per_transaction = 256
shared_buffers = 256MB
fsync = on
synchronous_commit = on
full_page_writes = on
jit = off
log_line_prefix = '%m [%p] %q%u@%d '
log_min_duration_statement = -1
EOF
    if [ "$(id -u)" = 0 ]; then chown "$USER_NAME:" "$conf"; fi
    if ! grep -q "^include_if_exists = 'queen.conf'" "$DIR/data/postgresql.conf"; then
        echo "include_if_exists = 'queen.conf'" >> "$DIR/data/postgresql.conf"
    fi
}

cmd_start () {
    port="${1:-}"
    case "$port" in
        ''|*[!0-9]*) die "usage: pg.sh start DIR PORT" ;;
    esac
    [ -f "$DIR/data/PG_VERSION" ] || die "no cluster in $DIR (run: pg.sh init $DIR)"
    if is_running; then
        old=$(cat "$DIR/port" 2>/dev/null || echo "")
        if [ "$old" = "$port" ]; then
            wait_ready "$port"
            return 0
        fi
        die "already running in $DIR on port ${old:-?}"
    fi
    #  A stale pid file from a killed server is handled by postgres itself
    echo "$port" > "$DIR/port"
    if ! as_user "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log/postgresql.log" \
            -o "-p $port" -W start > /dev/null 2>&1; then
        tail -n 20 "$DIR/log/postgresql.log" >&2 2>/dev/null || true
        die "pg_ctl start failed"
    fi
    wait_ready "$port"
}

#  Polls pg_isready for up to 30 s; fails early if the server died.
wait_ready () {
    tries=0
    while [ $tries -lt 300 ]; do
        if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$1" -U postgres -d postgres; then
            return 0
        fi
        if [ $tries -gt 10 ] && ! is_running; then
            tail -n 20 "$DIR/log/postgresql.log" >&2 2>/dev/null || true
            die "server in $DIR exited during startup"
        fi
        sleep 0.1
        tries=$((tries + 1))
    done
    tail -n 20 "$DIR/log/postgresql.log" >&2 2>/dev/null || true
    die "server in $DIR not ready on port $1 after 30 s"
}

cmd_stop () {
    [ -f "$DIR/data/PG_VERSION" ] || return 0
    is_running || return 0
    thaw
    if ! as_user "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t 30 stop > /dev/null 2>&1; then
        echo "$PROG: fast shutdown timed out; immediate shutdown" >&2
        as_user "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w -t 30 stop > /dev/null 2>&1 \
            || die "cannot stop server in $DIR"
    fi
}

cmd_status () {
    if is_running; then
        echo "running port=$(cat "$DIR/port" 2>/dev/null || echo '?') pid=$(pid_of)"
        return 0
    fi
    echo stopped
    return 3
}

#  Random ports below Linux's ephemeral range (32768+), so an outgoing
#  connection cannot take the port between now and the caller's bind.
#  A port is taken when any TCP socket (v4 or v6, any state) uses it.
cmd_freeport () {
    tries=0
    while [ $tries -lt 100 ]; do
        n=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
        port=$((20000 + n % 12000))
        hex=$(printf ':%04X ' "$port")
        if ! cat /proc/net/tcp /proc/net/tcp6 2>/dev/null \
                | awk '{print $2 " "}' | grep -q "$hex"; then
            echo "$port"
            return 0
        fi
        tries=$((tries + 1))
    done
    die "no free port found"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
    freeport) cmd_freeport ;;
    user)     run_user ;;
    init|start|stop|status)
        DIR=$(abs_dir "${1:-}" "$cmd")
        [ $# -gt 0 ] && shift
        BIN=$(bindir)
        USER_NAME=$(run_user)
        "cmd_$cmd" "$@"
        ;;
    *)
        echo "usage: pg.sh init DIR | start DIR PORT | stop DIR | status DIR | freeport | user" >&2
        exit 2
        ;;
esac
