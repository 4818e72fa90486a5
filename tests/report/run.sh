#!/bin/bash
# SPDX-License-Identifier: MIT
#
# End-to-end tests of heapctl report / leak / dump --svg on a live process
# that leaks from known stacks (tests/victims/jemalloc_leaker.c), checked
# with the real consumers of each format:
#   folded  -> flamegraph.pl (libdevel-nytprof-perl) and jeprof --collapse
#   svg     -> an XML parser and headless Chromium (DOM and a screenshot)
#   pprof   -> a pprof built offline from golang-github-google-pprof-dev
#
#   tests/report/run.sh BUILD_DIR
#
# One "PASS name", "FAIL name: why" or "SKIP name: why" line per check, then
# "N passed, N failed[, N skipped]".  Under CI=true a missing tool is a
# failure (make deps installs them all).

set -u
export LC_ALL=C

B=${1:-build}
H=$(cd "$(dirname "$B/heapctl")" && pwd)/heapctl
V=$(cd "$(dirname "$B/victims/jemalloc_leaker")" && pwd)/jemalloc_leaker
FLAMEGRAPH=${FLAMEGRAPH:-/usr/share/perl5/Devel/NYTProf/flamegraph.pl}
np=0
nf=0
ns=0

pass() { echo "PASS report.$1"; np=$((np + 1)); }
fail() { echo "FAIL report.$1: $2"; nf=$((nf + 1)); }
skip()
{
	if [ "${CI:-}" = true ]; then
		echo "FAIL report.$1: $2 (missing dependency, CI=true)"
		nf=$((nf + 1))
	else
		echo "SKIP report.$1: $2"
		ns=$((ns + 1))
	fi
}
check() # name, command...: PASS if the command succeeds, else FAIL with its output
{
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		pass "$name"
	else
		fail "$name" "$(echo "$out" | tail -3 | tr '\n' ' ')"
	fi
}

finish()
{
	echo "$np passed, $nf failed$([ $ns -gt 0 ] && echo ", $ns skipped")"
	[ $nf -eq 0 ]
	exit
}

for f in "$H" "$V"; do
	if [ ! -x "$f" ]; then
		fail setup "$f is missing; run make"
		finish
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapctl-report-test.XXXXXX")
vpid=
cleanup()
{
	[ -n "$vpid" ] && kill -KILL "$vpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp" || exit 1

T="timeout -k 5 60"

# ---- the victim ---------------------------------------------------------
mkfifo ctl out
MALLOC_CONF=prof:true,prof_active:false,prof_accum:true,lg_prof_sample:12 "$V" <ctl >out 2>victim.err &
vpid=$!
exec 3>ctl 4<out
ask() # command -> reply in $reply
{
	echo "$1" >&3
	read -t 30 -r reply <&4 || { fail victim "no answer to '$1'"; finish; }
}
read -t 30 -r word pid <&4 || { fail victim "did not start: $(cat victim.err)"; finish; }
[ "$word" = ready ] && [ "$pid" = "$vpid" ] || { fail victim "said '$word $pid'"; finish; }

LEAK=$((8 << 20))
$T "$H" prof on -p "$vpid" >/dev/null || { fail setup "heapctl prof on failed"; finish; }
ask churn
$T "$H" dump -p "$vpid" -o a.heap >/dev/null || { fail setup "dump a failed"; finish; }
ask "leak $LEAK"
ask churn
$T "$H" dump -p "$vpid" -o b.heap >/dev/null || { fail setup "dump b failed"; finish; }

LEAKSTACK='main;serve;cache_put;make_entry'

# ---- folded ----------------------------------------------------------------
$T "$H" report b.heap --base a.heap -o d.folded >/dev/null 2>d.err
$T "$H" report b.heap -o b.folded >/dev/null 2>b.err
if [ -s d.folded ] && [ -s b.folded ]; then
	pass folded.written
else
	fail folded.written "$(cat d.err b.err | head -3)"
fi
# The leak dominates the profile, and only it remains in the growth.
awk -v pat="$LEAKSTACK" '{ w = $NF; t += w; if (index($0, pat)) l += w }
	END { if (t == 0 || l / t < 0.8) { printf "leak %d of %d\n", l, t; exit 1 } }' b.folded &&
	pass folded.leak_dominates || fail folded.leak_dominates "$(head -3 b.folded)"
awk -v pat="$LEAKSTACK" -v want="$LEAK" '{ w = $NF; t += w; if (index($0, pat)) l += w }
	END { r = l / want; if (r < 0.85 || r > 1.15 || l / t < 0.95) {
		printf "growth %d, want %d (ratio %.3f), %d total\n", l, want, r, t; exit 1 } }' \
	d.folded && pass base.growth_matches_leak || fail base.growth_matches_leak "$(cat d.folded)"
if grep -qvE '^[^ ].* [1-9][0-9]*$' d.folded b.folded; then
	fail folded.weights "a line without a positive integer weight: $(grep -vE ' [1-9][0-9]*$' d.folded | head -1)"
else
	pass folded.weights
fi
$T "$H" report a.heap --base b.heap --format folded >shrinkless.folded 2>/dev/null
if grep -q "$LEAKSTACK" shrinkless.folded; then
	fail base.no_negative "the leak shows up as growth from b to a"
else
	pass base.no_negative
fi
$T "$H" report a.heap --base b.heap --shrink --format folded 2>/dev/null | grep -q "$LEAKSTACK" &&
	pass base.shrink || fail base.shrink "--shrink does not show the leak going away"

# ---- text ------------------------------------------------------------------
$T "$H" report b.heap --base a.heap >d.txt 2>&1
if grep -A2 '^Grew' d.txt | tail -1 | grep -q make_entry && grep -q '^Shrank' d.txt; then
	pass text.diff
else
	fail text.diff "$(head -8 d.txt | tr '\n' '|')"
fi
$T "$H" report b.heap --objects --top 3 >o.txt 2>&1 && grep -q 'objects in' o.txt &&
	pass text.objects || fail text.objects "$(head -3 o.txt)"
$T "$H" report b.heap --lines --format folded 2>/dev/null | grep -q 'make_entry jemalloc_leaker.c:[0-9]' &&
	pass folded.lines || fail folded.lines "no file:line on the inlined frame"

# ---- jeprof equivalence ----------------------------------------------------
if command -v jeprof >/dev/null; then
	$T jeprof --collapse "$V" b.heap >jeprof.folded 2>jeprof.err
	# jeprof writes "f<0000addr>" and "f[inline]".  Frames above main are
	# libc's, named from whatever debug info the machine has: compare from
	# main down, merging stacks that differ only above it.
	norm() { sed -E 's/<[0-9a-f]+>//g; s/\[inline\]//g; s/^.*;(main;|main )/\1/' "$1" |
		awk '{ w = $NF; $NF = ""; s[$0] += w } END { for (k in s) print k s[k] }' | sort; }
	norm jeprof.folded >j.n
	norm b.folded >h.n
	if awk 'NR == FNR { w = $NF; $NF = ""; j[$0] = w; next }
		{ w = $NF; $NF = ""; h[$0] = w }
		END {
			for (k in j) if (!(k in h)) { print "only jeprof: " k; bad = 1 }
			for (k in h) if (!(k in j)) { print "only heapctl: " k; bad = 1 }
			for (k in j) if (k in h) { d = j[k] - h[k]; if (d < 0) d = -d
				if (d > 2 && d > j[k] / 1000) { print "weight " k ": " j[k] " vs " h[k]; bad = 1 } }
			exit bad }' j.n h.n >eq.out; then
		pass jeprof.equivalent
	else
		fail jeprof.equivalent "$(head -2 eq.out | tr '\n' ' ')"
	fi
else
	skip jeprof.equivalent "jeprof not installed (libjemalloc-dev)"
fi

# ---- flamegraph.pl -----------------------------------------------------------
if [ -r "$FLAMEGRAPH" ]; then
	if $T perl "$FLAMEGRAPH" d.folded >fg.svg 2>fg.err && grep -q make_entry fg.svg &&
		python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' fg.svg; then
		pass flamegraph_pl
	else
		fail flamegraph_pl "$(head -2 fg.err)"
	fi
else
	skip flamegraph_pl "$FLAMEGRAPH missing (libdevel-nytprof-perl)"
fi

# ---- svg -------------------------------------------------------------------
$T "$H" report b.heap -o b.svg >/dev/null 2>&1
$T "$H" report b.heap --base a.heap -o d.svg >/dev/null 2>&1
check svg.well_formed python3 -c '
import sys, xml.etree.ElementTree as ET
for f in sys.argv[1:]:
    root = ET.parse(f).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text for t in root.iter(ns + "title")]
    assert any(t and t.startswith("make_entry (") and "%" in t for t in titles), f + ": no make_entry title"
    assert any(t and t.startswith("cache_put (") for t in titles), f + ": no cache_put title"
    assert root.find(ns + "script") is not None, f + ": no script"
' b.svg d.svg

CHROME=
for c in chromium chromium-browser google-chrome; do
	command -v $c >/dev/null && CHROME=$c && break
done
if [ -n "$CHROME" ]; then
	chrome() { $T "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--no-first-run --user-data-dir="$tmp/chrome" "$@" 2>>chrome.err; }
	chrome --dump-dom "file://$tmp/b.svg?s=make_entry&z=serve" >dom.html
	nf0=$(grep -o 'class="f' dom.html | wc -l)
	if [ "$nf0" -ge 5 ] && grep -q 'make_entry' dom.html; then
		pass chromium.dom
	else
		fail chromium.dom "$nf0 frames in the DOM; $(tail -2 chrome.err | tr '\n' ' ')"
	fi
	# ?s= highlights matches (class "f match"), ?z= hides frames outside the zoom.
	grep -q 'class="f match"' dom.html && grep -q 'Matched: ' dom.html &&
		pass chromium.search || fail chromium.search "no highlighted frame after ?s=make_entry"
	# ?z= zooms: the callers of the zoomed frame fade out.
	grep -q 'opacity: 0.5' dom.html && pass chromium.zoom ||
		fail chromium.zoom "no faded caller after ?z=serve"
	chrome --screenshot="$tmp/shot.png" --window-size=1200,400 "file://$tmp/b.svg" >/dev/null
	check chromium.screenshot python3 -c '
import sys, zlib, struct
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
i, idat, w = 8, b"", 0
while i < len(d):
    n, t = struct.unpack(">I4s", d[i:i + 8])
    if t == b"IHDR": w, h, depth, ctype = struct.unpack(">IIBB", d[i + 8:i + 18])
    if t == b"IDAT": idat += d[i + 8:i + 8 + n]
    i += 12 + n
raw = zlib.decompress(idat)
colours = set(raw[k:k + 3] for k in range(1, len(raw) - 3, 997))
assert len(colours) > 20, "blank screenshot: %d colours" % len(colours)
' shot.png
else
	skip chromium "chromium not installed"
fi

# ---- pprof -----------------------------------------------------------------
$T "$H" report b.heap -o b.pb.gz >/dev/null 2>&1
$T "$H" report b.heap --base a.heap -o d.pb.gz >/dev/null 2>&1
check pprof.gzip python3 -c '
import gzip, sys
d = gzip.open(sys.argv[1]).read()
assert len(d) > 20 and b"inuse_space" in d and b"make_entry" in d, "bad payload"
# prof_accum: the alloc pair, laid out as Go lays it out
assert b"alloc_space" in d, "no alloc_space from a profile with prof_accum"
' b.pb.gz
PPROF=${PPROF:-}
if [ -z "$PPROF" ]; then
	PPROF=$(cd "$(dirname "$B")" && pwd)/$(basename "$B")/tools/pprof
	if [ ! -x "$PPROF" ] && command -v go >/dev/null &&
		[ -d /usr/share/gocode/src/github.com/google/pprof ]; then
		mkdir -p "$(dirname "$PPROF")"
		GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$tmp/gocache" GOFLAGS= \
			$T go build -o "$PPROF" github.com/google/pprof >gobuild.log 2>&1 ||
			rm -f "$PPROF"
	fi
fi
if [ -x "$PPROF" ]; then
	if $T "$PPROF" -top -sample_index=inuse_space b.pb.gz >pp.txt 2>pp.err &&
		grep -E '^ +[0-9.]+[kMG]?B +[0-9.]+% .*make_entry' pp.txt >/dev/null; then
		pass pprof.top
	else
		fail pprof.top "$(head -3 pp.err pp.txt | tr '\n' ' ')"
	fi
	$T "$PPROF" -traces b.pb.gz 2>/dev/null | grep -A6 make_entry | grep -q cache_put &&
		pass pprof.inline_traces || fail pprof.inline_traces "no make_entry <- cache_put trace"
	$T "$PPROF" -top -sample_index=inuse_space d.pb.gz >ppd.txt 2>&1 && grep -q make_entry ppd.txt &&
		pass pprof.diff || fail pprof.diff "$(head -3 ppd.txt | tr '\n' ' ')"
	$T "$PPROF" -top -sample_index=alloc_space b.pb.gz >ppa.txt 2>&1 && grep -q make_entry ppa.txt &&
		pass pprof.alloc_space || fail pprof.alloc_space "$(head -3 ppa.txt | tr '\n' ' ')"
else
	skip pprof "no pprof: needs golang-go and golang-github-google-pprof-dev$( [ -f gobuild.log ] && echo ": $(tail -1 gobuild.log)")"
fi

# ---- dump --svg and leak on the live process --------------------------------
$T "$H" dump -p "$vpid" -o c.heap --svg c.svg --folded c.folded >dump.out 2>&1
if grep -q make_entry c.svg 2>/dev/null && grep -q "$LEAKSTACK" c.folded 2>/dev/null; then
	pass dump.svg
else
	fail dump.svg "$(head -3 dump.out | tr '\n' ' ')"
fi

RATE=$((2 << 20))
ask "rate $RATE"
$T "$H" prof off -p "$vpid" >/dev/null
$T "$H" leak -p "$vpid" --for 2 -o leak.svg >leak.out 2>leak.err
# --json: one object on stdout naming the growth, the -o file written as usual.
$T "$H" leak -p "$vpid" --for 1 -o leakj.folded --json >leak.json 2>leak.jerr
ask "rate 0"
if python3 - leak.json <<'PY' 2>leak.jcheck && grep -q drip_alloc leakj.folded; then
import json, sys
j = json.load(open(sys.argv[1]))
assert j["weight"] == "bytes" and j["change"] > 0 and j["seconds"] > 0.5, j
assert j["output"] == {"path": "leakj.folded", "format": "folded"}, j["output"]
assert any(f["name"] == "drip_alloc" and f["flat"] > 0 for f in j["functions"]), j["functions"]
assert "drip_alloc" in j["stacks"][0]["frames"] and j["stacks"][0]["change"] > 0, j["stacks"][:1]
PY
	pass leak.json
else
	fail leak.json "$(tail -2 leak.jcheck leak.jerr | tr '\n' ' ') $(head -c 300 leak.json)"
fi
if grep -q '^pid .* heap grew by' leak.out && grep -q 'drip_alloc' leak.out && grep -q drip_alloc leak.svg; then
	pass leak.names_stack
else
	fail leak.names_stack "$(head -3 leak.out leak.err | tr '\n' ' ')"
fi
# "(1.9 MiB/s)" against the drip rate, within sampling noise and timing.
rate=$(sed -nE 's/.*heap grew by .*\(([0-9.]+) (B|KiB|MiB|GiB)\/s\).*/\1 \2/p' leak.out)
if [ -n "$rate" ] && echo "$rate" | awk -v want="$RATE" '{
	f = $2 == "GiB" ? 2^30 : $2 == "MiB" ? 2^20 : $2 == "KiB" ? 1024 : 1
	r = $1 * f / want; if (r < 0.6 || r > 1.4) exit 1 }'; then
	pass leak.rate
else
	fail leak.rate "$(head -1 leak.out), want $((RATE >> 20)) MiB/s"
fi
$T "$H" prof status -p "$vpid" 2>&1 | grep -q 'active (prof.active): no' &&
	pass leak.restores_prof_active || fail leak.restores_prof_active "prof.active left on"

# ---- bad input ---------------------------------------------------------------
bad() # name, file, want-exit, want-regex (stderr)
{
	local rc
	$T "$H" report "$2" --format folded >bad.out 2>bad.err
	rc=$?
	if [ $rc -eq "$3" ] && grep -qE "$4" bad.err && [ $rc -lt 124 ]; then
		pass "bad.$1"
	else
		fail "bad.$1" "exit $rc, stderr: $(head -2 bad.err | tr '\n' ' ')"
	fi
}
printf 'hello\nworld\n' >garbage.heap
bad garbage garbage.heap 1 'error: .*not a jemalloc heap profile'
head -c 4096 /bin/true >binary.heap
bad binary binary.heap 1 'error: .*binary data'
# Cut mid-line, as a writer stopped mid-write leaves it: a cut just after a
# newline inside MAPPED_LIBRARIES is a shorter list that reads as whole.
cut=$(($(wc -c <b.heap) / 2))
head -c $cut b.heap >trunc.heap
[ "$(tail -c 1 trunc.heap | od -An -tx1 | tr -d ' ')" != 0a ] || head -c $((cut - 1)) b.heap >trunc.heap
bad truncated trunc.heap 0 'warning: .*(truncated|MAPPED_LIBRARIES)'
sed '/^MAPPED_LIBRARIES:/,$d' b.heap >nomaps.heap
bad no_maps nomaps.heap 0 'warning: .*no MAPPED_LIBRARIES'
printf 'heap_v2/524288\n  t*: 1: 99999999999999999999999 [0: 0]\n' >huge.heap
bad huge huge.heap 1 'error: .*too large'
printf 'heap_v2/524288\n  t*: -1: 5 [0: 0]\n' >neg.heap
bad negative neg.heap 1 'error: .*negative'
: >empty.heap
bad empty empty.heap 1 'error: .*empty'
# A profile whose binary was replaced: found under --sysroot with another build.
mkdir -p sys"$(dirname "$V")"
cp /bin/true sys"$V"
$T "$H" report b.heap --sysroot "$tmp/sys" --format folded >mm.out 2>mm.err
if grep -qE 'warning: .*(build-id|layout) differs' mm.err; then
	pass bad.mismatched_binary
else
	fail bad.mismatched_binary "$(head -2 mm.err | tr '\n' ' ')"
fi
$T "$H" report b.heap --sysroot "$tmp/nothing" --format folded >/dev/null 2>&1 &&
	pass sysroot.fallback || fail sysroot.fallback "a missing --sysroot broke the report"
mv "$V" "$V.moved" 2>/dev/null && {
	$T "$H" report b.heap --format folded >gone.out 2>gone.err
	mv "$V.moved" "$V"
	if grep -q 'jemalloc_leaker+0x' gone.out && grep -q 'not found' gone.err; then
		pass bad.missing_binary
	else
		fail bad.missing_binary "$(head -2 gone.out gone.err | tr '\n' ' ')"
	fi
}
# The live process still has the file: --pid finds it through /proc.
cp "$V" "$tmp/leaker.copy"
mv "$V" "$V.moved" 2>/dev/null && {
	$T "$H" report b.heap -p "$vpid" --format folded >pid.out 2>pid.err
	mv "$V.moved" "$V"
	grep -q "$LEAKSTACK" pid.out && pass pid.map_files ||
		fail pid.map_files "$(head -2 pid.out pid.err | tr '\n' ' ')"
}

ask quit
finish
