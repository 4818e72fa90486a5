#!/bin/bash
# SPDX-License-Identifier: MIT
#
# demo/run.sh BUILD_DIR
#
# A narrated tour of heapctl on a small leaking service (demo/leaky.c), in
# three acts:
#   1. the service started with nothing (glibc malloc, no LD_PRELOAD, no
#      environment): heapctl loads its own sampler into it and names the
#      leaking function, with no restart;
#   2. the same service linked with jemalloc and started with its profiler
#      available: heapctl drives jemalloc's own profiler, reports, purges;
#   3. the same service built static (gcc -static): heapctl maps its
#      freestanding sampler and hooks the allocator inline.
# Every step that matters is checked: the demo exits non-zero if heapctl
# does not find the leak.  Every process it starts is stopped on the way out.
# Run by "make demo"; needs BUILD_DIR/heapctl, BUILD_DIR/demo/leaky{,-jemalloc,-static}
# and jeprof (libjemalloc-dev).

set -eu
export LC_ALL=C

build=${1:-build}
heapctl=$build/heapctl
leaky=$build/demo/leaky
leaky_je=$build/demo/leaky-jemalloc
leaky_static=$build/demo/leaky-static
leak_fn=session_cache_leak

for f in "$heapctl" "$leaky" "$leaky_je" "$leaky_static"; do
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
svcs=()

# stop PID: SIGTERM, then SIGKILL after 5 s; reaps it.
stop()
{
	local i

	kill -TERM "$1" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

cleanup()
{
	local p

	# Best effort from here on: errexit must not skip the rest.
	set +e
	for p in "${svcs[@]}"; do
		kill -0 "$p" 2>/dev/null && stop "$p"
	done
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

act()
{
	printf '\n%s=== %s ===%s\n' "$bold" "$1" "$off"
}

# say TITLE LINE...: a step heading, then its explanation.
say()
{
	printf '\n%s* %s%s\n' "$bold" "$1" "$off"
	shift
	printf '  %s\n' "$@"
}

# show CMD...: echo a command line.  run CMD...: echo it, then run it.
show()
{
	printf '%s$ %s%s\n' "$dim" "$*" "$off"
}
run()
{
	show "$@"
	"$@"
}

fail()
{
	echo "demo: FAILED: $*" >&2
	exit 1
}

# check WHAT TOP: the leak was found if TOP is session_cache_leak.
check()
{
	if [ "$2" != "$leak_fn" ]; then
		fail "$1: the top growing function is '${2:-nothing}', not $leak_fn()"
	fi
	echo "=> ok: most of the growth is allocated in $2()"
}

# start NAME [VAR=VALUE...] PROGRAM: start it with a pidfile, wait until
# every thread runs, set $pid and remember it for cleanup.
start()
{
	local name=$1 i
	shift

	rm -f "$tmp/$name.pid"
	env "$@" "$tmp/$name.pid" </dev/null &
	pid=$!
	svcs+=("$pid")
	# leaky writes its pidfile once all its threads run.
	for ((i = 0; i < 100; i++)); do
		[ -s "$tmp/$name.pid" ] && break
		kill -0 "$pid" 2>/dev/null || fail "$name exited early"
		sleep 0.05
	done
	[ "$(cat "$tmp/$name.pid" 2>/dev/null)" = "$pid" ] || fail "$name did not write its pid"
	echo "service pid $pid"
}

# top_function FILE: the first row of leak's table of growing functions.
top_function()
{
	awk '/flat-delta/ { if (getline > 0) print $NF; exit }' "$1"
}

mib()
{
	awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'
}

# json_num KEY JSON: one numeric field of a flat JSON object.
json_num()
{
	local v

	v=$(printf '%s\n' "$2" | sed -n "s/.*\"$1\":\([0-9][0-9]*\).*/\1/p")
	echo "${v:-0}"
}

# ---------------------------------------------------------------------
act "Act 1: a service started with nothing"

say "Start a service that leaks" \
	"leaky runs three request workers and, on one request in six, caches a session" \
	"it never evicts: a few hundred KiB/s, all from $leak_fn()." \
	"It is started the way services are: plain glibc malloc, no LD_PRELOAD, no" \
	"environment, no profiler of any kind."
show "$leaky $tmp/leaky.pid &"
start leaky "$leaky"

say "Look at the heap from outside" \
	"heapctl attaches with ptrace, borrows one thread for about a millisecond to" \
	"call glibc's own mallinfo2(), restores it and detaches; the other threads keep" \
	"serving.  glibc has no heap profiler: 'info' says so."
run "$heapctl" stats -p "$pid"
show "$heapctl info -p $pid | grep -E '^(allocator|profiling|sampler) '"
"$heapctl" info -p "$pid" | grep -E '^(allocator|profiling|sampler) '

say "What grows?" \
	"heapctl leak loads heapctl's own sampling heap profiler into the running" \
	"process (written into a memfd, dlopen()ed by the process itself, hooked in its" \
	"GOT), picks a sampling interval from the allocation rate it measures, takes" \
	"two profiles 3 s apart, subtracts them and names the code that grew." \
	"Then it turns sampling back off: the process is left as it was found."
run "$heapctl" leak -p "$pid" --for 3 -o "$build/demo/leak-glibc.svg" | tee "$tmp/leak-glibc.txt"
check "act 1 (glibc)" "$(top_function "$tmp/leak-glibc.txt")"
echo "(open $build/demo/leak-glibc.svg in a browser: hover, click to zoom, search)"
run "$heapctl" prof status -p "$pid"

say "The same, step by step" \
	"prof on / dump / report are the parts leak is made of, for when the" \
	"profiles should be kept (or read by jeprof, or converted to pprof)."
run "$heapctl" prof on -p "$pid" --sample-bytes 16K
run sleep 1
run "$heapctl" dump -p "$pid" -o "$tmp/glibc.0.heap"
run sleep 2
run "$heapctl" dump -p "$pid" -o "$tmp/glibc.1.heap"
run "$heapctl" report --base "$tmp/glibc.0.heap" "$tmp/glibc.1.heap" -p "$pid" --top 3
"$heapctl" report --base "$tmp/glibc.0.heap" "$tmp/glibc.1.heap" -p "$pid" --format folded \
	>"$tmp/glibc.folded"
check "act 1 (report)" "$(sort -t' ' -k2 -n -r "$tmp/glibc.folded" | head -n 1 |
	sed 's/ [0-9]*$//; s/.*;//')"
say "Leave it as it was" \
	"'prof off' stops sampling and keeps the samples; 'prof reset' then forgets" \
	"them and puts every hooked GOT slot back."
run "$heapctl" prof off -p "$pid"
run "$heapctl" prof reset -p "$pid"
show "kill -TERM $pid"; stop "$pid"

# ---------------------------------------------------------------------
act "Act 2: the same service on jemalloc, its profiler available"

say "Start it linked with jemalloc" \
	"prof:true builds jemalloc's profiler into the heap at start-up, but" \
	"prof_active:false leaves it off, so it costs next to nothing until heapctl" \
	"turns it on.  heapctl drives the allocator's own profiler where one can run," \
	"and loads its sampler only where none can." \
	"lg_prof_sample:17: once on, sample about one allocation per 128 KiB."
conf=prof:true,prof_active:false,lg_prof_sample:17
show "MALLOC_CONF=$conf $leaky_je $tmp/leaky-jemalloc.pid &"
start leaky-jemalloc MALLOC_CONF=$conf "$leaky_je"
run "$heapctl" stats -p "$pid"

say "Switch jemalloc's profiler on, take two profiles" \
	"This flips prof.active.  Each dump is written by jemalloc inside the process," \
	"copied here and removed from the process side."
run "$heapctl" prof on -p "$pid"
run sleep 1
run "$heapctl" dump -p "$pid" -o "$tmp/base.heap"
run sleep 3
run "$heapctl" dump -p "$pid" -o "$tmp/later.heap"

say "Which call stacks grew" \
	"heapctl report subtracts the base profile and names the code in-process," \
	"without perl; jeprof (perl, addr2line) reads the same files."
run "$heapctl" report --base "$tmp/base.heap" "$tmp/later.heap" -p "$pid" --top 4
"$heapctl" report --base "$tmp/base.heap" "$tmp/later.heap" -p "$pid" --format folded \
	>"$tmp/growth.folded"
check "act 2 (jemalloc)" "$(sort -t' ' -k2 -n -r "$tmp/growth.folded" | head -n 1 |
	sed 's/ [0-9]*$//; s/.*;//')"
show "jeprof --text --base $tmp/base.heap $leaky_je $tmp/later.heap | head -n 6"
if jeprof --text --base "$tmp/base.heap" "$leaky_je" "$tmp/later.heap" \
	>"$tmp/jeprof.txt" 2>"$tmp/jeprof.err"; then
	head -n 6 "$tmp/jeprof.txt"
else
	echo "(jeprof failed: $(head -n 1 "$tmp/jeprof.err"))"
fi

say "Give dirty pages back to the OS, switch profiling off" \
	"Freed memory stays mapped as 'dirty' pages until jemalloc's decay returns it;" \
	"heapctl purge makes every arena return it now."
before=$("$heapctl" stats -p "$pid" --json)
run "$heapctl" purge -p "$pid"
after=$("$heapctl" stats -p "$pid" --json)
printf '\n        %12s   %12s\n' before after
for key in dirty rss; do
	printf '%-6s  %12s   %12s\n' "$key" "$(mib "$(json_num "$key" "$before")")" \
		"$(mib "$(json_num "$key" "$after")")"
done
run "$heapctl" prof off -p "$pid"
show "kill -TERM $pid"; stop "$pid"

# ---------------------------------------------------------------------
act "Act 3: the same service, static"

say "A static executable, started with nothing" \
	"gcc -static: no dynamic linker, no dlopen, no GOT to hook.  heapctl maps a" \
	"freestanding twin of its sampler into the process itself and hooks malloc," \
	"free and the rest at their entries (every other thread stopped for the" \
	"instant of the patch)."
show "$leaky_static $tmp/leaky-static.pid &"
start leaky-static "$leaky_static"
run "$heapctl" leak -p "$pid" --for 3 --top 3 -o "$build/demo/leak-static.svg" |
	tee "$tmp/leak-static.txt"
check "act 3 (static)" "$(top_function "$tmp/leak-static.txt")"
run "$heapctl" prof status -p "$pid"
show "kill -TERM $pid"; stop "$pid"

echo
echo "Done: the leak was found in all three.  Try it on your own service:  $heapctl list"
