#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build the arm64 sysroot heapctl cross-compiles against, and the boot
# files for the qemu-system-aarch64 suite, from Debian's own arm64
# packages: `apt-get download` + `dpkg -x`, never `apt-get install`
# (arm64 -dev packages on the host would force version lockstep with the
# amd64 ones and replace the host's libjemalloc-dev and busybox).
#
#   tools/aarch64-sysroot.sh OUTDIR
#
# OUTDIR/sysroot    headers, libraries and pkg-config files
# OUTDIR/debs       the downloaded packages (a cache: kept between runs)
# OUTDIR/Image      the cloud kernel, an uncompressed arm64 Image
# OUTDIR/.stamp     written last; its content is the package list
#
# Needs `dpkg --add-architecture arm64` and `apt-get update` done before
# (make deps-aarch64 does both).
set -eu

out=${1:?usage: $0 OUTDIR}
mkdir -p "$out/debs"
out=$(cd "$out" && pwd)

# Libraries heapctl links with, their runtime dependencies, and what the
# initramfs needs (libmicrohttpd and GnuTLS's closure: heapctl serve loads it).  musl and musl-dev: the musl victims (musl_leak, built
# with musl's crt files and libc by hand, see the Makefile) and their loader,
# /lib/ld-musl-aarch64.so.1, in the guest.  The runtime closure is checked again, file by file, by
# tests/aarch64/mkinitramfs.sh.
PKGS="libc6 libgcc-s1 libstdc++6 libexpat1 libexpat1-dev
	libelf1 libelf-dev libdw1 libdw-dev
	libunwind8 libunwind-dev libcapstone4 libcapstone-dev
	libjemalloc2 libjemalloc-dev
	zlib1g zlib1g-dev liblzma5 liblzma-dev libzstd1 libbz2-1.0
	libgoogle-perftools-dev libgoogle-perftools4 libtcmalloc-minimal4 libmimalloc2.0
	binutils-aarch64-linux-gnu libbinutils
	busybox-static bash libtinfo6 strace
	musl musl-dev
	libmicrohttpd12 libmicrohttpd-dev libgnutls30 libp11-kit0 libffi8 libidn2-0
	libunistring2 libtasn1-6 libnettle8 libhogweed6 libgmp10"

# The cloud kernel's package name changes with every ABI bump; the
# metapackage always points at the current one.
kpkg=$(apt-cache depends linux-image-cloud-arm64:arm64 2>/dev/null |
	sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*-cloud-arm64\).*/\1/p' | head -n1)
if [ -z "$kpkg" ]; then
	echo "aarch64-sysroot: cannot resolve linux-image-cloud-arm64:arm64;" \
		"run 'dpkg --add-architecture arm64 && apt-get update' (make deps-aarch64)" >&2
	exit 1
fi

want="$(echo $PKGS) $kpkg"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$want" ] && [ -f "$out/Image" ]; then
	exit 0
fi

echo "  SYSROOT $out ($kpkg)"
cd "$out/debs"
list=
for p in $PKGS $kpkg; do
	list="$list $p:arm64"
done
# apt's download sandbox user cannot write to a root-owned work tree.
apt-get -qq -o APT::Sandbox::User=root download $list

rm -rf "$out/sysroot" "$out/kroot"
mkdir -p "$out/sysroot" "$out/kroot"
for p in $PKGS; do
	deb=$(ls -t "${p}"_*_arm64.deb 2>/dev/null | head -n1)
	[ -n "$deb" ] || { echo "aarch64-sysroot: $p was not downloaded" >&2; exit 1; }
	dpkg -x "$deb" "$out/sysroot"
done
deb=$(ls -t "${kpkg}"_*_arm64.deb | head -n1)
dpkg -x "$deb" "$out/kroot"
# Debian's arm64 vmlinuz is an uncompressed Image ("ARMd" magic at 0x38).
img=$(ls "$out"/kroot/boot/vmlinuz-* | head -n1)
if [ "$(dd if="$img" bs=1 skip=56 count=4 2>/dev/null)" != "ARMd" ]; then
	echo "aarch64-sysroot: $img is not an uncompressed arm64 Image" >&2
	exit 1
fi
cp "$img" "$out/Image"
rm -rf "$out/kroot"

# Linker scripts and symlinks in -dev packages point at absolute paths
# (/lib/aarch64-linux-gnu/...): make them relative to the sysroot.
find "$out/sysroot" -type l | while read -r l; do
	t=$(readlink "$l")
	case $t in
	/*) ln -sfnr "$out/sysroot$t" "$l" ;;
	esac
done

echo "$want" >"$out/.stamp"
