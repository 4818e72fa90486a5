#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Everything `make check-aarch64` needs, on a Debian 12 x86_64 host:
#
#   tools/aarch64-deps.sh OUTDIR
#
# 1. Host packages: qemu-system-arm (qemu-system-aarch64); clang with the
#    arm64 binutils, libc and libgcc as the cross compiler (Debian's
#    gcc-aarch64-linux-gnu conflicts with gcc-multilib, which the native
#    lane installs); cpio; dpkg-dev (for apt-get source).
# 2. arm64 as a foreign dpkg architecture, so apt can fetch arm64 packages,
#    and a deb-src entry, so apt can fetch Debian's jemalloc source.
# 3. The arm64 sysroot and kernel (tools/aarch64-sysroot.sh), and jemalloc
#    built with --enable-prof (tools/aarch64-jemalloc-prof.sh).
# Nothing for arm64 is apt-get installed on the host.
set -eu

out=${1:?usage: $0 OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

HOST_PKGS="qemu-system-arm clang binutils-aarch64-linux-gnu libc6-dev-arm64-cross
	libgcc-12-dev-arm64-cross cpio dpkg-dev bzip2 xz-utils"
missing=
for p in $HOST_PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done

update=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	echo "  DEPS    dpkg --add-architecture arm64"
	$SUDO dpkg --add-architecture arm64
	update=1
fi

# A deb-src twin of the configured Debian archive(s), for `apt-get source`.
src=/etc/apt/sources.list.d/heapctl-deb-src.sources
if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ &&
	! grep -qs '^deb-src ' /etc/apt/sources.list; then
	echo "  DEPS    adding $src"
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
			$SUDO tee "$src" >/dev/null
	else
		grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' |
			$SUDO tee /etc/apt/sources.list.d/heapctl-deb-src.list >/dev/null
	fi
	update=1
fi

if [ -n "$missing" ] || [ "$update" = 1 ] ||
	[ -z "$(apt-cache policy linux-image-cloud-arm64:arm64 2>/dev/null | grep Candidate | grep -v none)" ]; then
	echo "  DEPS    apt-get update"
	$SUDO apt-get update -qq
fi
if [ -n "$missing" ]; then
	echo "  DEPS    installing:$missing"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
		$missing >/dev/null
fi

"$here/aarch64-sysroot.sh" "$out"
CROSS_COMPILE=aarch64-linux-gnu- "$here/aarch64-jemalloc-prof.sh" "$out"
