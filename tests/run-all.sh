#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The whole suite: src/lib's layers, unit programs, the integration
# harness, the report pipeline end to end, then the installation checks.
#
#   tests/run-all.sh BUILD_DIR UNITBIN...
#
# Every "PASS x", "FAIL x: why" and "SKIP x: why" line of every part is
# printed as it comes and counted; each part's own "N passed, N failed"
# line is dropped, so the one combined line at the end counts every test
# once:  "N passed, N failed" (", N skipped" if any).  Exit status 1 if
# anything failed.
#
# CI=true is passed through: the harness itself fails a test whose
# dependency is missing, since `make deps` must have installed it.

set -u

if [ $# -lt 1 ]; then
	echo "usage: $0 BUILD_DIR UNITBIN..." >&2
	exit 64
fi
BUILD_DIR=$1
shift
here=$(cd "$(dirname "$0")" && pwd)

ITEST_TIMEOUT=${ITEST_TIMEOUT:-900}
TIMEOUT=
if command -v timeout >/dev/null 2>&1; then
	TIMEOUT="timeout -k 10 $ITEST_TIMEOUT"
fi

total_re='^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$'
passed=0
failed=0
skipped=0

# Count and echo result lines from stdin; per-part counts land in np/nf/ns.
# Read in this shell (process substitution), so the counters survive.
count() {
	local line

	np=0
	nf=0
	ns=0
	while IFS= read -r line; do
		[[ $line =~ $total_re ]] && continue
		case $line in
		"PASS "*) np=$((np + 1)) ;;
		"FAIL "*) nf=$((nf + 1)) ;;
		"SKIP "*) ns=$((ns + 1)) ;;
		esac
		printf '%s\n' "$line"
	done
}

# A part that exits non-zero must show up as at least one failure.
settle() {
	local name=$1 rc=$2 why

	# a part cut short is a failure of its own, even after others: its later tests never ran
	if [ "$rc" -ne 0 ] && { [ "$nf" -eq 0 ] || [ "$rc" -ge 124 ]; }; then
		case $rc in
		124) why="timed out (the tests after the last result line never ran)" ;;
		13[0-9] | 1[4-9][0-9]) why="killed by signal $((rc - 128))" ;;
		*) why="exited with status $rc" ;;
		esac
		echo "FAIL $name: $why"
		nf=$((nf + 1))
	fi
	passed=$((passed + np))
	failed=$((failed + nf))
	skipped=$((skipped + ns))
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 0. src/lib's layers: no include or call upwards, no two files including each other.
# The sources are what it reads: a lane that carries only the binaries (the
# aarch64 guest) says so.
if [ -x "$here/layers.sh" ] && [ -d "$here/../src/lib" ]; then
	count < <(
		"$here/layers.sh" "$here/.." "$BUILD_DIR" </dev/null
		echo $? >"$tmp/layers.rc"
	)
	settle layers "$(cat "$tmp/layers.rc" 2>/dev/null || echo 1)"
else
	echo "SKIP layers: no source tree here (the native lane checks it)"
	skipped=$((skipped + 1))
fi

# 1. Unit programs (run-unit.sh already turns crashes into FAIL lines).
count < <(
	"$here/run-unit.sh" "$BUILD_DIR" "$@" </dev/null
	echo $? >"$tmp/unit.rc"
)
settle unit "$(cat "$tmp/unit.rc" 2>/dev/null || echo 1)"

# 2. Integration harness.
itest=$BUILD_DIR/tests/itest
if [ -x "$itest" ]; then
	count < <(
		HEAPCTL=$BUILD_DIR/heapctl VICTIM_DIR=$BUILD_DIR/victims \
			$TIMEOUT "$itest" </dev/null
		echo $? >"$tmp/itest.rc"
	)
	settle itest "$(cat "$tmp/itest.rc" 2>/dev/null || echo 1)"
else
	echo "FAIL itest: $itest is missing"
	failed=$((failed + 1))
fi

# 3. Heap profile reports end to end (tests/report/run.sh): live victim,
# flamegraph.pl, Chromium, pprof, jeprof.
count < <(
	$TIMEOUT "$here/report/run.sh" "$BUILD_DIR" </dev/null
	echo $? >"$tmp/report.rc"
)
settle report "$(cat "$tmp/report.rc" 2>/dev/null || echo 1)"

# 4. Installation: man page and bash completion against --help, --version,
# make install/uninstall (tests/install/run.sh).
count < <(
	$TIMEOUT "$here/install/run.sh" "$BUILD_DIR" </dev/null
	echo $? >"$tmp/install.rc"
)
settle install "$(cat "$tmp/install.rc" 2>/dev/null || echo 1)"

line="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && line="$line, $skipped skipped"
echo "$line"
[ "$failed" -eq 0 ]
