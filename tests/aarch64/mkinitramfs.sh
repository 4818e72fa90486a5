#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build the initramfs of the arm64 test VM.
#
#   tests/aarch64/mkinitramfs.sh BUILD_DIR OUT.cpio.gz
#
# BUILD_DIR is the cross build (make ARCH=aarch64): heapctl, the unit
# tests, itest and the victims, plus sysroot/ and jemalloc-prof/ from
# tools/aarch64-sysroot.sh and tools/aarch64-jemalloc-prof.sh.  The image
# holds busybox (static), bash, nm, c++filt, those binaries, every shared
# library they need (resolved through DT_NEEDED in the sysroot, so a missing
# one fails here and not in the VM), musl's loader for the musl victim, and tests/aarch64/init as /init (A64_INIT
# names another one, for debugging).  No kernel modules and no root file
# system are needed.
set -eu

B=${1:?usage: $0 BUILD_DIR OUT.cpio.gz}
OUT=${2:?usage: $0 BUILD_DIR OUT.cpio.gz}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
SYS=$B/sysroot
CROSS_COMPILE=${CROSS_COMPILE:-aarch64-linux-gnu-}
READELF=${CROSS_COMPILE}readelf
STRIP=${CROSS_COMPILE}strip
MA=aarch64-linux-gnu

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,proc,sys,dev,tmp,etc,lib/$MA,usr/lib/$MA,opt/jemalloc-prof} \
	"$root/heapctl/build/tests" "$root/heapctl/build/victims" "$root/heapctl/tests"
# mktemp's 0700 would become the guest's /: no other user could run anything
chmod 755 "$root"
chmod 1777 "$root/tmp"
# where syms-build-id mounts the fixtures' debug tree, in a namespace of its own
mkdir -p "$root/usr/lib/debug"

# Programs: stripped of debug info (symbols stay: the victims' local
# function names are part of the tests).
put() {
	"$STRIP" --strip-debug -o "$2" "$1"
	chmod +x "$2"
}
put "$B/heapctl" "$root/heapctl/build/heapctl"
# the sampler heapctl carries, as a file too: a test loads it the way older heapctls did
mkdir -p "$root/heapctl/build/sampler"
cp "$B/sampler/heapctl-sampler.so" "$root/heapctl/build/sampler/"
# Unit tests keep their debug info: prof.symbolize_self reads its own.
for f in "$B"/tests/*; do
	case $f in *.d) continue ;; esac
	[ -f "$f" ] && cp "$f" "$root/heapctl/build/tests/$(basename "$f")"
done
for f in "$B"/victims/*; do
	case $f in
	*.d) continue ;;
	# the fixtures are what they are: stripped or not, their debug files with their CRCs
	*/fx_*) [ -f "$f" ] && cp "$f" "$root/heapctl/build/victims/" ;;
	*) [ -f "$f" ] && put "$f" "$root/heapctl/build/victims/$(basename "$f")" ;;
	esac
done
# the fixtures' debug files: a build-id tree and what a local debuginfod serves
[ -d "$B/fixtures/debugroot" ] && mkdir -p "$root/heapctl/build/fixtures" &&
	cp -r "$B/fixtures/debugroot" "$B/fixtures/debuginfod" "$root/heapctl/build/fixtures/"
cp "$top/tests/run-all.sh" "$top/tests/run-unit.sh" "$root/heapctl/tests/"
[ -d "$top/tests/data" ] && cp -r "$top/tests/data" "$root/heapctl/tests/"
# tests/run-all.sh also runs the heap-report end-to-end checks, which need
# perl, python3, Chromium and pprof: they belong to the native lane.
mkdir -p "$root/heapctl/tests/report"
cat >"$root/heapctl/tests/report/run.sh" <<'STUB'
#!/bin/sh
echo "SKIP report: flamegraph.pl, python3, Chromium and pprof checks run in the native lane only"
echo "0 passed, 0 failed, 1 skipped"
STUB
chmod +x "$root/heapctl/tests/report/run.sh"
# So do the installation checks (make, groff, a source tree).
mkdir -p "$root/heapctl/tests/install"
cat >"$root/heapctl/tests/install/run.sh" <<'STUB'
#!/bin/sh
echo "SKIP install: man page, completion, --version and make install checks run in the native lane only"
STUB
chmod +x "$root/heapctl/tests/install/run.sh"
put "$B/a64/a64-exit" "$root/bin/a64-exit"
cp "$B/jemalloc-prof/libjemalloc.so.2" "$root/opt/jemalloc-prof/"
cp "$SYS/bin/busybox" "$root/bin/busybox"
cp "$SYS/bin/bash" "$root/bin/bash"
# nm, which some integration tests run on the victims (busybox has none).
cp "$SYS/usr/bin/aarch64-linux-gnu-nm" "$root/bin/nm"
# c++filt, the oracle prof.demangle_oracle checks heapctl's demangler against
cp "$SYS/usr/bin/aarch64-linux-gnu-c++filt" "$root/bin/c++filt"
# strace, which tests run heapctl under to see its ptrace requests (through /usr/bin/env).
mkdir -p "$root/usr/bin"
cp "$SYS/usr/bin/strace" "$root/usr/bin/strace"
ln -s /bin/busybox "$root/usr/bin/env"
cp "${A64_INIT:-$here/init}" "$root/init"
chmod +x "$root/init"
echo "root:x:0:0:root:/tmp:/bin/sh" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"

# Shared libraries: the DT_NEEDED closure, from the sysroot.
find_lib() {
	local d

	for d in lib/$MA usr/lib/$MA; do
		if [ -e "$SYS/$d/$1" ]; then
			echo "$d/$1"
			return 0
		fi
	done
	return 1
}
# libstdc++: prof_demangle() dlopens it for C++ names, which test_prof checks.
cp -L "$SYS/usr/lib/$MA/libstdc++.so.6" "$root/usr/lib/$MA/"
# tcmalloc_minimal, which the sampler tests preload (LD_PRELOAD=libtcmalloc_minimal.so.4)
cp -L "$SYS/usr/lib/$MA/libtcmalloc_minimal.so.4" "$root/usr/lib/$MA/"
# libmicrohttpd, which heapctl serve dlopens, and its GnuTLS closure
cp -L "$SYS/usr/lib/$MA/libmicrohttpd.so.12" "$root/usr/lib/$MA/"
todo=$(find "$root" -type f -perm -u+x)
todo="$todo $root/opt/jemalloc-prof/libjemalloc.so.2 $root/usr/lib/$MA/libstdc++.so.6"
todo="$todo $root/usr/lib/$MA/libtcmalloc_minimal.so.4 $root/usr/lib/$MA/libmicrohttpd.so.12"
seen=" libstdc++.so.6 libtcmalloc_minimal.so.4 libmicrohttpd.so.12 "
while [ -n "$(echo $todo)" ]; do
	next=
	for f in $todo; do
		for n in $("$READELF" -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
			case $seen in *" $n "*) continue ;; esac
			# musl's own libc (glibc's is libc.so.6): its loader, carried below
			[ "$n" = libc.so ] && continue
			seen="$seen$n "
			rel=$(find_lib "$n") || {
				echo "mkinitramfs: $n (needed by $f) is not in $SYS" >&2
				exit 1
			}
			cp -L "$SYS/$rel" "$root/$rel"
			next="$next $root/$rel"
		done
	done
	todo=$next
done
cp -L "$SYS/lib/$MA/ld-linux-aarch64.so.1" "$root/lib/$MA/"
ln -s "$MA/ld-linux-aarch64.so.1" "$root/lib/ld-linux-aarch64.so.1"
# musl's loader, which is its libc too, for the dynamic musl victim (musl_leak): laid out
# as Debian's musl package has it.  Without the sysroot's musl the victim was not built.
if [ -f "$SYS/lib/aarch64-linux-musl/libc.so" ]; then
	mkdir -p "$root/lib/aarch64-linux-musl"
	cp -L "$SYS/lib/aarch64-linux-musl/libc.so" "$root/lib/aarch64-linux-musl/"
	ln -s aarch64-linux-musl/libc.so "$root/lib/ld-musl-aarch64.so.1"
fi
# Debian's jemalloc, for the test of the "built without profiling" hint.
cp -L "$SYS/usr/lib/$MA/libjemalloc.so.2" "$root/usr/lib/$MA/"
# Debian's mimalloc, which the mimalloc tests preload (LD_PRELOAD=libmimalloc.so.2).
cp -L "$SYS/usr/lib/$MA/libmimalloc.so.2" "$root/usr/lib/$MA/"

(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
