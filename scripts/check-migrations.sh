#!/bin/sh
# Migrations are append-only (schema/README.md). Checks, in the tree ROOT
# (default: this repository), that:
#   - every file listed in schema/migrations.lock is there with its sha256,
#     and every file listed `retired` is not;
#   - every migration file (schema/migrations/*.sql, schema/proxy/NNNN_*.sql)
#     is listed, and no number is listed twice in one directory (a retired
#     number included);
#   - the manifest only ever grew: every line it had in any earlier commit
#     of main (main, origin/main; HEAD when neither is there) is still in it.
# Prints one line per problem and a closing line; exits 1 on any problem.
# Usage: check-migrations.sh [ROOT]
set -eu
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
lock=schema/migrations.lock
if [ ! -f "$lock" ]; then
    echo "check-migrations: $lock: missing" >&2
    exit 1
fi
problems=0
bad () {
    echo "check-migrations: $*" >&2
    problems=$((problems+1))
}
entries=$(grep -v '^#' "$lock" | grep -v '^[[:space:]]*$' || true)

# The listed files, as they are now.
n=0
while read -r sum path rest; do
    [ -n "$sum" ] || continue
    n=$((n+1))
    if [ -n "$rest" ] || [ -z "$path" ]; then
        bad "$lock: not 'SHA256  PATH' or 'retired  PATH': $sum $path $rest"
    elif [ "$sum" = retired ]; then
        [ ! -e "$path" ] || bad "$path: retired in $lock, yet it is there (its number is never reused)"
    elif [ ! -f "$path" ]; then
        bad "$path: listed in $lock but missing: a released migration is never deleted"
    elif [ "$(sha256sum "$path" | cut -d' ' -f1)" != "$sum" ]; then
        bad "$path: changed since it was listed in $lock: a released migration is never edited; restore it and add the next number"
    fi
done <<EOF
$entries
EOF

# Every migration file is listed, each number once per directory.
for f in schema/migrations/*.sql schema/proxy/[0-9]*.sql; do
    [ -e "$f" ] || continue
    prefix=${f%/*}/$(basename "$f" | cut -c1-4)
    if echo "$entries" | awk -v p="$prefix" '$1 == "retired" && index($2, p) == 1 { found = 1 } END { exit !found }'; then
        bad "$f: its number is retired in $lock: take the next free number"
    elif ! echo "$entries" | awk -v p="$f" '$1 != "retired" && $2 == p { found = 1 } END { exit !found }'; then
        bad "$f: not listed in $lock: add its line (sha256sum $f >> $lock)"
    fi
done
dups=$(echo "$entries" | awk '{ n = split($2, a, "/"); print substr($2, 1, length($2) - length(a[n])) substr(a[n], 1, 4) }' |
       sort | uniq -d)
for d in $dups; do
    bad "$lock: migration number ${d##*/} listed twice in ${d%/*}/"
done

# The manifest only grows: every line main ever had is still there.
history="not a git checkout"
if git rev-parse --git-dir > /dev/null 2>&1; then
    refs=""
    for r in main origin/main; do
        git rev-parse -q --verify "$r^{commit}" > /dev/null && refs="$refs $r"
    done
    [ -n "$refs" ] || refs=HEAD
    # shellcheck disable=SC2086  # refs split on purpose
    commits=$(git rev-list $refs -- "$lock" | wc -l)
    history="$commits commits of$refs"
    # shellcheck disable=SC2086
    git log -p --format= $refs -- "$lock" | sed -n 's/^+\([^+#].*\)$/\1/p' | sort -u > "${TMPDIR:-/tmp}/check-migrations.$$"
    while read -r line; do
        [ -n "$line" ] || continue
        grep -qxF "$line" "$lock" ||
            bad "$lock: the line '$line' was on main and is gone: the manifest only grows"
    done < "${TMPDIR:-/tmp}/check-migrations.$$"
    rm -f "${TMPDIR:-/tmp}/check-migrations.$$"
fi

echo "migrations: $n listed, $problems problems (history: $history)"
[ "$problems" = 0 ]
