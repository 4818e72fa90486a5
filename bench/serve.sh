#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/serve.sh BUILD_DIR
#
# What a scrape of "heapctl serve" costs, next to what a user runs instead
# today: "heapctl stats --format prometheus -p PID" once per target (from a
# cron job or a node-exporter textfile script), in the same run, on the same
# targets.  Not a pass/fail test: it prints a table.
#
#   serve, cold     GET /metrics once --min-interval has passed since the last
#                   borrow: serve borrows each target again before answering
#   serve, cached   GET /metrics again within --min-interval: what the last
#                   borrow found, no target touched
#   stats per PID   heapctl -v stats --format prometheus -p PID, each target
#
# For each: the scrape's wall time (curl's time_total; bench/spawn.c's for
# stats), per target (all targets divided by their number), the targets'
# borrow pause per scrape (heapctl -v's "borrowed tid N for US us" lines:
# serve's log, stats' stderr), the borrows per scrape, and the CPU time the
# scraper spent per scrape (serve's utime+stime, over all
# the scrapes of a kind; stats' from the shell's times), and the largest gap a 1 ms
# ticker thread in the targets saw over the run of each kind.
#
# Knobs (environment): BENCH_SERVE_TARGETS (4), BENCH_SERVE_SCRAPES (20),
# BENCH_SERVE_CACHED (200, cached scrapes at most, within one interval),
# BENCH_SERVE_INTERVAL (2, serve's --min-interval in whole seconds),
# BENCH_THREADS_PER_TARGET (10).

set -u
export LC_ALL=C

build=${1:-build}
heapctl=$(cd "$(dirname "$build/heapctl")" && pwd)/heapctl
target=$build/bench/target
spawn=$build/bench/spawn
ntargets=${BENCH_SERVE_TARGETS:-4}
scrapes=${BENCH_SERVE_SCRAPES:-20}
interval=${BENCH_SERVE_INTERVAL:-2}
nthreads=${BENCH_THREADS_PER_TARGET:-10}

die()
{
	echo "serve-bench: $*" >&2
	exit 1
}

[[ $interval =~ ^[1-9][0-9]*$ ]] || die "BENCH_SERVE_INTERVAL must be whole seconds"
for f in "$heapctl" "$target" "$spawn"; do
	[ -x "$f" ] || die "$f not found; run 'make' first"
done
for t in curl; do
	command -v "$t" >/dev/null || die "$t not found; run 'make deps'"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapctl-serve-bench.XXXXXX") || die "mktemp failed"
tpids=()
tcmds=()
touts=()
spid=
cleanup()
{
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	for i in "${!tpids[@]}"; do
		echo quit >&"${tcmds[$i]}" 2>/dev/null
		wait "${tpids[$i]}" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT

# ---- the targets: copies with names of their own, for --select ----------
names=()
for i in $(seq 0 $((ntargets - 1))); do
	name=hsb$$t$i
	name=${name:0:15}
	cp "$target" "$tmp/$name" || die "cp failed"
	mkfifo "$tmp/cmd$i" "$tmp/out$i" || die "mkfifo failed"
	MALLOC_CONF=prof:true,prof_active:false \
		"$tmp/$name" "$nthreads" 1 "$tmp/cmd$i" "$tmp/out$i" </dev/null &
	tpids[i]=$!
	exec {fd}<>"$tmp/cmd$i"
	tcmds[i]=$fd
	exec {fd}<>"$tmp/out$i"
	touts[i]=$fd
	read -t 30 -r word pid <&"${touts[$i]}" || die "target $i did not start"
	[ "$word" = ready ] && [ "$pid" = "${tpids[$i]}" ] || die "target $i: '$word $pid'"
	names+=("$name")
done

# The largest ticker gap (us) of all the targets since the last call.
gaps()
{
	local i g max=0

	for i in "${!tpids[@]}"; do
		echo gap >&"${tcmds[$i]}"
		read -t 30 -r g <&"${touts[$i]}" || die "target $i did not answer"
		[ "$g" -gt "$max" ] && max=$g
	done
	echo "$max"
}

# serve's CPU time so far, us: utime + stime of the front and of the worker
# it runs as its child (src/cli/keeper.c), which count the connections'
# threads that have exited too; in clock ticks, so summed over many scrapes
serve_cpu()
{
	local p

	for p in "$spid" $(pgrep -P "$spid"); do
		cat /proc/"$p"/stat 2>/dev/null
	done | awk -v hz="$hz" '{ sub(/.*\) /, ""); s += $12 + $13 } END { printf "%d", s * 1000000 / hz }'
}

# borrows and their pauses (us) logged in serve's log after line $1: "N SUM_US"
borrows_since()
{
	tail -n +"$(($1 + 1))" "$tmp/serve.log" |
		awk '/borrowed tid [0-9]+ for [0-9]+ us/ {
			for (i = 1; i <= NF; i++) if ($i == "for") { n++; s += $(i + 1) } }
			END { printf "%d %d\n", n, s }'
}

port=$((20000 + RANDOM % 20000))
sel=()
for n in "${names[@]}"; do
	sel+=(--select "$n")
done
(exec "$heapctl" -v serve --listen "127.0.0.1:$port" "${sel[@]}" --min-interval "$interval" \
	2>"$tmp/serve.log") &
spid=$!
for _ in $(seq 100); do
	grep -q "serving on" "$tmp/serve.log" 2>/dev/null && break
	kill -0 "$spid" 2>/dev/null || break
	sleep 0.1
done
grep -q "serving on" "$tmp/serve.log" || { cat "$tmp/serve.log" >&2; die "serve did not start"; }
[ "$(cat "/proc/$spid/comm")" = heapctl ] || die "pid $spid is not heapctl serve"
url=http://127.0.0.1:$port/metrics
hz=$(getconf CLK_TCK)
curl -sf -o /dev/null "$url" || die "GET /metrics failed"

# ---- serve: cold, then cached --------------------------------------------
gaps >/dev/null
: >"$tmp/cold.rt"
: >"$tmp/cached.rt"
cold_cpu=0 cached_cpu=0 cold_b=0 cold_p=0 cached_b=0 cached_p=0
for _ in $(seq "$scrapes"); do
	sleep "$interval.2"
	l=$(wc -l <"$tmp/serve.log")
	c0=$(serve_cpu)
	curl -sf -o /dev/null -w '%{time_total}\n' "$url" >>"$tmp/cold.rt" || die "GET /metrics failed"
	c1=$(serve_cpu)
	read -r b p < <(borrows_since "$l")
	cold_cpu=$((cold_cpu + c1 - c0)) cold_b=$((cold_b + b)) cold_p=$((cold_p + p))
done
cold_gap=$(gaps)
sleep "$interval.2"
curl -sf -o /dev/null "$url" || die "GET /metrics failed"
gaps >/dev/null
l=$(wc -l <"$tmp/serve.log")
c0=$(serve_cpu)
t0=$(date +%s%N)
n=0
# within the interval of that last borrow: as many as fit in 90% of it, at
# most BENCH_SERVE_CACHED (200), one curl for them all (its reuse of the
# connection off: a scraper connects each time)
cached_max=${BENCH_SERVE_CACHED:-200}
while [ $(($(date +%s%N) - t0)) -lt $((interval * 900000000)) ] && [ $n -lt "$cached_max" ]; do
	k=$(((cached_max - n) < 20 ? cached_max - n : 20))
	args=()
	for _ in $(seq "$k"); do
		args+=("$url" -o /dev/null)
	done
	curl -sf -H 'Connection: close' -w '%{time_total}\n' "${args[@]}" >>"$tmp/cached.rt" ||
		die "GET /metrics failed"
	n=$((n + k))
done
c1=$(serve_cpu)
read -r cached_b cached_p < <(borrows_since "$l")
cached_cpu=$((c1 - c0))
cached_n=$n
cached_gap=$(gaps)

# ---- what a user runs instead: stats --format prometheus per target ----
: >"$tmp/stats.rt"
stats_b=0 stats_p=0 stats_cpu=0
gaps >/dev/null
for _ in $(seq "$scrapes"); do
	rt=0
	for pid in "${tpids[@]}"; do
		# the subshell's children's times: spawn's, with heapctl's it reaped
		(
			"$spawn" - "$tmp/err" "$heapctl" -v stats --format prometheus -p "$pid" \
				>"$tmp/took" || exit 1
			times >"$tmp/time"
		) || { cat "$tmp/err" >&2; die "heapctl stats -p $pid failed"; }
		took=$(cat "$tmp/took")
		rt=$((rt + took))
		read -r b p < <(awk '/borrowed tid [0-9]+ for [0-9]+ us/ {
			for (i = 1; i <= NF; i++) if ($i == "for") { n++; s += $(i + 1) } }
			END { printf "%d %d\n", n, s }' "$tmp/err")
		stats_b=$((stats_b + b)) stats_p=$((stats_p + p))
		cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, y, /[ms]/);
			printf "%d", (u[1] * 60 + u[2] + y[1] * 60 + y[2]) * 1000000 }' "$tmp/time")
		stats_cpu=$((stats_cpu + cpu))
	done
	echo "$rt" >>"$tmp/stats.rt"
done
stats_gap=$(gaps)

# ---- the table ------------------------------------------------------------
# median of a file of seconds (curl) or us (spawn), as us
med_s()
{
	sort -g "$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%d", m * 1000000 }'
}
med_us()
{
	sort -n "$1" | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%d", m }'
}
ms()
{
	awk -v us="$1" 'BEGIN { if (us < 0) print "n/a"; else printf (us < 10000 ? "%.2f ms" : us < 100000 ? "%.1f ms" : "%.0f ms"), us / 1000 }'
}
row()
{
	# LABEL SCRAPES WALL_US BORROWS PAUSE_US CPU_US GAP_US
	local per_t pause_per cpu_per b_per
	per_t=$(($3 / ntargets))
	b_per=$(awk -v b="$4" -v n="$2" 'BEGIN { printf "%.2f", b / n }')
	pause_per=$(awk -v p="$5" -v n="$2" 'BEGIN { printf "%d", p / n }')
	cpu_per=$(awk -v c="$6" -v n="$2" 'BEGIN { printf "%d", c / n }')
	printf '%-22s %-11s %-11s %-9s %-16s %-12s %s\n' "$1" "$(ms "$3")" "$(ms "$per_t")" \
		"$b_per" "$(ms "$pause_per")" "$(ms "$cpu_per")" "$(ms "$7")"
}

cold_wall=$(med_s "$tmp/cold.rt")
cached_wall=$(med_s "$tmp/cached.rt")
stats_wall=$(med_us "$tmp/stats.rt")
echo
echo "== heapctl serve: one /metrics scrape of $ntargets targets ($nthreads threads each), --min-interval $interval s"
echo "   (wall: median per scrape; borrows, pause and CPU: per scrape, all targets;"
echo "    pause: the targets' threads stopped, summed; gap: the largest any target's 1 ms ticker saw)"
printf '%-22s %-11s %-11s %-9s %-16s %-12s %s\n' "" "wall" "per target" "borrows" "targets' pause" "scraper CPU" "max gap"
row "serve, cold" "$scrapes" "$cold_wall" "$cold_b" "$cold_p" "$cold_cpu" "$cold_gap"
row "serve, cached" "$cached_n" "$cached_wall" "$cached_b" "$cached_p" "$cached_cpu" "$cached_gap"
row "stats -p, per target" "$scrapes" "$stats_wall" "$stats_b" "$stats_p" "$stats_cpu" "$stats_gap"
echo "   (serve's CPU: its two processes' utime+stime, in clock ticks, over all the"
echo "    scrapes of a kind; stats': the children's times of a shell that ran it, each run;"
echo "    stats' wall is all $ntargets runs, one after the other)"
