#!/bin/sh
# test/compose/fresh.sh - the README's first command on a fresh Debian 12
# root (issue 25), run by `make compose-test` before the cell.
#
# A throwaway container of the bare Debian base image (test/compose/
# base-image.sh: debootstrap minbase bookworm, none of Queen's packages)
# gets a copy of the tracked tree and `make`, which a newcomer needs to type
# the command at all. Then, timed:
#   1. `make run` in the background until the broker's /health answers 200
#      (it installs the runtime packages, builds, starts a private
#      PostgreSQL and the broker);
#   2. `make test-unit`, the first stage of `make test` (installs the test
#      packages, builds everything, runs the unit tests).
# The container is always removed. Environment: QN_FRESH_TIMEOUT (s for
# each step; default 1200).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)
cd "$ROOT"
LIMIT="${QN_FRESH_TIMEOUT:-1200}"
TAG=docker.io/library/debian:bookworm-slim
NAME="queen-fresh-$$"
WORK=$(mktemp -d /tmp/queen-fresh.XXXXXX)
cleanup () {
    rc=$?
    trap - EXIT
    podman rm -f -t 2 "$NAME" >/dev/null 2>&1 || true
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
. test/compose/podman-env.sh

sh test/compose/base-image.sh
#  The tracked files as they are in the work tree: a clean clone's content
git ls-files -z | tar --null -T - --ignore-failed-read -cf "$WORK/src.tar"
PORT=$(sh scripts/pg.sh freeport)
# shellcheck disable=SC2086
#  The machine's own trust store goes in as it is (this workplace reaches
#  the registries through a TLS proxy of its own): what the host trusts,
#  npm in the box trusts. Nothing of Queen's comes with it.
CA=/etc/ssl/certs/ca-certificates.crt
# shellcheck disable=SC2086
podman run -d $ULIMITS --name "$NAME" -p "127.0.0.1:$PORT:6632" -v "$WORK:/fresh:ro" \
    -v "$CA:/etc/queen-host-ca.crt:ro" -e NODE_EXTRA_CA_CERTS=/etc/queen-host-ca.crt \
    "$TAG" sleep infinity >/dev/null
in_box () { podman exec "$NAME" sh -c "$1"; }
in_box 'mkdir /src && tar -C /src -xf /fresh/src.tar'
t0=$(date +%s)
in_box 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends make >/dev/null' \
    || { echo "fresh: could not install make" >&2; exit 1; }
echo "fresh: make installed in $(( $(date +%s) - t0 )) s; nothing else of Queen's is in the root"
if in_box 'dpkg-query -W -f="\${Status}" node-llhttp postgresql-15 2>/dev/null | grep -q "install ok"'; then
    echo "fresh: the base image already holds Queen's packages: not a fresh root" >&2
    exit 1
fi

#  1. make run until /health answers
t0=$(date +%s)
podman exec -d "$NAME" sh -c 'cd /src && exec make run > /src/run.log 2>&1' >/dev/null
until curl -sf -m 2 -o /dev/null "http://127.0.0.1:$PORT/health"; do
    if [ $(( $(date +%s) - t0 )) -ge "$LIMIT" ]; then
        echo "fresh: no healthy broker after $LIMIT s of make run; its output:" >&2
        in_box 'tail -n 40 /src/run.log' >&2 || true
        exit 1
    fi
    if ! in_box 'grep -qx -e make -e queen /proc/[0-9]*/comm 2>/dev/null'; then
        echo "fresh: make run ended before /health answered; its output:" >&2
        in_box 'tail -n 40 /src/run.log' >&2 || true
        exit 1
    fi
    sleep 2
done
echo "fresh: make run answered /health 200 after $(( $(date +%s) - t0 )) s (deps, build, PostgreSQL, broker)"
#  Ctrl-C of the README: the broker stops, then run.sh stops PostgreSQL
in_box 'for f in /proc/[0-9]*/comm; do [ "$(cat "$f" 2>/dev/null)" = queen ] && kill -TERM "$(basename "$(dirname "$f")")"; done; true' </dev/null

#  2. the first stage of make test
t0=$(date +%s)
if ! in_box "cd /src && timeout $LIMIT make test-unit > /src/unit.log 2>&1"; then
    echo "fresh: make test-unit failed; its output:" >&2
    in_box 'tail -n 60 /src/unit.log' >&2 || true
    exit 1
fi
in_box 'tail -n 3 /src/unit.log'
echo "fresh: make test-unit passed in $(( $(date +%s) - t0 )) s"
echo "fresh: 2 passed, 0 failed"
