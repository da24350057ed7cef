#!/bin/sh
# Installs the Debian packages Queen needs to build, run, test and bench.
# Idempotent and quiet when everything is already there.
set -eu
PKGS="build-essential pkg-config libpq-dev libzmq3-dev libmsgpack-dev libsodium-dev
libssl-dev libcmocka-dev node-llhttp libcurl4-openssl-dev postgresql-15
postgresql-client-15 curl jq nodejs wrk clang libclang-rt-14-dev procps iproute2"
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
if [ "$(id -u)" != 0 ]; then
    echo "deps: not root; install these packages first:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
