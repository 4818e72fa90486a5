#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/accuracy.sh BUILD_DIR
#
# How close `heapctl leak` comes to a leak of known rate, with its default
# options.  Not a pass/fail test: it prints a table.
#
# The victim is tests/victims/leak_rate: leak_here() leaks LEAK_BPS bytes
# per second of the clock, exactly (the truth), beside churn(), which
# allocates CHURN_BPS bytes per second but keeps only about RING_BYTES of
# them alive (a steady live set, not a leak).  Each run starts a fresh
# victim with a seed of its own and measures it once with
#
#     heapctl leak -p PID --for WINDOW --json -o FILE.svg
#
# and nothing else, under two profilers:
#
#   sampler    the victim started plainly (glibc malloc, no profiler):
#              heapctl loads its own sampler, measures how fast the victim
#              allocates, picks the interval for the window and warms up
#              before the first profile (docs/design.md, "leak's interval
#              and warm-up")
#   jemalloc   the victim started with LD_PRELOAD=libjemalloc.so.2 and
#              MALLOC_CONF=prof:true (jemalloc's default lg_prof_sample 19,
#              a sample every 512 KiB, active from the start)
#
# Per profiler and window, over the runs that produced a JSON summary:
#
#   runs        runs measured (k of R when some failed; why, under the table)
#   median err  the median of the signed errors, then the median of their
#               absolute values; error = measured / truth - 1, measured =
#               leak_here's per_second in the JSON (its flat / seconds where
#               the JSON has no per_second for functions), 0 (-100%) when
#               leak_here is not among the functions at all
#   worst err   the error of largest absolute value, with its sign
#   first       runs in which leak_here heads "functions" (the top grower)
#   in range    runs in which the truth lies within leak_here's
#               per_second_range (n/a: the JSON has no range per function)
#   samples     the median number of samples behind leak_here
#
# The runs of a window, both profilers', go in parallel (the victims are
# paced by the clock and light; heapctl leak mostly waits), so the whole
# table takes about the sum of the windows plus a few seconds each.
#
# Knobs (environment): BENCH_ACC_WINDOWS ("5 30 120" seconds),
# BENCH_ACC_RUNS (6 runs per profiler and window), BENCH_ACC_JOBS (0: all
# runs of a window at once; N: at most N at a time), BENCH_ACC_LEAK (102400
# bytes/s), BENCH_ACC_CHURN (33554432 bytes/s), BENCH_ACC_RING (1048576
# bytes).
set -u
export LC_ALL=C

build=${1:-build}
windows=${BENCH_ACC_WINDOWS:-5 30 120}
runs=${BENCH_ACC_RUNS:-6}
maxjobs=${BENCH_ACC_JOBS:-0}
leak_bps=${BENCH_ACC_LEAK:-102400}
churn_bps=${BENCH_ACC_CHURN:-33554432}
ring_bytes=${BENCH_ACC_RING:-1048576}

die()
{
	echo "accuracy-bench: $*" >&2
	exit 1
}

for f in "$build/heapctl" "$build/victims/leak_rate"; do
	[ -x "$f" ] || die "$f not found; run 'make B=$build all $f'"
done
build=$(cd "$build" && pwd) || die "cannot enter $1"
heapctl=$build/heapctl
victim=$build/victims/leak_rate
command -v python3 >/dev/null || die "python3 not found; run 'make deps'"
command -v timeout >/dev/null || die "timeout (coreutils) not found"
for n in "$runs" "$maxjobs" "$leak_bps" "$churn_bps" "$ring_bytes"; do
	[[ $n =~ ^[0-9]+$ ]] || die "not a whole number: '$n'"
done
{ [ "$runs" -gt 0 ] && [ "$leak_bps" -gt 0 ]; } || die "BENCH_ACC_RUNS and BENCH_ACC_LEAK must be > 0"
[ -n "${windows// /}" ] || die "BENCH_ACC_WINDOWS is empty"
for w in $windows; do
	[[ $w =~ ^[0-9]+([.][0-9]+)?$ ]] || die "BENCH_ACC_WINDOWS: '$w' is not a number of seconds"
done

# Whatever the caller's environment preloads or configures stays out of the
# victims: each profiler's victim gets exactly its own.
unset LD_PRELOAD MALLOC_CONF

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapctl-bench-acc.XXXXXX") || die "mktemp failed"
hold=
declare -A vpid_of=() key_of=()
cleanup()
{
	local p
	# timeout passes TERM on to its heapctl, which then takes its second
	# profile early; the victims go regardless
	for p in "${!vpid_of[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${vpid_of[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	for p in "${!vpid_of[@]}" "${vpid_of[@]}"; do
		wait "$p" 2>/dev/null
	done
	[ -z "$hold" ] || exec {hold}<&-
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# jemalloc: Debian's shared library, of this machine's ELF class and built
# with --enable-prof (or else ld.so or jemalloc says so on stderr)
je=
for c in $( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null) |
	awk '$1 == "libjemalloc.so.2" { print $NF }') \
	"/usr/lib/$(gcc -print-multiarch 2>/dev/null)/libjemalloc.so.2"; do
	[ -r "$c" ] || continue
	err=$(LD_PRELOAD=$c MALLOC_CONF=prof:true "$victim" 1 0 0 1 </dev/null 2>&1 >/dev/null)
	if [ -z "$err" ]; then
		je=$c
		break
	fi
done
profilers=sampler
if [ -n "$je" ]; then
	profilers="sampler jemalloc"
fi

# All victims read their stdin from one fifo that only this shell holds
# open (for writing, too): they never see end of file while the bench
# runs, and do if it dies.  Children close this shell's copy.
mkfifo "$tmp/stdin" || die "mkfifo failed"
exec {hold}<>"$tmp/stdin" || die "cannot open $tmp/stdin"

# wait_one: waits for any running leak, records its exit status, and ends
# its victim.
wait_one()
{
	local fin="" rc
	wait -n -p fin "${!vpid_of[@]}"
	rc=$?
	[ -n "$fin" ] || return 0
	echo "$rc" >"$tmp/${key_of[$fin]}.rc"
	kill -KILL "${vpid_of[$fin]}" 2>/dev/null
	wait "${vpid_of[$fin]}" 2>/dev/null
	unset "vpid_of[$fin]" "key_of[$fin]"
}

# start_run PROFILER WINDOW RUN SEED: a fresh victim, then heapctl leak on it
# in the background; both pids go into vpid_of and key_of.
start_run()
{
	local prof=$1 w=$2 r=$3 seed=$4 key="$1-$2-$3" vpid i hpid
	if [ "$prof" = jemalloc ]; then
		(cd "$tmp" && exec {hold}<&- && LD_PRELOAD=$je MALLOC_CONF=prof:true \
			exec "$victim" "$leak_bps" "$churn_bps" "$ring_bytes" "$seed") \
			<"$tmp/stdin" >"$tmp/$key.out" 2>"$tmp/$key.verr" &
	else
		(cd "$tmp" && exec {hold}<&- && exec "$victim" "$leak_bps" "$churn_bps" \
			"$ring_bytes" "$seed") <"$tmp/stdin" >"$tmp/$key.out" 2>"$tmp/$key.verr" &
	fi
	vpid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q "^ready $vpid\$" "$tmp/$key.out" 2>/dev/null && break
		kill -0 "$vpid" 2>/dev/null || break
		sleep 0.05
	done
	if ! grep -q "^ready $vpid\$" "$tmp/$key.out" 2>/dev/null; then
		kill -KILL "$vpid" 2>/dev/null
		wait "$vpid" 2>/dev/null
		echo "victim did not start: $(head -c 200 "$tmp/$key.verr")" >"$tmp/$key.err"
		echo "$prof $w $r $seed $key" >>"$tmp/manifest"
		return
	fi
	# the command measured, as is; TMPDIR keeps its scratch files in $tmp,
	# timeout keeps a stuck run from holding the bench forever
	TMPDIR=$tmp timeout -k 10 "$(awk -v w="$w" 'BEGIN { printf "%d", w + 120 }')" \
		"$heapctl" leak -p "$vpid" --for "$w" --json -o "$tmp/$key.svg" \
		>"$tmp/$key.json" 2>"$tmp/$key.err" {hold}<&- &
	hpid=$!
	vpid_of[$hpid]=$vpid
	key_of[$hpid]=$key
	echo "$prof $w $r $seed $key" >>"$tmp/manifest"
}

: >"$tmp/manifest"
seed=0
per_window=$((runs * $(echo "$profilers" | wc -w)))
limit=$maxjobs
[ "$limit" -gt 0 ] || limit=$per_window
for w in $windows; do
	echo "accuracy-bench: --for $w: $per_window runs, $limit at a time" >&2
	for ((r = 1; r <= runs; r++)); do
		for prof in $profilers; do
			while [ "${#vpid_of[@]}" -ge "$limit" ]; do
				wait_one
			done
			seed=$((seed + 1))
			start_run "$prof" "$w" "$r" "$seed"
		done
	done
	while [ "${#vpid_of[@]}" -gt 0 ]; do
		wait_one
	done
done

# ---- the table ----------------------------------------------------------------------
echo "command   heapctl leak -p PID --for WINDOW --json -o FILE.svg   (no other option)"
echo "victim    $victim $leak_bps $churn_bps $ring_bytes SEED"
printf '          leak_here %s B/s (the truth), churn %s B/s keeping ~%s B live; seeds 1..%s, one per run\n' \
	"$leak_bps" "$churn_bps" "$ring_bytes" "$seed"
echo "sampler   victim plain (glibc malloc, no profiler): heapctl's injected sampler, its defaults"
if [ -n "$je" ]; then
	echo "jemalloc  victim under LD_PRELOAD=$je MALLOC_CONF=prof:true (lg_prof_sample 19, 512 KiB)"
else
	echo "jemalloc  not measured: no libjemalloc.so.2 with profiling (libjemalloc2 built --enable-prof)"
fi
echo
python3 - "$tmp" "$leak_bps" "$runs" <<'EOF'
import json, statistics, sys

tmp, truth, nruns = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
cells, notes = {}, []

def pct(x):
    return "%+.1f%%" % (100 * x)

def run(key):
    """(error, first, in_range or None, samples) of one run, or a reason."""
    try:
        with open("%s/%s.json" % (tmp, key)) as f:
            d = json.load(f)
        fs = d["functions"]
        secs = float(d["seconds"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        why = ""
        try:
            with open("%s/%s.err" % (tmp, key)) as f:
                why = " ".join(l.strip() for l in f if l.strip() and
                               not l.startswith("heapctl: measuring growth"))
        except OSError:
            pass
        try:
            with open("%s/%s.rc" % (tmp, key)) as f:
                rc = f.read().strip()
            why = "exit %s%s" % (rc, ": " + why if why else "")
        except OSError:
            pass
        return why[:160] or "no JSON summary (%s)" % type(e).__name__
    lh = next((f for f in fs if f.get("name") == "leak_here"), None)
    ranged = any("per_second_range" in f for f in fs)
    if lh is None:
        return (-1.0, False, False if ranged else None, 0)
    rate = lh["per_second"] if "per_second" in lh else lh["flat"] / secs
    rng = lh.get("per_second_range")
    inr = rng[0] <= truth <= rng[1] if rng else None
    return (rate / truth - 1, fs[0].get("name") == "leak_here", inr,
            lh.get("samples", 0))

order = []
with open(tmp + "/manifest") as f:
    for line in f:
        prof, w, r, seed, key = line.split()
        cell = (prof, w)
        if cell not in cells:
            cells[cell] = []
            order.append(cell)
        res = run(key)
        if isinstance(res, str):
            notes.append("%s --for %s, run %s (seed %s): %s" % (prof, w, r, seed, res))
        else:
            cells[cell].append(res)

hdr = ("profiler", "window", "runs", "median err", "median |err|", "worst err",
       "first", "in range", "samples")
fmt = "%-9s %7s %6s %11s %13s %10s %7s %9s %8s"
print(fmt % hdr)
for prof, w in sorted(order, key=lambda c: (float(c[1]), c[0] != "sampler")):
    rs = cells[(prof, w)]
    n = len(rs)
    runs = str(n) if n == nruns else "%d of %d" % (n, nruns)
    if not rs:
        print(fmt % (prof, w + " s", runs, "-", "-", "-", "-", "-", "-"))
        continue
    errs = [x[0] for x in rs]
    ranged = [x[2] for x in rs if x[2] is not None]
    print(fmt % (prof, w + " s", runs,
                 pct(statistics.median(errs)),
                 "%.1f%%" % (100 * statistics.median(abs(e) for e in errs)),
                 pct(max(errs, key=abs)),
                 "%d/%d" % (sum(x[1] for x in rs), n),
                 "%d/%d" % (sum(ranged), len(ranged)) if ranged else "n/a",
                 "%g" % statistics.median(x[3] for x in rs)))
for n in notes:
    print("failed: " + n)
EOF
