#!/bin/sh
# test/compose/base-image.sh - the Debian base image the Dockerfiles name
# (debian:bookworm-slim), made locally when no registry can be reached.
#
# Runs `debootstrap --variant=minbase bookworm` from the Debian mirror apt
# already uses, strips what a slim image does not carry (downloaded .debs,
# apt lists, documentation, man pages, locales), and imports the tree with
# `podman import` as docker.io/library/debian:bookworm-slim. Cached: does
# nothing when that image exists (QN_REBUILD_BASE=1 forces a rebuild). The
# root file system is kept in $QN_COMPOSE_CACHE (default
# /var/cache/queen-compose) between runs on the same machine.
set -eu
TAG=docker.io/library/debian:bookworm-slim
CACHE="${QN_COMPOSE_CACHE:-/var/cache/queen-compose}"
if [ "${QN_REBUILD_BASE:-0}" != 1 ] && podman image exists "$TAG"; then
    echo "base-image: $TAG present"
    exit 0
fi
MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
[ -n "$MIRROR" ] || MIRROR=$(awk '/^deb / { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
[ -n "$MIRROR" ] || MIRROR=http://deb.debian.org/debian
mkdir -p "$CACHE"
root="$CACHE/rootfs"
if [ ! -x "$root/bin/sh" ] || [ "${QN_REBUILD_BASE:-0}" = 1 ]; then
    rm -rf "$root"
    echo "base-image: debootstrap bookworm from $MIRROR (about a minute)"
    debootstrap --variant=minbase bookworm "$root" "$MIRROR" > "$CACHE/debootstrap.log" 2>&1 \
        || { tail -n 20 "$CACHE/debootstrap.log" >&2; exit 1; }
fi
# What a slim image does not carry; apt inside builds fetches lists anew.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
       "$root"/var/log/*.log "$root"/var/cache/debconf/*-old
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'locale.alias' -exec rm -rf {} + 2>/dev/null || true
# The same dpkg excludes as the official slim image, so later installs stay small.
mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
cat > "$root/etc/dpkg/dpkg.cfg.d/docker" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
tar -C "$root" -c . | podman import --change 'CMD ["bash"]' - "$TAG" >/dev/null
echo "base-image: $TAG imported ($(podman image inspect "$TAG" --format '{{.Size}}') bytes)"
