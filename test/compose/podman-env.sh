# test/compose/podman-env.sh - sourced by run.sh and fresh.sh (needs $WORK):
# podman on this kind of machine wants runtime runc (crun refuses hybrid
# cgroups) and explicit nofile/nproc limits (the defaults cannot be
# raised), both in a containers.conf of our own (CONTAINERS_CONF); ULIMITS
# holds the same limits for `podman build`.
export CONTAINERS_CONF="$WORK/containers.conf"
nofile=$(ulimit -Hn)
[ "$nofile" = unlimited ] && nofile=65536
cat > "$CONTAINERS_CONF" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=8192:8192"]
[engine]
runtime = "runc"
CONF
ULIMITS="--ulimit nofile=$nofile:$nofile --ulimit nproc=8192:8192"
