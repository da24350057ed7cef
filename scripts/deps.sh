#!/bin/sh
# Installs the Debian packages Queen needs to build, run, test and bench.
# Idempotent and quiet when everything is already there.
set -eu
PKGS="build-essential pkg-config libpq-dev libzmq3-dev libmsgpack-dev libsodium-dev
libssl-dev libcmocka-dev node-llhttp libcurl4-openssl-dev postgresql-15
postgresql-client-15 curl jq nodejs wrk clang libclang-rt-14-dev procps iproute2
zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev librdkafka-dev kcat awscli
prometheus chromium tmux podman runc debootstrap docker-compose
golang-github-containernetworking-plugin-dnsname"
# opscli (issue 18): groff renders queenctl's manual page in its test
PKGS="$PKGS groff-base"
# ops (issue 18): zsh loads queenctl's zsh completion in its test
PKGS="$PKGS zsh"
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
echo "deps: installing$missing"
if [ "$(id -u)" != 0 ]; then
    echo "deps: not root; install these packages first:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# The real clients the tests drive (kafkajs, the AWS SDK, sqs-consumer,
# s3rver, DuckDB, playwright-core) and the dashboard's chart library, pinned
# by package-lock.json; reinstalled only when the lock file changed.
ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
stamp="$ROOT/node_modules/.queen-lock"
if [ ! -f "$stamp" ] || ! cmp -s "$ROOT/package-lock.json" "$stamp"; then
    command -v npm >/dev/null || { echo "deps: npm not found (it comes with nodejs)" >&2; exit 1; }
    echo "deps: npm ci"
    (cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    cp "$ROOT/package-lock.json" "$stamp"
fi
