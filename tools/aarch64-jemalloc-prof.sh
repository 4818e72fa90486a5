#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Cross-build Debian's jemalloc with --enable-prof for arm64.
#
#   tools/aarch64-jemalloc-prof.sh OUTDIR
#
# Debian's arm64 libjemalloc2 is built without profiling: its debian/rules
# passes --enable-prof only on i386 and amd64, so prof.active is ENOENT
# there even under MALLOC_CONF=prof:true.  The arm64 suite runs the prof
# tests against this build (OUTDIR/jemalloc-prof/libjemalloc.so.2, same
# soname, picked with LD_LIBRARY_PATH) and the "built without profiling"
# error path against Debian's binary.  Its PIC archive
# (OUTDIR/jemalloc-prof/libjemalloc_pic.a) is what the prefixed fixtures
# link in, as Debian's is on amd64.
#
# The source is Debian's own package (`apt-get source jemalloc`, which
# needs a deb-src entry: make deps-aarch64 adds one), configured the way
# debian/rules configures it for arm64, plus --enable-prof.
set -eu

out=${1:?usage: $0 OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
CROSS_COMPILE=${CROSS_COMPILE:-aarch64-linux-gnu-}
# clang: Debian's gcc-aarch64-linux-gnu conflicts with gcc-multilib.
A64_CC=${A64_CC:-clang --target=aarch64-linux-gnu}
lib=$out/jemalloc-prof/libjemalloc.so.2

pic=$out/jemalloc-prof/libjemalloc_pic.a
if [ -f "$lib" ] && [ -f "$pic" ] && [ -f "$out/jemalloc-prof/.stamp" ]; then
	exit 0
fi

src=$out/jemalloc-src
if [ ! -d "$src" ] || [ -z "$(ls -d "$src"/jemalloc-*/ 2>/dev/null)" ]; then
	rm -rf "$src"
	mkdir -p "$src"
	echo "  SOURCE  jemalloc (Debian)"
	if ! (cd "$src" && apt-get -qq -o APT::Sandbox::User=root source jemalloc >/dev/null); then
		echo "aarch64-jemalloc-prof: 'apt-get source jemalloc' failed; is there a deb-src" \
			"entry for bookworm main? (make deps-aarch64 adds one)" >&2
		exit 1
	fi
fi
dir=$(ls -d "$src"/jemalloc-*/ | head -n1)

echo "  BUILD   jemalloc --enable-prof for arm64"
bld=$out/jemalloc-build
rm -rf "$bld"
mkdir -p "$bld"
# Flags as debian/rules (via dpkg-buildflags) and its arm64 branch: 64 KiB
# maximum page size, 2 MiB huge pages.  Only --enable-prof is added (and
# the compiler is clang).
(
	cd "$bld"
	"$dir/configure" -q --host=aarch64-linux-gnu --build="$(uname -m)-linux-gnu" \
		CC="$A64_CC" AR="${CROSS_COMPILE}ar" \
		NM="${CROSS_COMPILE}nm" CFLAGS="-g -O2 -fstack-protector-strong" \
		--prefix=/usr --with-version=VERSION --with-lg-page=16 --with-lg-hugepage=21 \
		--disable-cxx --enable-prof
	make -s -j"$(nproc)" lib/libjemalloc.so.2 lib/libjemalloc_pic.a
) >"$out/jemalloc-build.log" 2>&1 || {
	tail -n 30 "$out/jemalloc-build.log" >&2
	echo "aarch64-jemalloc-prof: build failed, see $out/jemalloc-build.log" >&2
	exit 1
}
mkdir -p "$out/jemalloc-prof"
"${CROSS_COMPILE}strip" --strip-debug -o "$lib" "$bld/lib/libjemalloc.so.2"
# the archive the prefixed fixtures are made from (Makefile, JE_PIC)
cp "$bld/lib/libjemalloc_pic.a" "$pic"
grep -q '^#define JEMALLOC_PROF ' "$bld/include/jemalloc/internal/jemalloc_internal_defs.h" || {
	echo "aarch64-jemalloc-prof: configure did not enable profiling" >&2
	exit 1
}
rm -rf "$bld"
date >"$out/jemalloc-prof/.stamp"
