#!/bin/sh
# The rules lint and comparison of bench/coll_model (built here too as
# unit/coll_model: bench/ builds after test/), docs/rules.md "The lint":
#   1. rules/default.rules lints clean with --strict: no row shadowed,
#      unreachable or overlapping an earlier one;
#   2. a crafted file: the shadowed row is reported with its file and line,
#      the overlap too, and the exit status is 1;
#   3. --compare: a file with its provenance in directives and a dead row
#      left out decides every call as the flat file; a moved bound does not.
set -u
model="$top_builddir/test/unit/coll_model"
dir=$(mktemp -d "${TMPDIR:-/tmp}/bufpool-lint.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
status=0
fail() {
    echo "FAIL: $*"
    status=1
}

echo "== the default rules"
"$model" --lint "$top_srcdir/rules/default.rules" --strict >"$dir/default.txt" 2>&1
rc=$?
cat "$dir/default.txt"
[ "$rc" = 0 ] || fail "coll_model --lint --strict rules/default.rules: exit status $rc"
grep -q 'default.rules: [0-9]* rows: 0 shadowed, 0 unreachable, 0 overlaps, 0 unchecked;' \
    "$dir/default.txt" || fail "the default rules do not lint clean"

echo "== a shadowed row and an overlap"
cat >"$dir/bad.rules" <<'RULES'
bufpool-rules 1
@source p8 "16 cores, p = 8"
@from p8
bcast ranks=8.. bytes=..4K alg=previous measured="tuned's binomial"
bcast ranks=8..15 hosts=1 bytes=1K..2K alg=binomial
@from none
reduce bytes=..4K-1 alg=previous
reduce hosts=1 ranks=8.. bytes=2K..8K alg=binary
RULES
"$model" --lint "$dir/bad.rules" >"$dir/bad.txt" 2>&1
rc=$?
cat "$dir/bad.txt"
[ "$rc" = 1 ] || fail "a shadowed row: exit status $rc, expected 1"
grep -q "^$dir/bad.rules:5: shadowed: bcast ranks=8..15 hosts=1 bytes=1K..2K alg=binomial never decides a call: the row at line 4 matches" \
    "$dir/bad.txt" || fail "the shadowed row was not reported with its line"
grep -q "^$dir/bad.rules:8: overlap: .* line 7 is nowhere narrower: it decides ranks=8.. hosts=1 bytes=2K..4K-1" \
    "$dir/bad.txt" || fail "the overlap was not reported with its line"
# without the shadowed row, the overlap alone: exit 0, and 1 with --strict
sed '5d' "$dir/bad.rules" >"$dir/overlap.rules"
"$model" --lint "$dir/overlap.rules" >/dev/null 2>&1 || fail "an overlap alone is an error without --strict"
"$model" --lint "$dir/overlap.rules" --strict >/dev/null 2>&1 && fail "an overlap passes --strict"
# a file that does not parse: exit 2 with its line
printf 'bufpool-rules 1\n@from nowhere\n' >"$dir/broken.rules"
"$model" --lint "$dir/broken.rules" >"$dir/broken.txt" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "broken.rules:2: @from nowhere: no '@source nowhere'" "$dir/broken.txt" ||
    fail "a broken file: exit status $rc, $(cat "$dir/broken.txt")"

echo "== --compare"
cat >"$dir/flat.rules" <<'RULES'
bufpool-rules 1
bcast ranks=8.. bytes=..4K alg=previous measured="16 cores, p = 8: tuned's binomial"
bcast ranks=8..15 hosts=1 bytes=1K..2K alg=binomial measured="16 cores, p = 8"
reduce bytes=..4K-1 alg=previous
reduce hosts=1 ranks=8.. bytes=4K..8K alg=binary
RULES
sed -e '5d' -e 's/bytes=2K..8K/bytes=4K..8K/' "$dir/bad.rules" >"$dir/tidy.rules"
"$model" --lint "$dir/tidy.rules" --strict || fail "the tidied file does not lint clean"
"$model" --compare "$dir/flat.rules" "$dir/tidy.rules" || fail "--compare: the tidied file differs"
sed 's/bytes=4K..8K/bytes=4K..16K/' "$dir/tidy.rules" >"$dir/moved.rules"
"$model" --compare "$dir/flat.rules" "$dir/moved.rules" >"$dir/moved.txt"
rc=$?
cat "$dir/moved.txt"
[ "$rc" = 1 ] && grep -q "^reduce ranks=8 hosts=1 .* bytes=8193..16384:" "$dir/moved.txt" ||
    fail "--compare: a moved bound was not reported (exit status $rc)"

echo "== the decided column names every algorithm a row chooses"
# The node-level algorithms are not in the cost model's list: their names
# come from the decision's table (a model index printed "chain" for
# node_rsag, and read past the list for hier_node).
"$model" --hosts 1 --p 8 --coll allreduce --min 8 --max 2K --step 256 --raw >"$dir/raw.txt" 2>&1
cat "$dir/raw.txt" | grep '^pick'
grep -q '^pick allreduce 8 1 [0-9]* 8 .* node rule$' "$dir/raw.txt" &&
    grep -q '^pick allreduce 8 1 [0-9]* 2048 .* node_rsag rule$' "$dir/raw.txt" ||
    fail "coll_model --raw: the rows' node algorithms are not named"
exit $status
