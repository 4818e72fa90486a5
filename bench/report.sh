#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/report.sh BUILD_DIR
#
# heapctl report --format folded against jeprof --collapse, in the same run,
# on the same files: wall time (median of several runs) and peak RSS
# (GNU time's %M, the tool's own process).  Not a pass/fail test.
#
#   redis      Debian's redis-server under redis-benchmark load, profiled
#              with lg_prof_sample:12 (a sample every 4 KiB), dumped by heapctl
#   synthetic  BENCH_STACKS (100000) distinct stacks, 4-24 frames deep, over
#              the redis profile's own mappings (redis-server, libc, jemalloc)
#
# Knobs: BENCH_STACKS (100000), BENCH_RUNS (5), BENCH_JEPROF_RUNS (3),
# BENCH_KEEP=DIR keeps the two profiles there.

set -u
export LC_ALL=C

build=${1:-build}
heapctl=$(cd "$(dirname "$build/heapctl")" && pwd)/heapctl
stacks=${BENCH_STACKS:-100000}
runs=${BENCH_RUNS:-5}
jruns=${BENCH_JEPROF_RUNS:-3}

die()
{
	echo "report-bench: $*" >&2
	exit 1
}

for t in redis-server redis-benchmark jeprof /usr/bin/time; do
	command -v "$t" >/dev/null || die "$t not found; run 'make deps'"
done
[ -x "$heapctl" ] || die "$heapctl not found; run 'make'"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapctl-report-bench.XXXXXX") || die "mktemp failed"
rpid=
cleanup()
{
	[ -n "$rpid" ] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
	if [ -n "${BENCH_KEEP:-}" ]; then
		mkdir -p "$BENCH_KEEP" && cp "$tmp"/*.heap "$BENCH_KEEP"/
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT

# ---- a real profile: redis under load -------------------------------------
port=$((20000 + RANDOM % 20000))
server=$(command -v redis-server)
MALLOC_CONF=prof:true,lg_prof_sample:12 "$server" --port "$port" --bind 127.0.0.1 \
	--save '' --appendonly no --daemonize no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
rpid=$!
for _ in $(seq 50); do
	redis-cli -p "$port" ping >/dev/null 2>&1 && break
	sleep 0.1
done
redis-benchmark -h 127.0.0.1 -p "$port" -q -n 50000 -r 50000 -d 128 -t set,lpush,sadd,hset \
	>/dev/null 2>&1 || die "redis-benchmark failed"
"$heapctl" dump -p "$rpid" -o "$tmp/redis.heap" >/dev/null || die "heapctl dump failed"
kill "$rpid"
wait "$rpid" 2>/dev/null
rpid=

# ---- a large synthetic profile over the same mappings ------------------------
awk -v n="$stacks" '
	function hex(h,   v, i) {
		v = 0
		for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
		return v
	}
	function tohex(v,   s) {
		s = ""
		do { s = substr("0123456789abcdef", v % 16 + 1, 1) s; v = int(v / 16) } while (v > 0)
		return "0x" s
	}
	BEGIN { srand(42) }
	/^heap_v2/ { print; next }
	/^MAPPED_LIBRARIES:/ { maps = 1 }
	maps { m[nm++] = $0 }
	maps && $2 ~ /x/ && ($6 ~ /redis|libc|jemalloc/) {
		split($1, r, "-")
		lo[nx] = hex(r[1]); hi[nx++] = hex(r[2])
	}
	END {
		# A pool of return addresses, then stacks drawn from it.
		for (i = 0; i < 20000; i++) {
			k = int(rand() * nx)
			pool[i] = tohex(lo[k] + int(rand() * (hi[k] - lo[k])))
		}
		for (s = 0; s < n; s++) {
			d = 4 + int(rand() * 21); line = "@"
			for (j = 0; j < d; j++) line = line " " pool[int(rand() * 20000)]
			print line
			o = 1 + int(rand() * 50); printf "  t*: %d: %d [0: 0]\n", o, o * (16 + int(rand() * 4000))
		}
		print ""
		for (i = 0; i < nm; i++) print m[i]
	}' "$tmp/redis.heap" >"$tmp/synthetic.heap" 2>/dev/null ||
	die "awk failed"

# ---- timing -------------------------------------------------------------------
# measure OUT RUNS cmd...: median wall seconds and max peak RSS (KiB) into OUT.
measure()
{
	local out=$1 n=$2 i
	shift 2
	: >"$tmp/m"
	for ((i = 0; i < n; i++)); do
		local t0 t1
		t0=${EPOCHREALTIME/[.,]/}
		/usr/bin/time -f '%M' -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" ||
			{ cat "$tmp/err" >&2; die "$1 failed"; }
		t1=${EPOCHREALTIME/[.,]/}
		echo "$(awk -v us=$((t1 - t0)) 'BEGIN { printf "%.4f", us / 1e6 }') $(tail -1 "$tmp/t")" >>"$tmp/m"
	done
	sort -n "$tmp/m" | awk '{ t[NR] = $1; if ($2 > m) m = $2 }
		END { printf "%s %d\n", t[int((NR + 1) / 2)], m }' >"$out"
}

row()
{
	local name=$1 file=$2 nst naddr
	nst=$(grep -c '^@' "$file")
	naddr=$(grep '^@' "$file" | tr ' ' '\n' | grep -c '^0x' )
	naddr_u=$(grep '^@' "$file" | tr ' ' '\n' | grep '^0x' | sort -u | wc -l)
	measure "$tmp/h" "$runs" "$heapctl" report "$file" --format folded -o /dev/null
	measure "$tmp/j" "$jruns" jeprof --collapse "$server" "$file"
	read -r ht hm <"$tmp/h"
	read -r jt jm <"$tmp/j"
	printf '%-10s %7d stacks %8d frames %6d addrs | heapctl %7.4f s %7.1f MiB | jeprof %8.2f s %7.1f MiB | %6.0fx faster\n' \
		"$name" "$nst" "$naddr" "$naddr_u" "$ht" "$(echo "$hm" | awk '{ print $1 / 1024 }')" \
		"$jt" "$(echo "$jm" | awk '{ print $1 / 1024 }')" \
		"$(awk -v a="$jt" -v b="$ht" 'BEGIN { print (b > 0 ? a / b : 0) }')"
	echo "$name $nst $naddr_u $ht $hm $jt $jm" >>"$tmp/results"
}

echo "heapctl report vs jeprof --collapse: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "median of $runs heapctl runs and $jruns jeprof runs; peak RSS of the tool's own process"
row redis "$tmp/redis.heap"
row synthetic "$tmp/synthetic.heap"
