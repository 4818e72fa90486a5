#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Regenerate the seeds made from real objects for fuzz_evidence
# (tests/fuzz/corpus/evidence/): small shared objects whose read-only data
# holds an allocator's strings the way the allocator's own code does, or
# mentions one without being it.  Then fuzz_linkmap's, one of
# fuzz_elf's and fuzz_ehhdr's, below.  Run by hand when they should change
# (needs gcc, g++, binutils, xz, python3); the fuzz targets and the replay
# read the checked-in files.  (fuzz_got's seeds come from tests/data/got/gen.sh.)
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

# fuzz_linkmap (tests/fuzz/corpus/linkmap/): an executable's dynamic section
# and the loader's r_debug and link_map entries as glibc lays them out, at
# 0x10000 (the address fuzz_linkmap gives its input), behind the 4-byte
# offset of the dynamic section:
#   consistent  DT_DEBUG -> r_debug (RT_CONSISTENT) -> exe, libc, ld.so
#   loading     the same while the loader adds objects (RT_ADD)
#   cycle       the last entry's l_next back to the first
#   no-debug    no DT_DEBUG (a static-pie's)
python3 - "$here/corpus/linkmap" <<'PY'
import struct, sys

BASE = 0x10000
DT_NULL, DT_NEEDED, DT_DEBUG, DT_STRTAB = 0, 1, 21, 5

def image(state=0, cycle=False, debug=True):
    img = bytearray(0x400)
    dyn = [(DT_NEEDED, 1), (DT_STRTAB, 0x5000)]
    if debug:
        dyn.append((DT_DEBUG, BASE + 0x100))
    dyn.append((DT_NULL, 0))
    for i, (t, v) in enumerate(dyn):
        struct.pack_into('<qQ', img, 16 * i, t, v)
    # struct r_debug: r_version, r_map, r_brk, r_state, r_ldbase
    struct.pack_into('<iIQQiIQ', img, 0x100, 1, 0, BASE + 0x200, 0x7f0000001000, state, 0,
                     0x7f0000000000)
    # struct link_map: l_addr, l_name, l_ld, l_next, l_prev
    lds = (0x555555557dc8, 0x7ffff7fa1bc0, 0x7ffff7ffde10)
    for i, ld in enumerate(lds):
        at = 0x200 + 0x40 * i
        nxt = BASE + at + 0x40 if i + 1 < len(lds) else (BASE + 0x200 if cycle else 0)
        prv = BASE + at - 0x40 if i else 0
        struct.pack_into('<QQQQQ', img, at, 0x555555554000 if i == 0 else 0x7ffff7c00000,
                         BASE + 0x300, ld, nxt, prv)
    return struct.pack('<I', 0) + bytes(img)

for name, img in (('consistent', image()), ('loading', image(state=1)),
                  ('cycle', image(cycle=True)), ('no-debug', image(debug=False))):
    open(sys.argv[1] + '/' + name, 'wb').write(img)
PY

# fuzz_elf: tiny_mdi.so, stripped, its function symbols only in
# .gnu_debugdata (MiniDebugInfo, as Fedora's find-debuginfo makes it and the
# Makefile's fx_jemalloc_mdi): fuzz_elf names its input like an allocator,
# so the xz stream is decompressed and its .symtab read.
cat >"$tmp/mdi.c" <<'C'
static int hidden_a(int x) { return x * 3; }
static int hidden_b(int x) { return hidden_a(x) + 1; }
int exported(int x) { return hidden_b(x) - 2; }
C
gcc -shared -fPIC -nostdlib -O0 -Wl,-z,noseparate-code -Wl,--build-id=none -o "$tmp/mdi.so" \
	"$tmp/mdi.c"
nm -D --format=posix --defined-only "$tmp/mdi.so" | awk '{ print $1 }' | sort >"$tmp/dynsyms"
nm --format=posix --defined-only "$tmp/mdi.so" | awk '$2 ~ /^[Tt]$/ { print $1 }' | sort \
	>"$tmp/funcsyms"
comm -13 "$tmp/dynsyms" "$tmp/funcsyms" >"$tmp/keep"
objcopy --only-keep-debug "$tmp/mdi.so" "$tmp/full"
objcopy -S --remove-section .comment --keep-symbols="$tmp/keep" "$tmp/full" "$tmp/mini"
xz "$tmp/mini"
objcopy --strip-all --remove-section .comment "$tmp/mdi.so" "$tmp/stripped"
objcopy --add-section .gnu_debugdata="$tmp/mini.xz" "$tmp/stripped" "$here/corpus/elf/tiny_mdi.so"

# fuzz_ehhdr: .eh_frame sections as static executables have them (busybox-static,
# bash-static), cut at a record boundary below 60 KiB, behind the target's 12-byte
# header (the section's address, the table's distance from it); and a small C++
# object's, whose CIEs have personalities and LSDAs ("zPLR").
mkdir -p "$here/corpus/ehhdr"
cat >"$tmp/eh.cc" <<'C'
#include <stdexcept>
int thrower(int x) { if (x) throw std::runtime_error("x"); return 1; }
int catcher(int x) { try { return thrower(x); } catch (...) { return -1; } }
C
g++ -shared -fPIC -O1 -Wl,--build-id=none -o "$tmp/eh.so" "$tmp/eh.cc"
python3 - "$here/corpus/ehhdr" "$tmp/eh.so" /bin/busybox /usr/bin/bash-static <<'PY'
import os, struct, subprocess, sys

def section(path):
    out = subprocess.run(['readelf', '-SW', path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.replace('[ ', '[').split()
        if len(f) > 5 and f[1] == '.eh_frame':
            addr, off, size = int(f[3], 16), int(f[4], 16), int(f[5], 16)
            with open(path, 'rb') as fh:
                fh.seek(off)
                return addr, fh.read(size)
    return None

for path in sys.argv[2:]:
    if not os.path.exists(path):
        continue
    addr, eh = section(path)
    end = 0
    while end + 4 <= len(eh):
        n = struct.unpack_from('<I', eh, end)[0]
        if n == 0 or end + 4 + n > 60 * 1024:
            break
        end += 4 + n
    name = os.path.basename(path).replace('.', '-')
    delta = (len(eh) + 0xfff) & ~0xfff
    with open(sys.argv[1] + '/' + name, 'wb') as fh:
        fh.write(struct.pack('<QI', addr, delta) + eh[:end] + b'\0' * 4)
PY
