#!/bin/sh
# Tests scripts/check-migrations.sh on throwaway copies of schema/ in a
# git repository of their own: the tree as it is passes; an edited, a
# deleted, an unlisted, a retired-number migration, a duplicated number and
# a manifest line that main had and lost each fail with their reason.
# Prints "check-migrations test: N passed, M failed".
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
check=$here/scripts/check-migrations.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
fresh () {      # a repository whose main holds today's schema/
    rm -rf "$tmp/r"; mkdir -p "$tmp/r/schema"
    cp -r "$here/schema/migrations" "$here/schema/proxy" "$here/schema/migrations.lock" "$tmp/r/schema/"
    git -C "$tmp/r" init -q -b main && git -C "$tmp/r" add -A &&
        git -C "$tmp/r" -c user.name=t -c user.email=t@t commit -qm base
}
expect () {     # name, wanted rc (0 or 1), wanted text in the output
    out=$(sh "$check" "$tmp/r" 2>&1); rc=$?
    if [ "$rc" = "$2" ] && echo "$out" | grep -qF "$3"; then
        pass=$((pass+1))
    else
        fail=$((fail+1)); echo "FAILED: $1 (rc $rc, wanted $2 and '$3'): $out"
    fi
}
fresh; expect "today's tree" 0 "0 problems (history: 1 commits of main)"
fresh; echo "-- edited" >> "$tmp/r/schema/migrations/0001_catalog.sql"
expect "an edited migration" 1 "0001_catalog.sql: changed since it was listed"
fresh; rm "$tmp/r/schema/proxy/0001_proxy.sql"
expect "a deleted migration" 1 "0001_proxy.sql: listed in schema/migrations.lock but missing"
fresh; echo "SELECT 1;" > "$tmp/r/schema/migrations/9001_new.sql"
expect "an unlisted migration" 1 "9001_new.sql: not listed"
fresh; echo "SELECT 1;" > "$tmp/r/schema/migrations/0020_again.sql"
expect "a retired number" 1 "0020_again.sql: its number is retired"
fresh; echo "SELECT 1;" > "$tmp/r/schema/migrations/0019_twice.sql"
(cd "$tmp/r" && sha256sum schema/migrations/0019_twice.sql >> schema/migrations.lock)
expect "a number listed twice" 1 "migration number 0019 listed twice in schema/migrations/"
fresh; sed -i '/0003_users.sql/d' "$tmp/r/schema/migrations.lock"; rm "$tmp/r/schema/proxy/0003_users.sql"
expect "a line main had, gone" 1 "0003_users.sql' was on main and is gone"
echo "check-migrations test: $pass passed, $fail failed"
[ "$fail" = 0 ]
