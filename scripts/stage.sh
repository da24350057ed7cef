#!/bin/sh
# scripts/stage.sh - the stages of `make test`, timed.
#   stage.sh NAME CMD...  runs CMD (its output shown as it comes), then
#                         prints "stage NAME: N s, ok|FAILED (exit R)" and
#                         records the stage with the last "WORD: P passed,
#                         F failed" line CMD printed. On failure it prints
#                         the table so far and exits with CMD's status.
#   stage.sh --summary    prints the table of every recorded stage and the
#                         closing line "test: P passed, F failed" (the
#                         counts of all stages added up).
#   stage.sh --reset      forgets the recorded stages.
# Records live in $QN_STAGES (default build/test-stages.txt).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd -P)
REC="${QN_STAGES:-$ROOT/build/test-stages.txt}"
summary () {
    echo "======== make test: stages ========"
    awk -F'\t' '{ printf "%-12s %6d s  %-6s %s\n", $1, $2, ($3 == 0 ? "ok" : "FAILED"), $4 }' "$REC"
    awk -F'\t' '{ t += $2 } END { printf "%-12s %6d s\n", "total", t }' "$REC"
    awk -F'\t' '
        { if (split($4, w, " ") >= 4) { p += w[2]; f += w[4] } }
        END { printf "test: %d passed, %d failed\n", p, f }' "$REC"
}
case "${1:-}" in
    --summary) [ -f "$REC" ] && summary; exit 0 ;;
    --reset)   rm -f "$REC"; exit 0 ;;
esac
name=$1; shift
mkdir -p "$(dirname "$REC")"
log=$(mktemp /tmp/queen-stage.XXXXXX)
t0=$(date +%s)
echo "======== stage $name: $* ========"
{ "$@"; echo $? > "$log.rc"; } 2>&1 | tee "$log"
rc=$(cat "$log.rc" 2>/dev/null || echo 1)
secs=$(( $(date +%s) - t0 ))
counts=$(grep -E '^[a-z-]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
rm -f "$log" "$log.rc"
printf '%s\t%s\t%s\t%s\n' "$name" "$secs" "$rc" "$counts" >> "$REC"
if [ "$rc" = 0 ]; then
    echo "stage $name: $secs s, ok${counts:+ ($counts)}"
else
    echo "stage $name: $secs s, FAILED (exit $rc)${counts:+ ($counts)}"
    summary
fi
exit "$rc"
