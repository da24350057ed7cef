#!/bin/sh
# test/compose/run.sh - the whole cell in real containers (make compose-test)
#
# Builds the Debian base image when no registry can be reached (cached:
# base-image.sh), the project image from the Dockerfile users build, and the
# stand-ins of compose.test.yaml; brings the cell of compose.yaml up with
# Docker Compose (docker-compose 1.29 talking to podman's Docker-compatible
# API on a private socket), waits for every health check, runs
# test/compose/cell.test.mjs against it, and always takes it down with
# `down -v` (containers, network, volumes), also when a step fails or the
# run is interrupted; then checks that nothing of the project is left.
#
# podman on this kind of machine: runtime runc (crun refuses hybrid
# cgroups), explicit nofile/nproc limits (the defaults cannot be raised),
# both in a containers.conf of our own (CONTAINERS_CONF). Without systemd
# podman does not schedule health checks, so a ticker here runs them
# (`podman healthcheck run`) every 2 s, as Docker would.
#
# Environment: QN_COMPOSE_TIMEOUT (whole run, s; default 1500),
# QN_COMPOSE_KEEP=1 (leave the cell up for a look; `down -v` by hand).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
cd "$ROOT"
LIMIT="${QN_COMPOSE_TIMEOUT:-1500}"
WORK=$(mktemp -d /tmp/queen-compose.XXXXXX)
PROJECT="queenct$$"
export COMPOSE_PROJECT_NAME="$PROJECT"
#  The image of this run under a tag of its own (compose.yaml names
#  ${QUEEN_IMAGE:-queen:local}), so two runs of different trees on one
#  machine never start each other's binaries; removed at the end.
export QUEEN_IMAGE="localhost/queen:$PROJECT"
. test/compose/podman-env.sh
SERVICE=""; TICKER=""; WATCHDOG=""
MAIN=$$
compose () {
    docker-compose -f compose.yaml -f compose.test.yaml "$@"
}
cleanup () {
    rc=$?
    trap "" INT TERM HUP
    trap - EXIT
    if [ -n "$SERVICE" ]; then
        if [ "${QN_COMPOSE_KEEP:-0}" = 1 ] && [ "$rc" = 0 ]; then
            echo "compose: left up (project $PROJECT)"
        else
            echo "compose: down -v (project $PROJECT)"
            compose down -v --remove-orphans -t 5 >"$WORK/down.log" 2>&1 \
                || { cat "$WORK/down.log" >&2; rc=1; }
            #  A container that its restart policy was bringing back while
            #  `down` ran (a crash-looping broker) can escape it: remove it,
            #  say so, then check that nothing is left.
            late=$(podman ps -a --filter "label=com.docker.compose.project=$PROJECT" -q)
            if [ -n "$late" ]; then
                echo "compose: down left $(echo "$late" | wc -l) restarting container(s); removing them" >&2
                # shellcheck disable=SC2086
                podman rm -f $late >/dev/null 2>&1 || true
                podman network ls -q | grep "^${PROJECT}_" | xargs -r podman network rm >/dev/null 2>&1 || true
                podman volume ls -q | grep "^${PROJECT}_" | xargs -r podman volume rm >/dev/null 2>&1 || true
            fi
            left=$(podman ps -a --filter "label=com.docker.compose.project=$PROJECT" -q | wc -l)
            nets=$(podman network ls -q | grep -c "^${PROJECT}_" || true)
            vols=$(podman volume ls -q | grep -c "^${PROJECT}_" || true)
            if [ "$left" != 0 ] || [ "$nets" != 0 ] || [ "$vols" != 0 ]; then
                echo "compose: left behind: $left containers, $nets networks, $vols volumes" >&2
                rc=1
            fi
        fi
    fi
    podman rmi "$QUEEN_IMAGE" >/dev/null 2>&1 || true
    [ -n "$TICKER" ] && kill "$TICKER" 2>/dev/null || true
    [ -n "$SERVICE" ] && kill "$SERVICE" 2>/dev/null || true
    [ -n "$WATCHDOG" ] && kill "$WATCHDOG" 2>/dev/null || true
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
(
    trap 'kill "$sp" 2>/dev/null; exit 0' TERM
    sleep "$LIMIT" & sp=$!
    wait "$sp"
    echo "compose: time limit of $LIMIT s reached" >&2
    kill -TERM "$MAIN" 2>/dev/null || true
) &
WATCHDOG=$!

for tool in podman docker-compose debootstrap node; do
    command -v "$tool" >/dev/null || { echo "compose: $tool not found (make deps)" >&2; exit 1; }
done

sh test/compose/base-image.sh
echo "compose: building queen:local and the stand-ins"
t0=$(date +%s)
# shellcheck disable=SC2086
podman build --format docker $ULIMITS -t "$QUEEN_IMAGE" . >"$WORK/build.log" 2>&1 \
    || { tail -n 30 "$WORK/build.log" >&2; exit 1; }
# shellcheck disable=SC2086
podman build --format docker $ULIMITS -t queen-test-postgres:15 test/compose/postgres \
    >"$WORK/build-pg.log" 2>&1 || { tail -n 30 "$WORK/build-pg.log" >&2; exit 1; }
# shellcheck disable=SC2086
node test/compose/s3/stage.mjs "$WORK/s3" >/dev/null
# shellcheck disable=SC2086
podman build --format docker $ULIMITS -t queen-test-s3:1 "$WORK/s3" \
    >"$WORK/build-s3.log" 2>&1 || { tail -n 30 "$WORK/build-s3.log" >&2; exit 1; }
echo "compose: images built in $(( $(date +%s) - t0 )) s; the queen image is $(podman image inspect "$QUEEN_IMAGE" --format '{{.Size}}') bytes"

podman system service --time=0 "unix://$WORK/podman.sock" >"$WORK/service.log" 2>&1 &
SERVICE=$!
export DOCKER_HOST="unix://$WORK/podman.sock"
n=0
until [ -S "$WORK/podman.sock" ] && docker-compose version >/dev/null 2>&1 && curl -sf --unix-socket "$WORK/podman.sock" http://d/_ping >/dev/null; do
    n=$((n + 1)); [ $n -lt 100 ] || { echo "compose: podman API did not start" >&2; cat "$WORK/service.log" >&2; exit 1; }
    sleep 0.1
done
(
    while :; do
        for c in $(podman ps --filter "label=com.docker.compose.project=$PROJECT" --format '{{.Names}}'); do
            podman healthcheck run "$c" >/dev/null 2>&1 || true
        done
        sleep 2
    done
) &
TICKER=$!

#  Published ports of this run (free ones, so a developer's broker or a
#  second run never clashes).
QUEEN_1_PORT=$(sh scripts/pg.sh freeport)
QUEEN_2_PORT=$(sh scripts/pg.sh freeport)
while [ "$QUEEN_2_PORT" = "$QUEEN_1_PORT" ]; do QUEEN_2_PORT=$(sh scripts/pg.sh freeport); done
USED=""
freeport () {
    while :; do
        p=$(sh scripts/pg.sh freeport)
        case " $USED " in *" $p "*) continue ;; esac
        USED="$USED $p"; echo "$p"; return
    done
}
QUEEN_1_PORT=$(freeport); USED="$QUEEN_1_PORT"
QUEEN_2_PORT=$(freeport); USED="$USED $QUEEN_2_PORT"
QUEEN_PROXY_PORT=$(freeport); USED="$USED $QUEEN_PROXY_PORT"
SINK_PORT=$(freeport); USED="$USED $SINK_PORT"
MINIO_PORT=$(freeport); USED="$USED $MINIO_PORT"
MINIO_CONSOLE_PORT=$(freeport)
#  Secrets of this run, never the file's local-use defaults.
TENANT_ASSERTION_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
MESH_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
MINIO_ROOT_USER="lake$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')"
MINIO_ROOT_PASSWORD=$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
export QUEEN_1_PORT QUEEN_2_PORT QUEEN_PROXY_PORT SINK_PORT MINIO_PORT MINIO_CONSOLE_PORT \
       TENANT_ASSERTION_SECRET MESH_SECRET MINIO_ROOT_USER MINIO_ROOT_PASSWORD
echo "compose: up (project $PROJECT; brokers on :$QUEEN_1_PORT and :$QUEEN_2_PORT, proxy on :$QUEEN_PROXY_PORT, bucket on :$MINIO_PORT)"
t0=$(date +%s)
#  Everything but the sink, which needs a tenant key: the test makes one
#  and starts it as docs/deploy.md says (QUEEN_SINK_KEY=... up queen-sink).
SERVICES="postgres queen-1 queen-2 proxy minio minio-init"
# shellcheck disable=SC2086
compose up -d --no-build $SERVICES >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; exit 1; }
n=0
while :; do
    #  Every running container healthy, every other one a one-shot
    #  (minio-init) that exited 0.
    total=$(podman ps -a --filter "label=com.docker.compose.project=$PROJECT" -q | wc -l)
    running=$(podman ps --filter "label=com.docker.compose.project=$PROJECT" -q | wc -l)
    healthy=$(podman ps --filter "label=com.docker.compose.project=$PROJECT" --filter health=healthy -q | wc -l)
    done0=$(podman ps -a --filter "label=com.docker.compose.project=$PROJECT" --filter status=exited --filter exited=0 -q | wc -l)
    [ "$total" -gt 0 ] && [ "$healthy" = "$running" ] && [ $((running + done0)) = "$total" ] && break
    n=$((n + 1))
    if [ $n -ge 120 ]; then
        echo "compose: not healthy after 240 s ($healthy of $total)" >&2
        podman ps -a --filter "label=com.docker.compose.project=$PROJECT" >&2
        compose logs --tail=40 >&2 || true
        exit 1
    fi
    sleep 2
done
echo "compose: $total containers healthy in $(( $(date +%s) - t0 )) s"

QN_CELL_PROJECT="$PROJECT" QN_CELL_URL_1="http://127.0.0.1:$QUEEN_1_PORT" \
QN_CELL_URL_2="http://127.0.0.1:$QUEEN_2_PORT" QN_CELL_PROXY="http://127.0.0.1:$QUEEN_PROXY_PORT" \
QN_CELL_SECRET="$TENANT_ASSERTION_SECRET" QN_CELL_SINK="http://127.0.0.1:$SINK_PORT" \
QN_CELL_S3="http://127.0.0.1:$MINIO_PORT" \
    node --test --test-concurrency=1 --test-reporter=spec --test-timeout=900000 \
         test/compose/cell.test.mjs
echo "compose: all passed"
