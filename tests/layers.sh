#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tests/layers.sh: src/lib's layers, as the build sees them (src/lib/README.md).
#
#   api.c        src/lib            public entry points
#   alloc        src/lib/alloc      the allocator drivers
#   sampler      src/lib/sampler    heapctl's side of the injected sampler
#   borrow       src/lib/borrow     stopping one thread and calling in it
#   proc         src/lib/proc       reading a live process, nothing stopped
#   base         src/lib/base       errors, log, json, clock
#
# A file may include headers of its own layer and of those below it, never
# of one above ("layers.down"); and no two files include each other, over
# any path ("layers.acyclic": a file and its header are one unit, and the
# units' include graph must sort with tsort).  The same holds for src/cli
# and src/prof, each as one layer.  From the include lines alone: no
# compiler, no new tool.
#
# With a build directory, the objects' symbols say the same of the calls
# ("layers.calls", nm): no function calls one of a layer above, and no two
# files call each other.
#
#   tests/layers.sh [ROOT [BUILD_DIR]]   prints PASS/FAIL lines, exits 1 on a FAIL
set -u
export LC_ALL=C
cd "${1:-$(dirname "$0")/..}" || exit 2
objdir=${2:+$(cd "$2" 2>/dev/null && pwd)/obj}

rank() {
	case $1 in
	base) echo 0 ;;
	proc) echo 1 ;;
	borrow) echo 2 ;;
	sampler) echo 3 ;;
	alloc) echo 4 ;;
	api) echo 5 ;;
	*) echo -1 ;;
	esac
}

# the layer of a file under src/lib: its folder, or api at the top
layer_of() {
	local d=${1#src/lib/}
	case $d in
	*/*) echo "${d%%/*}" ;;
	*) echo api ;;
	esac
}

declare -A where=() # header basename -> layer
bad=()
while IFS= read -r f; do
	where[${f##*/}]=$(layer_of "$f")
done < <(find src/lib -name '*.h' | sort)
for h in "${!where[@]}"; do
	n=$(find src/lib -name "$h" | wc -l)
	[ "$n" -eq 1 ] || bad+=("$h: $n headers of that name under src/lib (includes are by name)")
done

edges=$(mktemp)
calls=$(mktemp)
trap 'rm -f "$edges" "$calls"' EXIT
unit() {
	local b=${1##*/}
	b=${b%.[ch]}
	echo "${b%_int}"
}
while IFS= read -r f; do
	l=$(layer_of "$f")
	r=$(rank "$l")
	[ "$r" -ge 0 ] || bad+=("$f: in no layer (src/lib/README.md lists them)")
	while IFS= read -r inc; do
		b=${inc##*/}
		[ -n "${where[$b]:-}" ] || continue # arch.h, <...>, the sampler's hcs.h
		il=${where[$b]}
		if [ "$(rank "$il")" -gt "$r" ]; then
			bad+=("$f ($l) includes $inc ($il): a layer above its own")
		fi
		echo "lib/$(unit "$f") lib/$(unit "$b")" >>"$edges"
	done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done < <(find src/lib -name '*.[ch]' | sort)

if [ ${#bad[@]} -eq 0 ]; then
	echo "PASS layers.down"
else
	printf 'FAIL layers.down: %s\n' "${bad[0]}"
	[ ${#bad[@]} -lt 2 ] || printf '  %s\n' "${bad[@]:1}"
fi

# src/cli and src/prof: their own units, each folder one layer
for dir in src/cli src/prof; do
	while IFS= read -r f; do
		while IFS= read -r inc; do
			[ -e "$dir/${inc##*/}" ] || continue
			echo "${dir##*/}/$(unit "$f") ${dir##*/}/$(unit "$inc")" >>"$edges"
		done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
	done < <(find "$dir" -name '*.[ch]' | sort)
done

# The calls themselves, where the objects are built: a header of a lower layer
# may still declare a function of a higher one.  nm: what each object defines
# (T) and needs (U); a need met by an object of a higher layer is a call upwards,
# and the calls between files must sort with tsort too (no call cycle).
calls_up=()
if [ -n "$objdir" ] && [ -d "$objdir/src/lib" ] && command -v nm >/dev/null; then
	declare -A def_layer=() def_file=()
	while IFS= read -r o; do
		src=${o#"$objdir"/}
		src=${src%.o}.c
		[ -e "$src" ] || continue # an object left from a file since moved
		while read -r sym; do
			def_layer[$sym]=$(layer_of "$src")
			def_file[$sym]=$src
		done < <(nm --defined-only -g "$o" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ { print $3 }')
	done < <(find "$objdir/src/lib" -name '*.o' | sort)
	while IFS= read -r o; do
		src=${o#"$objdir"/}
		src=${src%.o}.c
		[ -e "$src" ] || continue # an object left from a file since moved
		r=$(rank "$(layer_of "$src")")
		while read -r sym; do
			l=${def_layer[$sym]:-}
			[ -n "$l" ] || continue
			if [ "$(rank "$l")" -gt "$r" ]; then
				calls_up+=("$src calls $sym of ${def_file[$sym]} ($l)")
			fi
			[ "${def_file[$sym]}" = "$src" ] || echo "$src ${def_file[$sym]}" >>"$calls"
		done < <(nm -u "$o" 2>/dev/null | awk '{ print $NF }')
	done < <(find "$objdir/src/lib" -name '*.o' | sort)
	# and no two files call each other, over any path
	cloop=$(sort -u "$calls" | tsort 2>&1 >/dev/null | grep -v 'input contains a loop' |
		sed 's/^tsort: //' | tr '\n' ' ')
	[ -z "$cloop" ] || calls_up+=("files call each other: $cloop")
	if [ ${#calls_up[@]} -eq 0 ]; then
		echo "PASS layers.calls"
	else
		printf 'FAIL layers.calls: %s\n' "${calls_up[0]}"
		[ ${#calls_up[@]} -lt 2 ] || printf '  %s\n' "${calls_up[@]:1}"
	fi
fi

# a unit's own header is no edge; tsort names the loop it finds on stderr
loop=$(awk '$1 != $2' "$edges" | tsort 2>&1 >/dev/null)
if [ -z "$loop" ]; then
	echo "PASS layers.acyclic"
else
	echo "FAIL layers.acyclic: files include each other: $(echo "$loop" | grep -v 'input contains a loop' |
		sed 's/^tsort: //' | tr '\n' ' ')"
fi
[ ${#bad[@]} -eq 0 ] && [ -z "$loop" ] && [ ${#calls_up[@]} -eq 0 ]
