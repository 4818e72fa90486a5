#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Run the unit test programs and sum up their results.
#
#   tests/run-unit.sh BUILD_DIR BIN...
#
# Each program prints "PASS name" or "FAIL name: detail" per check group and
# exits non-zero on failure.  A program that crashes, hangs or fails without
# saying why is reported as a FAIL line of its own.  The last line is always
# "N passed, N failed"; the exit status is 1 if anything failed.

set -u

if [ $# -lt 1 ]; then
	echo "usage: $0 BUILD_DIR BIN..." >&2
	exit 64
fi
BUILD_DIR=$1
shift
export BUILD_DIR

# Per-program budget; unit tests do no I/O and should take milliseconds.
UNIT_TIMEOUT=${UNIT_TIMEOUT:-60}
TIMEOUT=
if command -v timeout >/dev/null 2>&1; then
	TIMEOUT="timeout -k 5 $UNIT_TIMEOUT"
fi

passed=0
failed=0

for bin in "$@"; do
	name=$(basename "$bin")
	if [ ! -x "$bin" ]; then
		echo "FAIL $name: $bin is missing or not executable"
		failed=$((failed + 1))
		continue
	fi

	out=$($TIMEOUT "$bin" </dev/null)
	rc=$?
	np=0
	nf=0
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		case $line in
		"PASS "*)
			np=$((np + 1))
			;;
		"FAIL "*)
			nf=$((nf + 1))
			;;
		esac
		printf '%s\n' "$line"
	done <<<"$out"

	if [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then
		case $rc in
		124) why="timed out after ${UNIT_TIMEOUT}s" ;;
		13[0-9] | 1[4-9][0-9]) why="killed by signal $((rc - 128))" ;;
		*) why="exited with status $rc" ;;
		esac
		echo "FAIL $name: $why without a FAIL line"
		nf=1
	elif [ "$rc" -eq 0 ] && [ "$np" -eq 0 ] && [ "$nf" -eq 0 ]; then
		echo "FAIL $name: ran no checks"
		nf=1
	fi
	passed=$((passed + np))
	failed=$((failed + nf))
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
