#!/bin/sh
# scripts/deps.sh [build|test] - installs what Queen needs, in one go.
#   build (default; `make deps`, `make run`, plain `make`'s hint): the Debian
#         packages that build and run the broker with a private PostgreSQL,
#         and the dashboard's chart library (npm package uplot, pinned by
#         dashboard/package-lock.json, into dashboard/node_modules).
#   test  (`make test`, `make bench`, `make compose-test`): the above plus
#         what the tests and benchmarks drive: sanitizer runtime, clang for
#         libFuzzer, cmocka, the real clients (kcat, awscli, librdkafka, the
#         npm packages of package-lock.json), Chromium, Prometheus, podman...
# Idempotent and quiet when everything is already there. As root it installs
# with apt-get; otherwise it lists what is missing and fails.
set -eu
PROFILE="${1:-build}"
case "$PROFILE" in build|test) ;; *) echo "deps: usage: deps.sh [build|test]" >&2; exit 2 ;; esac

PKGS="build-essential pkg-config libpq-dev libzmq3-dev libmsgpack-dev libsodium-dev
libssl-dev node-llhttp libcurl4-openssl-dev zlib1g-dev libsnappy-dev liblz4-dev
libzstd-dev postgresql-15 postgresql-client-15 curl jq nodejs ca-certificates"
if [ "$PROFILE" = test ]; then
    PKGS="$PKGS libcmocka-dev wrk clang libclang-rt-14-dev procps iproute2
librdkafka-dev kcat awscli prometheus chromium tmux podman runc debootstrap
docker-compose golang-github-containernetworking-plugin-dnsname"
    # opscli (issue 18): groff renders queenctl's manual page in its test,
    # zsh loads queenctl's zsh completion in its test
    PKGS="$PKGS groff-base zsh"
fi
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
install () {
    echo "deps ($PROFILE): installing $*"
    if [ "$(id -u)" != 0 ]; then
        echo "deps: not root; install these Debian packages first:$*" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
# shellcheck disable=SC2086
[ -z "$missing" ] || install $missing
# Debian's nodejs comes without npm (other builds of nodejs ship it)
command -v npm >/dev/null 2>&1 || install npm

# npm packages, each set pinned by its lock file and reinstalled only when
# that lock file changed: $1 = directory holding package-lock.json.
npm_ci () {
    stamp="$1/node_modules/.queen-lock"
    if [ ! -f "$stamp" ] || ! cmp -s "$1/package-lock.json" "$stamp"; then
        echo "deps ($PROFILE): npm ci in ${1#"$ROOT"/}"
        (cd "$1" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
        cp "$1/package-lock.json" "$stamp"
    fi
}
ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
# The dashboard's uPlot, embedded into the broker at build time
npm_ci "$ROOT/dashboard"
# The real clients the tests drive (kafkajs, the AWS SDK, sqs-consumer,
# s3rver, DuckDB, playwright-core)
[ "$PROFILE" = build ] || npm_ci "$ROOT"
