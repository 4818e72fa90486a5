#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/sampler.sh BUILD_DIR
#
# What heapctl's injected sampler costs a process started without a
# profiler, next to what a user would use instead, in the same run.  Not a
# pass/fail test: it prints a table.
#
#   fast path     ns per malloc/free pair (64 B, glibc, bench/mallocloop.c):
#                 before prof on, sampling, and after prof off
#   cost per sample
#                 the same loop sampled at 4 KiB against 512 KiB: the time a
#                 sample adds (stack walk, bookkeeping, the free that ends it)
#   redis         Debian's redis-server (no prof:true) under redis-benchmark
#                 (set, get, lpush, lpop; pipelined): requests/s with no
#                 profiler, with heapctl's sampler on, and under heaptrack -p
#   pause         how long prof on (loading the sampler) and prof off kept the
#                 borrowed thread stopped
#
# Sampling and not sampling alternate, prof on and prof off between them,
# and each figure is a median: measured one after the other, once each, the
# same state gave figures 25% apart on a 2-CPU machine.  After a prof off
# the sampler stays loaded with its hooks removed, so the state it leaves
# is the one to compare sampling with; the figure from before the first
# prof on is printed beside it.
#
# Knobs (environment): BENCH_LOOP (2000000 pairs), BENCH_REDIS_N (500000
# requests per test), BENCH_SWITCHES (5 prof on/off pairs).
set -u
export LC_ALL=C

build=${1:-build}
heapctl=$build/heapctl
loop=$build/bench/mallocloop
pairs=${BENCH_LOOP:-2000000}
rn=${BENCH_REDIS_N:-500000}
switches=${BENCH_SWITCHES:-5}

die()
{
	echo "bench: $*" >&2
	exit 1
}

for f in "$heapctl" "$loop"; do
	[ -x "$f" ] || die "$f not found; run 'make' first"
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapctl-bench-smp.XXXXXX") || die "mktemp failed"
lpid=
rpid=
hpid=
cleanup()
{
	for p in $hpid $lpid $rpid; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# heapctl -v ARGS: prints the stopped time (us) of its borrow, or n/a.
pause_of()
{
	"$heapctl" -v "$@" 2>&1 >/dev/null |
		awk '/borrowed tid/ { for (i = 1; i <= NF; i++) if ($i == "for") { print $(i + 1); f = 1 } }
		     END { if (!f) print "n/a" }'
}

# median of the numbers given
median()
{
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 }
		END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# alternate MEASURE PID: "BEFORE ON_MEDIAN OFF_MEDIAN ON_PAUSE OFF_PAUSE LOW HIGH":
# MEASURE before the first prof on, then $switches times once sampling and once
# after prof off; the pauses are the first prof on's (it loads the sampler) and
# off's; LOW and HIGH the range of the figures taken while not sampling, which
# is how far apart the same state measures here.
alternate()
{
	local measure=$1 pid=$2 before i p on=() off=() on_pause= off_pause=

	before=$("$measure")
	for ((i = 0; i < switches; i++)); do
		p=$(pause_of prof on -p "$pid")
		on_pause=${on_pause:-$p}
		on+=("$("$measure")")
		p=$(pause_of prof off -p "$pid")
		off_pause=${off_pause:-$p}
		off+=("$("$measure")")
	done
	echo "$before $(median "${on[@]}") $(median "${off[@]}") $on_pause $off_pause" \
		"$(printf '%s\n' "$before" "${off[@]}" | sort -g | sed -n '1p;$p' | tr '\n' ' ')"
}

# ---- the fast path ------------------------------------------------------------------
mkfifo "$tmp/lin" "$tmp/lout" || die "mkfifo failed"
"$loop" <"$tmp/lin" >"$tmp/lout" &
lpid=$!
exec {lin}>"$tmp/lin" {lout}<"$tmp/lout"
read -t 10 -r word <&"$lout" && [ "$word" = ready ] || die "mallocloop did not start"
loop_run()
{
	local ns
	echo "run $pairs 64" >&"$lin"
	read -t 120 -r ns <&"$lout" || die "mallocloop did not answer"
	echo "$ns"
}
read -r before during after on_pause off_pause lo hi < <(alternate loop_run "$lpid")
[ "$on_pause" != n/a ] || die "prof on failed on mallocloop"
# the cost of one sample (its stack walk, its entry, and the free that takes
# it out): the same loop sampling one pair in 64 on average (4 KiB) against
# one in 8192 (512 KiB), in turn, each figure a median
fine=()
coarse=()
for ((i = 0; i < switches; i++)); do
	"$heapctl" prof on -p "$lpid" --sample-bytes 4K >/dev/null 2>&1 || die "prof on 4K failed"
	fine+=("$(loop_run)")
	"$heapctl" prof on -p "$lpid" --sample-bytes 512K >/dev/null 2>&1 || die "prof on 512K failed"
	coarse+=("$(loop_run)")
done
"$heapctl" prof off -p "$lpid" >/dev/null 2>&1
fine_ns=$(median "${fine[@]}")
coarse_ns=$(median "${coarse[@]}")
exec {lin}>&- {lout}<&-
wait "$lpid" 2>/dev/null
lpid=

printf '%-24s sampling %s ns    after prof off %s ns (+%s ns)    before prof on %s ns\n' \
	"fast path (malloc+free)" "$during" "$after" \
	"$(awk -v a="$during" -v b="$after" 'BEGIN { printf "%.1f", a - b }')" "$before"
printf '%-24s (64-byte pairs, best of 5 x %s each time; medians of %s switches; not sampling: %s to %s ns;\n' \
	"" "$pairs" "$switches" "$lo" "$hi"
printf '%-24s  goal: <= 10 ns added)\n' ""
printf '%-24s %s ns    (pairs at 4 KiB %s ns, at 512 KiB %s ns: the difference over 64/4096 - 64/524288\n' \
	"cost per sample" \
	"$(awk -v f="$fine_ns" -v c="$coarse_ns" 'BEGIN { printf "%.0f", (f - c) / (64 / 4096 - 64 / 524288) }')" \
	"$fine_ns" "$coarse_ns"
printf '%-24s  samples per pair; the stack walk, the table entry, and the free that takes it out)\n' ""
printf '%-24s prof on (loads the sampler) %s us    prof off %s us\n' "pause" "$on_pause" "$off_pause"

# ---- redis ----------------------------------------------------------------------------
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
	printf '%-24s not measured: redis-server or redis-benchmark not installed\n' "redis"
	exit 0
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null)
[ -n "$port" ] || die "no free port"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
	--dir "$tmp" >"$tmp/redis.log" 2>&1 &
rpid=$!
for _ in $(seq 100); do
	redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
	sleep 0.1
done
redis-cli -p "$port" ping 2>/dev/null | grep -q PONG || die "redis-server did not start"

# requests/s, summed over set, get, lpush and lpop
rps()
{
	redis-benchmark -p "$port" -t set,get,lpush,lpop -n "$rn" -P 16 -q 2>/dev/null |
		tr '\r' '\n' | awk '/requests per second/ { for (i = 1; i <= NF; i++)
			if ($(i + 1) == "requests") s += $i } END { printf "%.0f", s }'
}
read -r pristine with base onp _ lo hi < <(alternate rps "$rpid")
[ "$onp" != n/a ] || die "prof on failed on redis-server"
# what was sampled can be dumped
"$heapctl" prof on -p "$rpid" >/dev/null 2>&1 || die "prof on failed on redis-server"
"$heapctl" dump -p "$rpid" -o "$tmp/redis.heap" >/dev/null 2>&1 || die "dump failed on redis-server"
"$heapctl" prof off -p "$rpid" >/dev/null 2>&1 || die "prof off failed on redis-server"
ht="not measured: heaptrack not installed"
if command -v heaptrack >/dev/null; then
	# heaptrack -p injects through gdb's "call", then records every allocation
	(cd "$tmp" && exec heaptrack -p "$rpid") >"$tmp/ht.log" 2>&1 &
	hpid=$!
	for _ in $(seq 300); do
		grep -q "injection finished" "$tmp/ht.log" 2>/dev/null && break
		sleep 0.1
	done
	if grep -q "injection finished" "$tmp/ht.log"; then
		h=$(median "$(rps)" "$(rps)" "$(rps)")
		ht=$(awk -v a="$h" -v b="$base" 'BEGIN { printf "%.0f req/s (%.2f of none)", a, a / b }')
	else
		# its gdb is stuck in the call (it fails on CPUs with AMX state): let redis go
		pkill -KILL -P "$hpid" 2>/dev/null
		pkill -KILL -f "gdb --batch-silent.* -p $rpid " 2>/dev/null
		kill -CONT "$rpid" 2>/dev/null
		ht="could not inject within 30 s (gdb's call into redis never returned; redis stayed stopped meanwhile)"
	fi
	kill -INT "$hpid" 2>/dev/null
fi
printf '%-24s none %s req/s    heapctl sampler %s req/s (%.2f of none; goal >= 0.95)    before prof on %s req/s\n' \
	"redis throughput" "$base" "$with" "$(awk -v a="$with" -v b="$base" 'BEGIN { print a / b }')" "$pristine"
printf '%-24s heaptrack -p %s\n' "" "$ht"
if command -v memleak-bpfcc >/dev/null; then
	printf '%-24s bcc memleak: installed but not measured here\n' ""
else
	printf '%-24s bcc memleak: not measured (bpfcc-tools not installed)\n' ""
fi
printf '%-24s (set, get, lpush, lpop; %s requests each, -P 16; medians of %s switches, "none" after prof off;\n' \
	"" "$rn" "$switches"
printf '%-24s  not sampling: %s to %s req/s; heaptrack the median of 3 runs)\n' "" "$lo" "$hi"
