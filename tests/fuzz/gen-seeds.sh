#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Regenerate the seeds made from real objects for fuzz_evidence
# (tests/fuzz/corpus/evidence/): small shared objects whose read-only data
# holds an allocator's strings the way the allocator's own code does, or
# mentions one without being it.  Run by hand when they should change
# (needs gcc); the fuzz targets and the replay read the checked-in files.
# (fuzz_got's seeds come from tests/data/got/gen.sh.)
#
#   jemalloc-rjem.so        "<jemalloc>: " messages and _RJEM_MALLOC_CONF
#   jemalloc-rjem-noshdr.so the same with no section headers (as sstrip
#                           leaves it): only the PT_LOAD segments are read
#   tcmalloc.so             "tcmalloc: large alloc", TCMALLOC_*, MallocExtension
#   mimalloc.so             "mimalloc: warning: ", mimalloc_ options
#   mentions.so             a program that only mentions them: no allocator

set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$here/corpus/evidence
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

so() {
	local name=$1
	shift
	{
		echo '/* the strings are exported so that nothing drops them */'
		local i=0
		for s in "$@"; do
			printf 'const char s%d[] = "%s";\n' $i "$s"
			i=$((i + 1))
		done
	} >"$tmp/$name.c"
	gcc -shared -fPIC -nostdlib -O1 -Wl,-z,noseparate-code -Wl,--build-id=none \
		-Wl,--hash-style=gnu -o "$out/$name" "$tmp/$name.c"
}

so jemalloc-rjem.so '<jemalloc>: Error in malloc(): invalid size 0\n' '_RJEM_MALLOC_CONF' \
	'<jemalloc>: Invalid conf pair: %.*s:%.*s\n'
so tcmalloc.so 'tcmalloc: large alloc %zu bytes == %p @ ' 'TCMALLOC_RELEASE_RATE' \
	'15MallocExtension'
so mimalloc.so 'mimalloc: warning: %s\n' 'mimalloc_options' 'MIMALLOC_VERBOSE'
so mentions.so 'set MALLOC_CONF=narenas:1 to limit jemalloc' 'see TCMALLOC_RELEASE_RATE' \
	'jemalloc' 'MIMALLOC_'

# sstrip-like: e_shoff (offset 40, 8 bytes), e_shnum (60, 2) and e_shstrndx (62, 2) zeroed
cp "$out/jemalloc-rjem.so" "$out/jemalloc-rjem-noshdr.so"
dd if=/dev/zero of="$out/jemalloc-rjem-noshdr.so" bs=1 seek=40 count=8 conv=notrunc status=none
dd if=/dev/zero of="$out/jemalloc-rjem-noshdr.so" bs=1 seek=60 count=4 conv=notrunc status=none
