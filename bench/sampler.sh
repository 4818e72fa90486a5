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
#                 before prof on, sampling, after prof off (hooks in, samples
#                 kept) and after prof reset (hooks out)
#   cost per sample
#                 the same loop sampled at 4 KiB against 512 KiB: the time a
#                 sample adds (stack walk, bookkeeping, the free that ends it)
#   2-thread throughput
#                 a malloc-bound loop on 2 threads (bench/mtloop.c: random
#                 sizes of 16..4096 bytes, 256 live blocks per thread), at a
#                 mean sampling interval of 512 KiB and of 16 KiB: pairs per
#                 second with heapctl's sampler (glibc) and with jemalloc's
#                 own profiler (prof:true), each over the same allocator with
#                 no profiler
#   redis         Debian's redis-server (no prof:true) under redis-benchmark
#                 (set, get, lpush, lpop; pipelined): requests/s with no
#                 profiler, with heapctl's sampler on, and under heaptrack -p
#   pause         how long prof on (loading the sampler) and prof reset kept the
#                 borrowed thread stopped
#
# Sampling and not sampling alternate, prof on, off and reset between them,
# and each figure is a median: measured one after the other, once each, the
# same state gave figures 25% apart on a 2-CPU machine.  After a prof off
# the hooks stay (they see the frees of what was sampled); after a prof
# reset the sampler stays loaded with its hooks removed, so the state it
# leaves is the one to compare sampling with; the figures from prof off and
# from before the first prof on are printed beside it.
#
# Knobs (environment): BENCH_LOOP (2000000 pairs), BENCH_REDIS_N (500000
# requests per test), BENCH_SWITCHES (5 prof on/off pairs), BENCH_MT_PAIRS
# (2000000 pairs per thread and repetition, about 0.3 s a run with glibc),
# BENCH_MT_ROUNDS (7), BENCH_ONLY (fastpath, throughput or redis: that
# section alone).
set -u
export LC_ALL=C

build=${1:-build}
heapctl=$build/heapctl
loop=$build/bench/mallocloop
pairs=${BENCH_LOOP:-2000000}
rn=${BENCH_REDIS_N:-500000}
switches=${BENCH_SWITCHES:-5}
mtpairs=${BENCH_MT_PAIRS:-2000000}
mtrounds=${BENCH_MT_ROUNDS:-7}
only=${BENCH_ONLY:-}

die()
{
	echo "bench: $*" >&2
	exit 1
}

case $only in
'' | fastpath | throughput | redis) ;;
*) die "BENCH_ONLY=$only: expected fastpath, throughput or redis" ;;
esac
# want SECTION: whether to run it
want()
{
	[ -z "$only" ] || [ "$only" = "$1" ]
}

for f in "$heapctl" "$loop" "$build/bench/mtloop"; do
	[ -x "$f" ] || die "$f not found; run 'make' first"
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapctl-bench-smp.XXXXXX") || die "mktemp failed"
lpid=
rpid=
hpid=
mtpids=
cleanup()
{
	for p in $hpid $lpid $rpid $mtpids; do
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

# alternate MEASURE PID: "BEFORE ON_MEDIAN OFF_MEDIAN ON_PAUSE OFF_PAUSE LOW HIGH KEPT_MEDIAN":
# MEASURE before the first prof on, then $switches times once sampling, once
# after prof off (hooks in, samples kept) and once after prof reset (hooks
# out); the pauses are the first prof on's (it loads the sampler) and
# reset's (it takes the hooks out); LOW and HIGH the range of the figures
# taken with the hooks out, which is how far apart the same state measures
# here.
alternate()
{
	local measure=$1 pid=$2 before i p on=() off=() kept=() on_pause= off_pause=

	before=$("$measure")
	for ((i = 0; i < switches; i++)); do
		p=$(pause_of prof on -p "$pid")
		on_pause=${on_pause:-$p}
		on+=("$("$measure")")
		"$heapctl" prof off -p "$pid" >/dev/null 2>&1
		kept+=("$("$measure")")
		p=$(pause_of prof reset -p "$pid")
		off_pause=${off_pause:-$p}
		off+=("$("$measure")")
	done
	echo "$before $(median "${on[@]}") $(median "${off[@]}") $on_pause $off_pause" \
		"$(printf '%s\n' "$before" "${off[@]}" | sort -g | sed -n '1p;$p' | tr '\n' ' ')" \
		"$(median "${kept[@]}")"
}

# ---- the fast path ------------------------------------------------------------------
if want fastpath; then
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
	read -r before during after on_pause off_pause lo hi kept < <(alternate loop_run "$lpid")
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
	"$heapctl" prof reset -p "$lpid" >/dev/null 2>&1
	fine_ns=$(median "${fine[@]}")
	coarse_ns=$(median "${coarse[@]}")
	exec {lin}>&- {lout}<&-
	wait "$lpid" 2>/dev/null
	lpid=

	printf '%-24s sampling %s ns    after prof reset %s ns (+%s ns)    before prof on %s ns\n' \
		"fast path (malloc+free)" "$during" "$after" \
		"$(awk -v a="$during" -v b="$after" 'BEGIN { printf "%.1f", a - b }')" "$before"
	printf '%-24s off with samples kept (hooks in, not sampling) %s ns (+%s ns)\n' "" "$kept" \
		"$(awk -v a="$kept" -v b="$after" 'BEGIN { printf "%.1f", a - b }')"
	printf '%-24s (64-byte pairs, best of 5 x %s each time; medians of %s switches; not sampling: %s to %s ns;\n' \
		"" "$pairs" "$switches" "$lo" "$hi"
	printf '%-24s  goal: <= 10 ns added)\n' ""
	printf '%-24s %s ns    (pairs at 4 KiB %s ns, at 512 KiB %s ns: the difference over 64/4096 - 64/524288\n' \
		"cost per sample" \
		"$(awk -v f="$fine_ns" -v c="$coarse_ns" 'BEGIN { printf "%.0f", (f - c) / (64 / 4096 - 64 / 524288) }')" \
		"$fine_ns" "$coarse_ns"
	printf '%-24s  samples per pair; the stack walk, the table entry, and the free that takes it out)\n' ""
	printf '%-24s prof on (loads the sampler) %s us    prof reset (hooks out) %s us\n' "pause" \
		"$on_pause" "$off_pause"
fi

# ---- 2-thread throughput ------------------------------------------------------------
# Five processes of bench/mtloop.c, 2 threads each; a run is one answer: pairs
# per second, the median of 3 repetitions of $mtpairs pairs per thread.
#   glibc     "none", never touched, and "sampled", which prof on switches
#             between --sample-bytes 512K and 16K (never prof off: what it
#             leaves is not the no-profiler state)
#   jemalloc  LD_PRELOAD=libjemalloc.so.2: with no MALLOC_CONF, and with
#             prof:true,prof_active:true and lg_prof_sample:19 (512 KiB) or 14
#             (16 KiB)
# A round is four pairs of runs, each a profiled run beside one with no
# profiler of the same allocator: glibc none and sampled at 512 KiB, none and
# sampled at 16 KiB, jemalloc none and lg 19, none and lg 14; odd rounds run
# the profiled one of each pair first, so that drift favours neither.  A ratio
# is the median over the rounds of its pairs' ratios; each Mpairs/s figure the
# median of every run of that state.  The glibc figures come from two
# processes, so first the sampled one is measured beside "none" before its
# first prof on: how far apart two processes with no profiler measure.
throughput()
{
	local mt=$build/bench/mtloop je="" jok f r got b o lo hi before
	local g0=() g512=() g16=() rg512=() rg16=() j0=() j19=() j14=() rj19=() rj14=()
	local -A mtin=() mtout=() mtpid=()

	# mt_start NAME [VAR=VALUE...]: mtloop in that environment, stderr kept
	mt_start()
	{
		local name=$1 word fd
		shift
		mkfifo "$tmp/$name.in" "$tmp/$name.out" || die "mkfifo failed"
		(
			# not the others' pipes: their EOF would wait for this one
			for fd in "${mtin[@]}" "${mtout[@]}"; do
				exec {fd}>&-
			done
			exec env "$@" "$mt"
		) <"$tmp/$name.in" >"$tmp/$name.out" 2>"$tmp/$name.err" &
		mtpid[$name]=$!
		mtpids="$mtpids $!"
		exec {fd}>"$tmp/$name.in"
		mtin[$name]=$fd
		exec {fd}<"$tmp/$name.out"
		mtout[$name]=$fd
		read -t 10 -r word <&"$fd" && [ "$word" = ready ] || die "mtloop ($name) did not start"
	}
	# mt_run NAME [PAIRS]: one run; its pairs per second in $got
	mt_run()
	{
		echo "run ${2:-$mtpairs}" >&"${mtin[$1]}"
		read -t 300 -r got <&"${mtout[$1]}" || die "mtloop ($1) did not answer"
	}
	# mt_pair NONE PROFILED: a run of each, PROFILED first in odd rounds; $b, $o
	mt_pair()
	{
		if ((r % 2)); then
			mt_run "$2" && o=$got && mt_run "$1" && b=$got
		else
			mt_run "$1" && b=$got && mt_run "$2" && o=$got
		fi
	}
	# mt_stop: EOF to every mtloop started here, and wait for it
	mt_stop()
	{
		local n fd
		for n in "${!mtin[@]}"; do
			fd=${mtin[$n]}
			exec {fd}>&-
			fd=${mtout[$n]}
			exec {fd}<&-
			wait "${mtpid[$n]}" 2>/dev/null
		done
		mtpids=
	}
	ratio()
	{
		awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'
	}
	# cell RATIO PAIRS_PER_S
	cell()
	{
		awk -v r="$1" -v p="$2" 'BEGIN { printf "%.2f %6.1f Mpairs/s", r, p / 1e6 }'
	}

	for f in "/usr/lib/$(uname -m)-linux-gnu/libjemalloc.so.2" \
		$({ ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null |
			awk '$1 == "libjemalloc.so.2" { print $NF }') \
		/usr/lib64/libjemalloc.so.2 /usr/lib/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2; do
		[ -f "$f" ] && je=$f && break
	done

	mt_start gnone
	mt_start gsmp
	if grep -q libjemalloc "/proc/${mtpid[gsmp]}/maps"; then
		mt_stop
		printf '%-24s not measured: %s is linked with jemalloc, not a glibc process\n' \
			"2-thread throughput" "$mt"
		printf '%-24s (it needs a rule like bench/mallocloop'"'"'s in the Makefile, without JE_LIBS)\n' ""
		return 0
	fi
	if [ -n "$je" ]; then
		mt_start jnone LD_PRELOAD="$je"
		mt_start j19 LD_PRELOAD="$je" MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:19
		mt_start j14 LD_PRELOAD="$je" MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:14
		for f in jnone j19 j14; do
			grep -q libjemalloc "/proc/${mtpid[$f]}/maps" || je="not measured: LD_PRELOAD=$je did not load it"
		done
		grep -q "Invalid conf" "$tmp/j19.err" "$tmp/j14.err" &&
			je="not measured: this libjemalloc has no profiler (prof:true refused)"
	else
		je="not measured: libjemalloc.so.2 not found"
	fi
	case $je in
	"not measured"*) jok= ;;
	*) jok=1 ;;
	esac

	# warm up each process (arenas, page faults) with a short run
	for f in "${!mtin[@]}"; do
		mt_run "$f" $((mtpairs / 4 + 1))
	done
	r=0
	mt_pair gnone gsmp
	before=$(ratio "$o" "$b")
	g0+=("$b")

	for ((r = 0; r < mtrounds; r++)); do
		"$heapctl" prof on -p "${mtpid[gsmp]}" --sample-bytes 512K >/dev/null 2>"$tmp/hc.err" ||
			die "prof on --sample-bytes 512K failed on mtloop: $(tail -n 1 "$tmp/hc.err")"
		mt_pair gnone gsmp
		g0+=("$b") g512+=("$o") rg512+=("$(ratio "$o" "$b")")
		"$heapctl" prof on -p "${mtpid[gsmp]}" --sample-bytes 16K >/dev/null 2>"$tmp/hc.err" ||
			die "prof on --sample-bytes 16K failed on mtloop: $(tail -n 1 "$tmp/hc.err")"
		mt_pair gnone gsmp
		g0+=("$b") g16+=("$o") rg16+=("$(ratio "$o" "$b")")
		[ -n "$jok" ] || continue
		mt_pair jnone j19
		j0+=("$b") j19+=("$o") rj19+=("$(ratio "$o" "$b")")
		mt_pair jnone j14
		j0+=("$b") j14+=("$o") rj14+=("$(ratio "$o" "$b")")
	done
	mt_stop
	read -r lo hi < <(printf '%s\n' "${g0[@]}" | sort -g | sed -n '1p;$p' | tr '\n' ' ')

	local jn=$je j512=$je j16=$je
	if [ -n "$jok" ]; then
		jn=$(cell 1 "$(median "${j0[@]}")")
		j512=$(cell "$(median "${rj19[@]}")" "$(median "${j19[@]}")")
		j16=$(cell "$(median "${rj14[@]}")" "$(median "${j14[@]}")")
	fi
	printf '%-24s %-14s %-30s %s\n' "2-thread throughput" "mean interval" \
		"heapctl sampler (glibc)" "jemalloc prof:true"
	printf '%-24s %-14s %-30s %s\n' "" "none" "$(cell 1 "$(median "${g0[@]}")")" "$jn"
	printf '%-24s %-14s %-30s %s\n' "" "512 KiB" \
		"$(cell "$(median "${rg512[@]}")" "$(median "${g512[@]}")")" "$j512"
	printf '%-24s %-14s %-30s %s\n' "" "16 KiB" \
		"$(cell "$(median "${rg16[@]}")" "$(median "${g16[@]}")")" "$j16"
	printf '%-24s (ratio to no profiler, same allocator; bench/mtloop: malloc/free of 16..4096 bytes, 256 live\n' ""
	printf '%-24s  per thread, 2 KiB on average: a sample every 256 pairs at 512 KiB, every 8 at 16 KiB;\n' ""
	printf '%-24s  a run the median of 3 x %s pairs per thread; ratios the medians over %s rounds\n' \
		"" "$mtpairs" "$mtrounds"
	printf '%-24s  of a run against the no-profiler run beside it; glibc with no profiler %.1f to %.1f Mpairs/s,\n' \
		"" "$(awk -v v="$lo" 'BEGIN { print v / 1e6 }')" "$(awk -v v="$hi" 'BEGIN { print v / 1e6 }')"
	printf '%-24s  the process later sampled %.2f of it before its first prof on)\n' "" "$before"
}
want throughput && throughput

# ---- redis ----------------------------------------------------------------------------
want redis || exit 0
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
read -r pristine with base onp _ lo hi _ < <(alternate rps "$rpid")
[ "$onp" != n/a ] || die "prof on failed on redis-server"
# what was sampled can be dumped
"$heapctl" prof on -p "$rpid" >/dev/null 2>&1 || die "prof on failed on redis-server"
"$heapctl" dump -p "$rpid" -o "$tmp/redis.heap" >/dev/null 2>&1 || die "dump failed on redis-server"
"$heapctl" prof off -p "$rpid" >/dev/null 2>&1 || die "prof off failed on redis-server"
"$heapctl" prof reset -p "$rpid" >/dev/null 2>&1 || die "prof reset failed on redis-server"
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
	wait "$hpid" 2>/dev/null
	# heaptrack's own fifo, named after its pid, which it leaves when stopped
	rm -f "${TMPDIR:-/tmp}/heaptrack_fifo$hpid" "/tmp/heaptrack_fifo$hpid"
	hpid=
fi
printf '%-24s none %s req/s    heapctl sampler %s req/s (%.2f of none; goal >= 0.95)    before prof on %s req/s\n' \
	"redis throughput" "$base" "$with" "$(awk -v a="$with" -v b="$base" 'BEGIN { print a / b }')" "$pristine"
printf '%-24s heaptrack -p %s\n' "" "$ht"
if command -v memleak-bpfcc >/dev/null; then
	printf '%-24s bcc memleak: installed but not measured here\n' ""
else
	printf '%-24s bcc memleak: not measured (bpfcc-tools not installed)\n' ""
fi
printf '%-24s (set, get, lpush, lpop; %s requests each, -P 16; medians of %s switches, "none" after prof reset;\n' \
	"" "$rn" "$switches"
printf '%-24s  not sampling: %s to %s req/s; heaptrack the median of 3 runs)\n' "" "$lo" "$hi"
