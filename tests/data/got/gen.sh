#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Regenerate the GOT test objects, their relocations as readelf sees them,
# and fuzz_got's seeds.  Run by hand when they should change (needs gcc,
# clang and ld.lld for the arm64 object, readelf, python3); the unit test
# (tests/unit/test_got.c) and the fuzz target read the checked-in files.
#
#   lazy.so   lib.c, -z norelro -z lazy: JUMP_SLOTs in a writable .got.plt
#   relro.so  lib.c, -z relro -z now: every slot under RELRO, read-only
#   a64.so    lib.c for aarch64 (clang, lld), -z relro -z now, 4 KiB pages
#   nopie     exe.c, a non-PIE executable linked against glibc (at 0x400000)
#
# NAME.relocs is `readelf -rW NAME`.  tests/fuzz/corpus/got/NAME is the
# object as the loader lays it out, behind fuzz_got's header: its PT_LOAD
# segments at their addresses, .bss zeroed; lazy-relocated and a64-relocated
# have the dynamic section's pointers relocated, as glibc's loader leaves them.

set -eu
here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/../../fuzz/corpus/got
mkdir -p "$corpus"
cd "$here"

so="-shared -fPIC -nostdlib -O1 -Wl,--hash-style=gnu -Wl,--build-id=none"
gcc $so -Wl,-z,norelro -Wl,-z,lazy -o lazy.so lib.c
gcc $so -Wl,-z,relro -Wl,-z,now -o relro.so lib.c
clang --target=aarch64-linux-gnu -fuse-ld=lld $so -Wl,-z,relro -Wl,-z,now \
	-Wl,-z,max-page-size=4096 -o a64.so lib.c
gcc -no-pie -O1 -Wl,--build-id=none -o nopie exe.c
for o in lazy.so relro.so a64.so nopie; do
	readelf -rW "$o" >"$o.relocs"
done

python3 - "$corpus" <<'PY'
import struct, sys

PT_LOAD, PT_DYNAMIC, PT_GNU_RELRO, PF_W = 1, 2, 0x6474e552, 2

def image(path):
    b = open(path, 'rb').read()
    assert b[:4] == b'\x7fELF' and b[4] == 2, path
    phoff, = struct.unpack_from('<Q', b, 32)
    phentsize, phnum = struct.unpack_from('<HH', b, 54)
    # p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
    ph = [struct.unpack_from('<IIQQQQQQ', b, phoff + i * phentsize) for i in range(phnum)]
    loads = [p for p in ph if p[0] == PT_LOAD]
    v0 = loads[0][3] & ~0xfff
    img = bytearray(max(p[3] + p[6] for p in loads) - v0)
    for p in loads:
        img[p[3] - v0:p[3] - v0 + p[5]] = b[p[2]:p[2] + p[5]]
    dyn = [p for p in ph if p[0] == PT_DYNAMIC][0]
    relro = [p for p in ph if p[0] == PT_GNU_RELRO]
    if relro:
        ro = ((relro[0][3] + relro[0][6] + 0xfff) & ~0xfff) - v0
    else:
        ro = (min(p[3] for p in loads if p[1] & PF_W) & ~0xfff) - v0
    return img, dyn[3] - v0, dyn[6], ro, v0

for name, obj, flags in (('lazy', 'lazy.so', 0), ('lazy-relocated', 'lazy.so', 2),
                         ('relro', 'relro.so', 0), ('a64-relocated', 'a64.so', 3),
                         ('nopie', 'nopie', 0)):
    img, dyn, dynlen, ro, v0 = image(obj)
    with open(sys.argv[1] + '/' + name, 'wb') as f:
        f.write(struct.pack('<IIQBxxxI', dyn, ro, v0, flags, dynlen) + img)
PY
