#!/bin/bash
# SPDX-License-Identifier: MIT
#
# demo/run.sh BUILD_DIR
#
# A narrated tour of heapctl on a small leaking service (demo/leaky.c):
# look at a live process's heap, switch profiling on without a restart,
# find the leaking call stack, give dirty memory back, and leave the
# process as it was.  Run by "make demo"; needs BUILD_DIR/heapctl,
# BUILD_DIR/demo/leaky and jeprof (libjemalloc-dev).

set -eu
export LC_ALL=C

build=${1:-build}
heapctl=$build/heapctl
leaky=$build/demo/leaky
svg=$build/demo/growth.svg

for f in "$heapctl" "$leaky"; do
	if [ ! -x "$f" ]; then
		echo "demo: $f not found; run 'make demo'" >&2
		exit 1
	fi
done
if ! command -v jeprof >/dev/null; then
	echo "demo: jeprof not found; install libjemalloc-dev (make deps)" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapctl-demo.XXXXXX")
svc=

cleanup()
{
	local i

	# Best effort from here on: errexit must not skip the rest.
	set +e
	if [ -n "$svc" ] && kill -0 "$svc" 2>/dev/null; then
		kill -TERM "$svc" 2>/dev/null
		for ((i = 0; i < 50; i++)); do
			kill -0 "$svc" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$svc" 2>/dev/null
		wait "$svc" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

if [ -t 1 ]; then
	bold=$(printf '\033[1m')
	dim=$(printf '\033[2m')
	off=$(printf '\033[0m')
else
	bold='' dim='' off=''
fi

step=0
# say TITLE LINE...: a step heading, then its explanation.
say()
{
	step=$((step + 1))
	printf '\n%s[%d/9] %s%s\n' "$bold" "$step" "$1" "$off"
	shift
	printf '      %s\n' "$@"
}

# run CMD...: echo the command line, then run it.
run()
{
	printf '%s$ %s%s\n' "$dim" "$*" "$off"
	"$@"
}

# json_num KEY JSON: one numeric field of a flat JSON object.
json_num()
{
	local v

	v=$(printf '%s\n' "$2" | sed -n "s/.*\"$1\":\([0-9][0-9]*\).*/\1/p")
	echo "${v:-0}"
}

mib()
{
	awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'
}

# ---------------------------------------------------------------------

say "Start a service that leaks" \
	"leaky runs three request workers and, on one request in six, caches a session" \
	"it never evicts: a few hundred KiB/s, all from session_cache_leak()." \
	"prof:true builds jemalloc's profiler into the heap at start-up, but" \
	"prof_active:false leaves it off: no stack is walked and nothing is recorded," \
	"so inactive profiling costs next to nothing and services can run like this in" \
	"production.  lg_prof_sample:17: once on, sample about one allocation per 128 KiB."
printf '%s$ %s%s\n' "$dim" \
	"MALLOC_CONF=prof:true,prof_active:false,lg_prof_sample:17 $leaky $tmp/leaky.pid &" "$off"
MALLOC_CONF=prof:true,prof_active:false,lg_prof_sample:17 "$leaky" "$tmp/leaky.pid" </dev/null &
svc=$!
# leaky writes its pidfile once all its threads run.
for ((i = 0; i < 100; i++)); do
	[ -s "$tmp/leaky.pid" ] && break
	if ! kill -0 "$svc" 2>/dev/null; then
		echo "demo: leaky exited early" >&2
		exit 1
	fi
	sleep 0.05
done
pid=$(cat "$tmp/leaky.pid" 2>/dev/null || true)
if [ "$pid" != "$svc" ]; then
	echo "demo: leaky did not write its pid" >&2
	exit 1
fi
echo "service pid $pid"

say "Look at the heap from outside" \
	"heapctl attaches with ptrace, borrows one thread for about a millisecond to" \
	"call the process's own mallctl(), restores it and detaches.  No restart, no" \
	"LD_PRELOAD; the other threads keep serving."
run "$heapctl" info -p "$pid"
echo
run "$heapctl" stats -p "$pid"

say "Switch profiling on" \
	"This flips jemalloc's prof.active; from now on sampled allocations record" \
	"their call stack."
run "$heapctl" prof on -p "$pid"

say "Take two heap profiles a few seconds apart" \
	"Each dump is written by the allocator inside the process, copied here, and" \
	"removed from the process side.  What grows between the two is the leak." \
	"Sampling runs for a second first, so that short-lived request buffers are" \
	"in both profiles and cancel out."
printf '%s$ sleep 1%s\n' "$dim" "$off"
sleep 1
run "$heapctl" dump -p "$pid" -o "$tmp/base.heap"
printf '%s$ sleep 3%s\n' "$dim" "$off"
sleep 3
run "$heapctl" dump -p "$pid" -o "$tmp/later.heap"

say "Which call stacks grew" \
	"heapctl report subtracts the base profile and names the code, in-process and" \
	"without perl: the stacks that grew, largest first, and a flamegraph of them."
run "$heapctl" report --base "$tmp/base.heap" "$tmp/later.heap" -p "$pid" --top 8
run "$heapctl" report --base "$tmp/base.heap" "$tmp/later.heap" -p "$pid" -o "$svg"
echo "(open $svg in a browser: hover, click to zoom, search)"
"$heapctl" report --base "$tmp/base.heap" "$tmp/later.heap" -p "$pid" --format folded \
	>"$tmp/growth.folded"
top=$(sort -t' ' -k2 -n -r "$tmp/growth.folded" | head -n 1 | sed 's/ [0-9]*$//; s/.*;//')
if [ -n "$top" ]; then
	echo "=> most of the growth is allocated in $top()"
fi
say "The same with jeprof, for comparison" \
	"jeprof (perl, addr2line) gives the same answer, more slowly."
printf '%s$ %s%s\n' "$dim" \
	"jeprof --text --base $tmp/base.heap $leaky $tmp/later.heap | head -n 6" "$off"
if jeprof --text --base "$tmp/base.heap" "$leaky" "$tmp/later.heap" \
	>"$tmp/jeprof.txt" 2>"$tmp/jeprof.err"; then
	head -n 6 "$tmp/jeprof.txt"
else
	echo "(jeprof failed: $(head -n 1 "$tmp/jeprof.err"))"
fi

say "Give dirty pages back to the OS" \
	"Freed memory stays mapped as 'dirty' pages until jemalloc's decay returns it." \
	"heapctl purge makes every arena return it now; RSS drops with it."
printf '%s$ %s%s\n' "$dim" "$heapctl stats -p $pid --json" "$off"
before=$("$heapctl" stats -p "$pid" --json)
echo "$before"
run "$heapctl" purge -p "$pid"
printf '%s$ %s%s\n' "$dim" "$heapctl stats -p $pid --json" "$off"
after=$("$heapctl" stats -p "$pid" --json)
echo "$after"
printf '\n        %12s   %12s\n' before after
for key in dirty rss; do
	printf '%-6s  %12s   %12s\n' "$key" "$(mib "$(json_num "$key" "$before")")" \
		"$(mib "$(json_num "$key" "$after")")"
done

say "Switch profiling off" \
	"Back to the state we found: sampling stops, the service runs as before."
run "$heapctl" prof off -p "$pid"
run "$heapctl" prof status -p "$pid" --json

say "Stop the service" \
	"It was only a demo.  The temporary directory with the profiles goes too."
run kill -TERM "$pid"
wait "$svc" 2>/dev/null || true
svc=
echo
echo "Done.  Try it on your own service:  $heapctl list"
