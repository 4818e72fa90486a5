#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/run.sh BUILD_DIR
#
# Measures what heapctl costs the process it inspects, next to gdb doing
# the least it can (attach, then detach).  Not a pass/fail test: it prints
# a table.  Needs BUILD_DIR/heapctl and BUILD_DIR/bench/{target,floor,spawn}.
#
#   round trip      wall time of "heapctl prof status" vs "gdb -p PID -batch -ex detach",
#                   both started by bench/spawn.c (posix_spawn, then the reap), next to
#                   /bin/true started the same way: what any command costs to start here
#   floor           the least a borrow can cost on the same thread (bench/floor.c:
#                   seize, interrupt, wait, read and write back NT_PRSTATUS and the
#                   whole extended state, detach), stopped window counted as heapctl's;
#                   one borrow per process as heapctl makes it, sampled in turn with
#                   the commands it divides (the warm median, back to back, beside it)
#   two-stop floor  the same with the thread run once in between (floor --run: it
#                   runs getpid() and stops at its entry), the least any borrow that
#                   runs the thread's code can cost; x86_64 only
#   paired          warm against warm: from one process (floor --paired), a floor
#                   borrow then heapctl's library doing prof on or off, in turn, on
#                   the same thread, so each pause has a floor taken beside it
#   pause           how long each command kept its thread stopped, all its borrows
#                   summed (from -v), as a multiple of the floor, and its ptrace stops;
#                   for prof on/off, where that time went (heapctl's -v "the pause" line)
#   max gap         the longest a 1 ms ticker thread went without running,
#                   idle, while heapctl runs, and while gdb attaches
#   scaling         round trip and pause at 10, 100 and 1000 threads
#   as the target's user
#                   dump's round trip on root's process and on a uid 65534 one,
#                   in turn: on the latter heapctl's file work runs with the
#                   target's credentials (src/lib/proc/cred.c)
#
# Knobs (environment): BENCH_RUNS (30), BENCH_TOGGLES (10), BENCH_GDB_RUNS (5),
# BENCH_SCALE_RUNS (15), BENCH_TICKERS (4), BENCH_THREADS ("10 100 1000"),
# BENCH_WINDOW (3, seconds of each max-gap window).
#
# gdb only attaches and detaches: calling a function with gdb fails on CPUs
# with AMX state, so "gdb attach+detach" is gdb's best case, not its real cost.

set -u
export LC_ALL=C

build=${1:-build}
heapctl=$build/heapctl
target=$build/bench/target
floor=$build/bench/floor
spawn=$build/bench/spawn

runs=${BENCH_RUNS:-30}
toggles=${BENCH_TOGGLES:-10}
gdb_runs=${BENCH_GDB_RUNS:-5}
scale_runs=${BENCH_SCALE_RUNS:-15}
tickers=${BENCH_TICKERS:-4}
thread_counts=${BENCH_THREADS:-10 100 1000}
window=${BENCH_WINDOW:-3}	# seconds, whole

die()
{
	echo "bench: $*" >&2
	exit 1
}

[[ $window =~ ^[1-9][0-9]*$ ]] || die "BENCH_WINDOW must be whole seconds"
for f in "$heapctl" "$target" "$floor" "$spawn"; do
	[ -x "$f" ] || die "$f not found; run 'make' first"
done

have_gdb=1
if ! command -v gdb >/dev/null; then
	echo "bench: gdb not found; its columns will read n/a" >&2
	have_gdb=
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapctl-bench.XXXXXX") || die "mktemp failed"
tpid=
tcmd=
tout=
floor2_why=

cleanup()
{
	if [ -n "$tpid" ]; then
		kill -KILL "$tpid" 2>/dev/null
		wait "$tpid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# Start the target with $1 threads; sets tpid, tcmd and tout (fds).  $2,
# if given, is a uid to run it as (its fifos are then opened as that user).
start_target()
{
	local word pid as=()

	rm -f "$tmp/cmd" "$tmp/out"
	mkfifo -m 0666 "$tmp/cmd" "$tmp/out" || die "mkfifo failed"
	if [ -n "${2:-}" ]; then
		chmod 0711 "$tmp"
		as=(setpriv --reuid="$2" --regid="$2" --clear-groups)
	fi
	MALLOC_CONF=prof:true,prof_active:false \
		"${as[@]}" "$target" "$1" "$tickers" "$tmp/cmd" "$tmp/out" </dev/null &
	tpid=$!
	# Opening read-write never blocks, and holding the write end keeps
	# the target alive; when this script dies the target reads EOF.
	exec {tcmd}<>"$tmp/cmd" {tout}<>"$tmp/out"
	read -t 30 -r word pid <&"$tout" || die "target did not start"
	if [ "$word" != ready ] || [ "$pid" != "$tpid" ]; then
		die "target: unexpected '$word $pid'"
	fi
}

stop_target()
{
	echo quit >&"$tcmd"
	wait "$tpid" 2>/dev/null
	tpid=
	exec {tcmd}>&- {tout}>&-
}

# Send a command to the target and print its one-line answer.
target_cmd()
{
	local answer

	echo "$1" >&"$tcmd"
	read -t 30 -r answer <&"$tout" || die "target did not answer '$1'"
	echo "$answer"
}

# Append the target's max gap (us) since the last reset or read to $1.
target_gap()
{
	local answer

	echo gap >&"$tcmd"
	read -t 30 -r answer <&"$tout" || die "target did not answer 'gap'"
	echo "$answer" >>"$1"
}

# Run heapctl -v ARGS...; append its wall time (us) to $tmp/$1.rt, the
# time its borrowed thread was stopped (us, every borrow of the run summed)
# to $tmp/$1.pause, its borrows to $tmp/$1.borrows and its ptrace stops to
# $tmp/$1.stops.
run_heapctl()
{
	local tag=$1 took line paused=0 stops=0 borrows=0
	shift

	took=$("$spawn" - "$tmp/err" "$heapctl" -v "$@")
	local rc=$?
	if [ $rc -ne 0 ]; then
		echo "bench: heapctl $* failed (exit $rc):" >&2
		cat "$tmp/err" >&2
		exit 1
	fi
	echo "$took" >>"$tmp/$tag.rt"
	while read -r line; do
		# "(N ptrace stops)" is missing from heapctl builds before it was counted
		if [[ $line =~ borrowed\ tid\ ([0-9]+)\ for\ ([0-9]+)\ us(\ \(([0-9]+)\ ptrace)? ]]; then
			last_tid=${BASH_REMATCH[1]}
			paused=$((paused + BASH_REMATCH[2]))
			stops=$((stops + ${BASH_REMATCH[4]:-0}))
			borrows=$((borrows + 1))
		fi
		# where the pause went (heapctl builds that say so)
		if [[ $line =~ the\ pause:\ ([0-9]+)\ us\ in\ stops,\ ([0-9]+)\ us\ registers,\ ([0-9]+)\ us\ memory,\ ([0-9]+)\ us\ safe-point\ check,\ ([0-9]+)\ us ]]; then
			echo "${BASH_REMATCH[1]}" >>"$tmp/$tag.w_stops"
			echo "${BASH_REMATCH[2]}" >>"$tmp/$tag.w_regs"
			echo "${BASH_REMATCH[3]}" >>"$tmp/$tag.w_mem"
			echo "${BASH_REMATCH[4]}" >>"$tmp/$tag.w_check"
			echo "${BASH_REMATCH[5]}" >>"$tmp/$tag.w_own"
		fi
	done <"$tmp/err"
	if [ $borrows -gt 0 ]; then
		echo $paused >>"$tmp/$tag.pause"
		echo $stops >>"$tmp/$tag.stops"
	fi
	echo $borrows >>"$tmp/$tag.borrows"
}

# Time one gdb attach+detach; append the wall time (us) to $tmp/$1.rt.
run_gdb()
{
	local took

	[ -n "$have_gdb" ] || return 0
	took=$(DEBUGINFOD_URLS='' "$spawn" "$tmp/gdb.log" "$tmp/gdb.log" \
		gdb -nx -p "$tpid" -batch -ex detach) ||
		{ cat "$tmp/gdb.log" >&2; die "gdb attach failed"; }
	echo "$took" >>"$tmp/$1.rt"
}

# pick FILE median|p90|max: nearest-rank statistics over one number per line.
pick()
{
	[ -s "$1" ] || { echo -1; return; }
	sort -n "$1" | awk -v what="$2" '
		{ v[NR] = $1 }
		END {
			if (what == "median")
				print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2)
			else if (what == "p90")
				print v[int(NR * 0.9 + 0.999999)]
			else
				print v[NR]
		}'
}

# ms US: microseconds as milliseconds, 3 significant digits (or "n/a").
ms()
{
	if [ "$1" -lt 0 ]; then
		echo "n/a"
	else
		awk -v us="$1" 'BEGIN { printf (us < 10000 ? "%.2f ms" : us < 100000 ? "%.1f ms" : "%.0f ms"), us / 1000 }'
	fi
}

# ratio A B FORMAT: A / B as printf's FORMAT does it ("%.1fx"), n/a if either is unknown
ratio()
{
	awk -v a="$1" -v b="$2" -v fmt="$3" \
		'BEGIN { if (a < 0 || b <= 0) print "n/a"; else printf fmt, a / b }'
}

us()
{
	if [ "$1" -lt 0 ]; then
		echo "n/a"
	else
		echo "$1 us"
	fi
}

# ---------------------------------------------------------------------

first_n=${thread_counts%% *}
echo "heapctl bench: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "target: $first_n threads ($tickers ticking every 1 ms), MALLOC_CONF=prof:true,prof_active:false"
echo "runs: $runs x prof status, $toggles x prof on/off, $gdb_runs x gdb attach+detach"
echo

start_target "$first_n"

# Warm the page cache for both tools so the first run is not an outlier.
last_tid=
run_heapctl warm prof status -p "$tpid"
[ -z "$have_gdb" ] || DEBUGINFOD_URLS='' gdb -nx -batch -ex quit </dev/null >/dev/null 2>&1

# The floor, on the thread heapctl borrows: first $runs borrows back to
# back in one process, warm; then one per process, as heapctl makes its
# borrow, taken in turn with the commands whose pauses it divides, so that
# the machine is the same for both.
[ -n "$last_tid" ] || die "heapctl -v named no borrowed thread"
"$floor" "$last_tid" "$runs" >"$tmp/floor.warm.raw" || die "floor failed on tid $last_tid"
: >"$tmp/floor.raw"
: >"$tmp/floor2.raw"
floor_sample()
{
	"$floor" "$last_tid" 1 >>"$tmp/floor.raw" || die "floor failed on tid $last_tid"
	[ -z "$floor2_why" ] || return 0
	"$floor" "$last_tid" 1 --run >>"$tmp/floor2.raw" 2>"$tmp/floor2.err" ||
		floor2_why=$(head -1 "$tmp/floor2.err")
}

# Each command's pause, all its borrows summed.
for ((i = 0; i < toggles; i++)); do
	floor_sample
	run_heapctl cmd.stats stats --full -p "$tpid"
	run_heapctl cmd.dump dump -o "$tmp/p.heap" -p "$tpid"
	run_heapctl cmd.purge purge -p "$tpid"
	run_heapctl cmd.get get opt.prof -p "$tpid"
done
rm -f "$tmp/p.heap"

# Round trips and prof toggles, while the tickers run; /bin/true in turn
# with each round trip, for what starting any command costs here.
for ((i = 0; i < runs; i++)); do
	run_heapctl "status.$first_n" prof status -p "$tpid"
	"$spawn" - - true >>"$tmp/true.rt"
done
for ((i = 0; i < toggles; i++)); do
	floor_sample
	run_heapctl toggle prof on -p "$tpid"
	floor_sample
	run_heapctl toggle prof off -p "$tpid"
done
# Warm against warm: floor and prof on/off borrow by borrow, in one process.
"$floor" "$last_tid" "$runs" --paired "$tpid" >"$tmp/paired.raw" ||
	die "floor --paired failed on tid $last_tid"
cut -d' ' -f1 "$tmp/paired.raw" >"$tmp/paired.floor"
cut -d' ' -f2 "$tmp/paired.raw" >"$tmp/paired.pause"
cut -d' ' -f1 "$tmp/floor.raw" >"$tmp/floor"
cut -d' ' -f2 "$tmp/floor.raw" >"$tmp/floor.total"
cut -d' ' -f1 "$tmp/floor.warm.raw" >"$tmp/floor.warm"
[ -n "$floor2_why" ] || cut -d' ' -f1 "$tmp/floor2.raw" >"$tmp/floor2"

# Max-gap windows, cut into 100 ms slots; the target's max gap is read at
# the end of every slot.  Idle: nothing runs.  heapctl: one prof status at
# the start of each slot, as a poller would (back to back, fork+exec alone
# loads two CPUs enough to stretch the gaps).  gdb: one slot per attach.
slots=$((window * 10))
gap_window()
{
	local what=$1 i t next start

	target_cmd reset >/dev/null
	start=${EPOCHREALTIME/[.,]/}
	for ((i = 1; i <= slots; i++)); do
		[ "$what" = idle ] || run_heapctl window prof status -p "$tpid"
		next=$((start + i * 100000))
		t=${EPOCHREALTIME/[.,]/}
		[ "$t" -ge "$next" ] || sleep "$(printf '0.%06d' $((next - t)))"
		target_gap "$tmp/gap.$what"
	done
}

gap_window idle
gap_window heapctl
target_cmd reset >/dev/null
for ((i = 0; i < gdb_runs; i++)); do
	run_gdb "gdb.$first_n"
	[ -z "$have_gdb" ] || target_gap "$tmp/gap.gdb"
done

stop_target

for n in ${thread_counts#"$first_n"}; do
	start_target "$n"
	"$heapctl" prof status -p "$tpid" >/dev/null 2>&1
	for ((i = 0; i < scale_runs; i++)); do
		run_heapctl "status.$n" prof status -p "$tpid"
	done
	run_gdb "gdb.$n"
	stop_target
done

# dump as root on root's process, then on a uid 65534 process, in turn: on
# the second heapctl makes its private directory, and reads jemalloc's
# profile back, in threads that took that user's credentials
# (src/lib/proc/cred.c), so that nothing the target swaps leads past its rights
as_runs=$((runs / 3 > 5 ? runs / 3 : 5))
as_why=
if ! command -v setpriv >/dev/null; then
	as_why="setpriv not found (util-linux)"
else
	for ((i = 0; i < as_runs; i++)); do
		for who in root nobody; do
			start_target "$first_n" "$([ $who = root ] || echo 65534)"
			"$heapctl" prof on -p "$tpid" >/dev/null 2>&1
			run_heapctl "as.$who" dump -o "$tmp/as.heap" -p "$tpid"
			stop_target
		done
	done
	chmod 0700 "$tmp"
fi

# ---------------------------------------------------------------------

rt_med=$(pick "$tmp/status.$first_n.rt" median)
rt_p90=$(pick "$tmp/status.$first_n.rt" p90)
gdb_med=$(pick "$tmp/gdb.$first_n.rt" median)
rt_ratio=$(ratio "$gdb_med" "$rt_med" "%.0fx")

printf '%-24s heapctl %s (p90 %s)    gdb attach+detach %s    ratio %s\n' \
	"round trip" "$(ms "$rt_med")" "$(ms "$rt_p90")" "$(ms "$gdb_med")" "$rt_ratio"
printf '%-24s (both started with posix_spawn and reaped, as bench/spawn.c does; /bin/true: %s; goal: >= 100x)\n' \
	"" "$(ms "$(pick "$tmp/true.rt" median)")"
floor_med=$(pick "$tmp/floor" median)
printf '%-24s median %s stopped (%s from seize to detach), tid %s\n' "floor (bench/floor.c)" \
	"$(us "$floor_med")" "$(us "$(pick "$tmp/floor.total" median)")" "$last_tid"
warm_med=$(pick "$tmp/floor.warm" median)
printf '%-24s (%d borrows, one per process, in turn with the commands below; %d back to back\n' \
	"" "$(wc -l <"$tmp/floor")" "$runs"
printf '%-24s  in one process before them, warm: median %s)\n' "" "$(us "$warm_med")"
floor2_med=$(pick "$tmp/floor2" median)
if [ "$floor2_med" -ge 0 ]; then
	printf '%-24s median %s stopped, %s\n' "two-stop floor" "$(us "$floor2_med")" \
		"$(ratio "$floor2_med" "$floor_med" "%.1fx floor")"
else
	printf '%-24s n/a (%s)\n' "two-stop floor" "${floor2_why:-not measured}"
fi
# times CMD_TAG: median pause as a multiple of the floor
times()
{
	ratio "$(pick "$tmp/$1.pause" median)" "$floor_med" "%.1fx floor"
}
printf '%-24s %-12s %-10s %-10s %-16s %s\n' "pause per command" "command" "median" "max" \
	"median/floor" "borrows, ptrace stops (median)"
for c in "status.$first_n:prof status" "toggle:prof on/off" "cmd.stats:stats --full" \
	"cmd.dump:dump" "cmd.purge:purge" "cmd.get:get"; do
	tag=${c%%:*}
	printf '%-24s %-12s %-10s %-10s %-16s %s, %s\n' "" "${c#*:}" \
		"$(us "$(pick "$tmp/$tag.pause" median)")" "$(us "$(pick "$tmp/$tag.pause" max)")" \
		"$(times "$tag")" "$(pick "$tmp/$tag.borrows" max)" "$(pick "$tmp/$tag.stops" median)"
done
toggle_med=$(pick "$tmp/toggle.pause" median)
printf '%-24s (goal: prof on/off <= 3x floor; against the warm floor %s)\n' "" \
	"$(ratio "$toggle_med" "$warm_med" "%.1fx")"
if [ "$floor2_med" -gt 0 ]; then
	printf '%-24s prof on/off: %s\n' "" "$(ratio "$toggle_med" "$floor2_med" "%.1fx the two-stop floor")"
fi
paired_pause=$(pick "$tmp/paired.pause" median)
paired_floor=$(pick "$tmp/paired.floor" median)
printf '%-24s median %s stopped, its floor taken beside it %s: %s   (warm, one process)\n' \
	"prof on/off, paired" "$(us "$paired_pause")" "$(us "$paired_floor")" \
	"$(ratio "$paired_pause" "$paired_floor" "%.1fx")"
if [ -s "$tmp/toggle.w_stops" ]; then
	printf '%-24s stops %s, registers %s, memory %s, safe-point check %s, the rest %s\n' \
		"prof on/off pause went" "$(us "$(pick "$tmp/toggle.w_stops" median)")" \
		"$(us "$(pick "$tmp/toggle.w_regs" median)")" "$(us "$(pick "$tmp/toggle.w_mem" median)")" \
		"$(us "$(pick "$tmp/toggle.w_check" median)")" "$(us "$(pick "$tmp/toggle.w_own" median)")"
	printf '%-24s (medians of each part; the floor is one stop with its registers read and written)\n' ""
fi
printf '%-24s idle %s (typ %s)   during heapctl %s (typ %s)   during gdb %s (typ %s)\n' \
	"other threads max gap" \
	"$(ms "$(pick "$tmp/gap.idle" max)")" "$(ms "$(pick "$tmp/gap.idle" median)")" \
	"$(ms "$(pick "$tmp/gap.heapctl" max)")" "$(ms "$(pick "$tmp/gap.heapctl" median)")" \
	"$(ms "$(pick "$tmp/gap.gdb" max)")" "$(ms "$(pick "$tmp/gap.gdb" median)")"
printf '%-24s (%d threads tick every 1 ms; typ = median of the per-slot maxima over\n' "" "$tickers"
printf '%-24s  %d x 100 ms slots idle, %d slots each starting one heapctl, %d gdb attaches)\n' \
	"" "$slots" "$slots" "$gdb_runs"
if [ -z "$as_why" ]; then
	as_root=$(pick "$tmp/as.root.rt" median)
	as_nobody=$(pick "$tmp/as.nobody.rt" median)
	printf '%-24s root process %s    uid 65534 process %s    ratio %s   (dump round trip, %d each)\n' \
		"as the target's user" "$(ms "$as_root")" "$(ms "$as_nobody")" \
		"$(ratio "$as_nobody" "$as_root" "%.2fx")" "$as_runs"
	printf '%-24s (its files with its own rights: a thread per step, cred.c)\n' ""
else
	printf '%-24s n/a (%s)\n' "as the target's user" "$as_why"
fi
line=
for n in $thread_counts; do
	line+="$(printf '  %s thr %s / %s' "$n" "$(ms "$(pick "$tmp/status.$n.rt" median)")" \
		"$(us "$(pick "$tmp/status.$n.pause" median)")")"
done
printf '%-24s%s   (median round trip / pause)\n' "scaling (prof status)" "$line"
line=
for n in $thread_counts; do
	line+="$(printf '  %s thr %s' "$n" "$(ms "$(pick "$tmp/gdb.$n.rt" median)")")"
done
printf '%-24s%s   (for contrast)\n' "scaling (gdb attach)" "$line"
