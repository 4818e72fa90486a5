#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/libc.sh BUILD_DIR
#
# heapctl's sampler in each kind of process it hooks, side by side, in one
# run: dynamic glibc and dynamic musl (GOT slots), static musl and static
# glibc (inline hooks at the functions' entries, the freestanding sampler).
# Not a pass/fail test: it prints two tables, and skips, saying why,
# whatever it cannot measure here.
#
#   fast path     ns per malloc/free pair (64 B; bench/mallocloop.c built
#                 for each C library, timing its own loop in its thread's
#                 CPU time, so that preemption by other work on the machine
#                 does not count, best of 5): with
#                 no hooks (before the first prof on and after each prof
#                 reset), hooked and not sampling (prof on --sample-bytes 1G:
#                 a sample every 16 M pairs), hooked after prof off (the
#                 hooks stay, sampling stops), and sampling at the default
#                 512 KiB; the added ns are each against the no-hook figure.
#                 Goal: <= 10 ns added, not sampling.
#   pauses        on fresh processes of bench/mtloop.c (3 threads, its 2
#                 workers waiting for work; BENCH_BUSY=1: allocating
#                 throughout, which on a 2-CPU machine leaves the borrowed
#                 thread waiting for a CPU at every ptrace stop): the borrowed thread's
#                 pause for the first prof on (it loads the sampler) and for
#                 prof reset after prof off (it removes the hooks), and for
#                 inline hooks the instant every thread is stopped while the
#                 entries are written; beside them what a user would do
#                 instead, restart the same program (bench/restart.c:
#                 fork+exec until it prints "ready"; the dynamic glibc one
#                 also with jemalloc's profiler preloaded), taken in turn
#                 with them, one each per process, so that both see the
#                 same machine.
#
# Each figure is a median: the hooked states alternate with prof reset
# (no hooks) $BENCH_SWITCHES times in one process, the pauses over
# $BENCH_FRESH processes.
#
# Knobs (environment): BENCH_LOOP (2000000 pairs a measure), BENCH_SWITCHES
# (7), BENCH_FRESH (7 processes per target), BENCH_BUSY (0), BENCH_ONLY (fastpath or
# pauses), BENCH_MUSL_WHY (set by the Makefile: why the musl programs were
# not built).
set -u
export LC_ALL=C

build=${1:-build}
heapctl=$build/heapctl
pairs=${BENCH_LOOP:-2000000}
switches=${BENCH_SWITCHES:-7}
fresh=${BENCH_FRESH:-7}
busy=${BENCH_BUSY:-0}
only=${BENCH_ONLY:-}
musl_why=${BENCH_MUSL_WHY:-}

die()
{
	echo "bench: $*" >&2
	exit 1
}

case $only in
'' | fastpath | pauses) ;;
*) die "BENCH_ONLY=$only: expected fastpath or pauses" ;;
esac
want()
{
	[ -z "$only" ] || [ "$only" = "$1" ]
}
for f in "$heapctl" "$build/bench/restart"; do
	[ -x "$f" ] || die "$f not found; run 'make' first"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapctl-bench-libc.XXXXXX") || die "mktemp failed"
lpid=
cleanup()
{
	if [ -n "$lpid" ]; then
		kill -KILL "$lpid" 2>/dev/null
		wait "$lpid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# the targets: "KEY|LABEL|SUFFIX|HOOKS", the programs $build/bench/{mallocloop,mtloop}SUFFIX
targets=(
	"gdyn|glibc dynamic||GOT"
	"mdyn|musl dynamic|_musl|GOT"
	"mstat|musl static|_musl_static|inline"
	"gstat|glibc static|_static|inline"
)
# why KEY cannot run here (empty: it can)
why_not()
{
	local key=$1 sfx=$2 p
	case $key in
	m*) [ -z "$musl_why" ] || { echo "$musl_why"; return; } ;;
	esac
	for p in mallocloop mtloop; do
		if [ ! -x "$build/bench/$p$sfx" ]; then
			case $key in
			m*) echo "${musl_why:-$build/bench/$p$sfx not built (musl-gcc not found?)}" ;;
			*) echo "$build/bench/$p$sfx not built (run 'make bench'; gcc -static needs libc6-dev's libc.a)" ;;
			esac
			return
		fi
	done
}

# median of the numbers given, n/a if none
median()
{
	[ $# -gt 0 ] || { echo n/a; return; }
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# ns to two decimals
ns()
{
	awk -v v="$1" 'BEGIN { if (v == "n/a") print v; else printf "%.2f", v }'
}
# A - B to one decimal, n/a if either is
minus()
{
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a") print "n/a"; else printf "%+.1f", a - b }'
}
# A / B as a multiple, n/a if either is unknown
times()
{
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b <= 0) { print "n/a"; exit }
		r = a / b; printf (r >= 10 ? "%.0fx" : r >= 1 ? "%.1fx" : "%.2fx"), r }'
}
# us US [WHY]: microseconds, or "- (WHY)" if none were given, n/a without WHY
us()
{
	if [ "$1" != n/a ]; then
		echo "$1 us"
	elif [ -n "${2:-}" ]; then
		echo "- ($2)"
	else
		echo n/a
	fi
}
# microseconds as ms, or n/a
ms()
{
	awk -v u="$1" 'BEGIN { if (u == "n/a") print "n/a"; else printf (u < 10000 ? "%.2f ms" : "%.1f ms"), u / 1000 }'
}

# hc ARGS...: heapctl -v ARGS, its output in $tmp/hc.out; sets hc_pause (us the
# borrowed thread was stopped, every borrow summed), hc_own (us of that pause
# that went to heapctl's own work, not to stops, registers, memory or the
# safe-point check) and hc_all (us every thread was stopped for inline hooks,
# summed); n/a where heapctl said nothing of it; fails as heapctl did
hc()
{
	"$heapctl" -v "$@" >"$tmp/hc.out" 2>&1
	local rc=$?
	read -r hc_pause hc_own hc_all < <(awk '
		/borrowed tid [0-9]+ for [0-9]+ us/ { for (i = 1; i < NF; i++) if ($i == "for") { p += $(i + 1); np++; break } }
		/the pause: .* us heapctl.s own work/ { for (i = 2; i < NF; i++) if ($i == "us" && $(i + 1) ~ /^heapctl/) { o += $(i - 1); no++ } }
		/inline hooks (in|out), every thread stopped for/ { for (i = 1; i < NF; i++) if ($i == "for") { a += $(i + 1); na++; break } }
		END { print (np ? p : "n/a"), (no ? o : "n/a"), (na ? a : "n/a") }' "$tmp/hc.out")
	return $rc
}
# the error heapctl gave, one line
hc_err()
{
	grep -m1 -E 'error|refus' "$tmp/hc.out" || tail -n 1 "$tmp/hc.out"
}

# start PROGRAM: it runs with fifos for stdin and stdout; sets lpid, lin, lout
start()
{
	local word
	rm -f "$tmp/in" "$tmp/out"
	mkfifo "$tmp/in" "$tmp/out" || die "mkfifo failed"
	"$1" <"$tmp/in" >"$tmp/out" &
	lpid=$!
	exec {lin}>"$tmp/in" {lout}<"$tmp/out"
	read -t 10 -r word <&"$lout" && [ "$word" = ready ] || die "$1 did not start"
}
stop()
{
	kill -KILL "$lpid" 2>/dev/null
	wait "$lpid" 2>/dev/null
	lpid=
	exec {lin}>&- {lout}<&-
}

# ---- the fast path, per target ------------------------------------------------------------
# run: one measure of the mallocloop started, ns per pair
run()
{
	local ns
	echo "run $pairs 64 cpu" >&"$lin"
	read -t 300 -r ns <&"$lout" || die "mallocloop did not answer"
	echo "$ns"
}
fastpath()
{
	local t key label sfx hooks why i first second
	local base=() unsmp=() kept=() smp=() b u k s lo hi

	printf '%-24s %-22s %-10s %-12s %-12s %-12s %s\n' "fast path (ns/pair)" "target" "no hooks" \
		"unsampled" "off, kept" "sampling" "added: unsampled / off, kept / sampling"
	for t in "${targets[@]}"; do
		IFS='|' read -r key label sfx hooks <<<"$t"
		why=$(why_not "$key" "$sfx")
		if [ -n "$why" ]; then
			printf '%-24s %-22s not measured: %s\n' "" "$label ($hooks)" "$why"
			continue
		fi
		start "$build/bench/mallocloop$sfx"
		base=("$(run)") unsmp=() kept=() smp=() why=
		for ((i = 0; i < switches; i++)); do
			# unsampled and sampling in turn first, so that drift favours neither
			if ((i % 2)); then first=512K second=1G; else first=1G second=512K; fi
			for s in $first $second; do
				if ! hc prof on -p "$lpid" --sample-bytes "$s"; then
					why="prof on --sample-bytes $s failed: $(hc_err)"
					break 2
				fi
				if [ "$s" = 1G ]; then unsmp+=("$(run)"); else smp+=("$(run)"); fi
			done
			hc prof off -p "$lpid" || { why="prof off failed: $(hc_err)"; break; }
			kept+=("$(run)")
			hc prof reset -p "$lpid" || { why="prof reset failed: $(hc_err)"; break; }
			base+=("$(run)")
		done
		stop
		if [ -n "$why" ]; then
			printf '%-24s %-22s not measured: %s\n' "" "$label ($hooks)" "$why"
			continue
		fi
		b=$(ns "$(median "${base[@]}")") u=$(ns "$(median "${unsmp[@]}")")
		k=$(ns "$(median "${kept[@]}")") s=$(ns "$(median "${smp[@]}")")
		read -r lo hi < <(printf '%s\n' "${base[@]}" | sort -g | sed -n '1p;$p' | tr '\n' ' ')
		printf '%-24s %-22s %-10s %-12s %-12s %-12s %s / %s / %s   (no hooks %s..%s)\n' "" \
			"$label ($hooks)" "$b" "$u" "$k" "$s" "$(minus "$u" "$b")" "$(minus "$k" "$b")" \
			"$(minus "$s" "$b")" "$lo" "$hi"
	done
	printf '%-24s (64-byte pairs, a figure the best of 5 x %s in thread CPU time; medians: no hooks of %s, before the first\n' \
		"" "$pairs" "$((switches + 1))"
	printf '%-24s  prof on and after each prof reset; the others of %s switches. unsampled: prof on\n' "" "$switches"
	printf '%-24s  --sample-bytes 1G; off, kept: after prof off, hooks in; sampling: 512 KiB, the default.\n' ""
	printf '%-24s  goal: <= 10 ns added, unsampled)\n' ""
}

# ---- the pauses, per target -----------------------------------------------------------------
pauses()
{
	local t key label sfx hooks why i prog je=
	local on=() on_own=() on_all=() off=() off_all=() rs=() rsje=() r

	for f in "/usr/lib/$(uname -m)-linux-gnu/libjemalloc.so.2" /usr/lib64/libjemalloc.so.2 \
		/usr/lib/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2; do
		[ -f "$f" ] && je=$f && break
	done
	printf '%-24s %-22s %-32s %-22s %-9s %s\n' "pauses (medians)" "" "prof on (first load)" \
		"prof reset (removal)" "restart" "restart over"
	printf '%-24s %-22s %-9s %-10s %-11s %-10s %-11s %-9s %s\n' "" "target" "borrowed" "own work" \
		"all stopped" "borrowed" "all stopped" "" "prof on's borrowed, all stopped"
	for t in "${targets[@]}"; do
		IFS='|' read -r key label sfx hooks <<<"$t"
		why=$(why_not "$key" "$sfx")
		if [ -n "$why" ]; then
			printf '%-24s %-22s not measured: %s\n' "" "$label ($hooks)" "$why"
			continue
		fi
		prog=$build/bench/mtloop$sfx
		on=() on_own=() on_all=() off=() off_all=() rs=() rsje=()
		for ((i = 0; i < fresh; i++)); do
			# what a user does instead, in turn with each process
			r=$("$build/bench/restart" 1 "$prog" 2>"$tmp/rs.err") ||
				{ why="restart failed: $(head -n 1 "$tmp/rs.err")"; break; }
			rs+=("${r%% *}")
			if [ "$key" = gdyn ] && [ -n "$je" ] &&
				r=$("$build/bench/restart" 1 -e "LD_PRELOAD=$je" \
					-e MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:19 "$prog" 2>/dev/null); then
				rsje+=("${r%% *}")
			fi
			start "$prog"
			if [ "$busy" = 1 ]; then
				# its 2 workers allocate throughout (killed, never finished)
				echo "run 4000000000" >&"$lin"
				sleep 0.05
			fi
			hc prof on -p "$lpid" || { why="prof on failed: $(hc_err)"; stop; break; }
			on+=("$hc_pause")
			[ "$hc_own" = n/a ] || on_own+=("$hc_own")
			[ "$hc_all" = n/a ] || on_all+=("$hc_all")
			hc prof off -p "$lpid" || { why="prof off failed: $(hc_err)"; stop; break; }
			hc prof reset -p "$lpid" || { why="prof reset failed: $(hc_err)"; stop; break; }
			off+=("$hc_pause")
			[ "$hc_all" = n/a ] || off_all+=("$hc_all")
			stop
		done
		if [ -n "$why" ]; then
			printf '%-24s %-22s not measured: %s\n' "" "$label ($hooks)" "$why"
			continue
		fi
		local mon mono mona moff moffa mrs
		mon=$(median "${on[@]}") mono=$(median "${on_own[@]}") mona=$(median "${on_all[@]}")
		moff=$(median "${off[@]}") moffa=$(median "${off_all[@]}") mrs=$(median "${rs[@]}")
		printf '%-24s %-22s %-9s %-10s %-11s %-10s %-11s %-9s %s, %s\n' "" "$label ($hooks)" \
			"$(us "$mon")" "$(us "$mono")" "$(us "$mona" GOT)" "$(us "$moff")" "$(us "$moffa" GOT)" \
			"$(ms "$mrs")" "$(times "$mrs" "$mon")" "$(times "$mrs" "$mona")"
		if [ ${#rsje[@]} -gt 0 ]; then
			printf '%-24s %-22s %-9s %-10s %-11s %-10s %-11s %-9s %s\n' "" "  + jemalloc prof:true" "" "" "" "" "" \
				"$(ms "$(median "${rsje[@]}")")" "$(times "$(median "${rsje[@]}")" "$mon")"
		elif [ "$key" = gdyn ]; then
			printf '%-24s %-22s restart with jemalloc'"'"'s profiler preloaded: not measured (%s)\n' "" "" \
				"${je:+it did not start under LD_PRELOAD}${je:-libjemalloc.so.2 not found}"
		fi
	done
	printf '%-24s (%s fresh processes of bench/mtloop per target, 3 threads, the 2 workers %s; prof on:\n' \
		"" "$fresh" "$([ "$busy" = 1 ] && echo allocating || echo waiting)"
	printf '%-24s  the borrowed thread'"'"'s pause at the first load, every borrow summed, and of it heapctl'"'"'s\n' ""
	printf '%-24s  own work (not stops, registers, memory, the safe-point check); prof reset: after\n' ""
	printf '%-24s  prof off, the hooks out; all stopped: the instant every thread is stopped while inline\n' ""
	printf '%-24s  hooks go in or out; restart: the same program, fork+exec until it prints "ready", one\n' ""
	printf '%-24s  before each process; a static program cannot preload a profiler: it would be relinked)\n' ""
}

echo "heapctl sampler by C library: $(uname -srm), $(nproc) CPUs"
want fastpath && fastpath
want pauses && pauses
exit 0
