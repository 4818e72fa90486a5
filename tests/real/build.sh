#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Build the real programs tests/real/static-programs.sh profiles, from
# Debian's source packages (apt-get source; deb-src must be configured),
# into build/real/ (never committed):
#
#   redis     redis-server linked with musl (musl-gcc), once dynamic
#             (redis-server-musl-dyn) and once static (-musl-static);
#             MALLOC=libc: musl's malloc, not the bundled jemalloc
#   busybox   busybox with Debian's static configuration, unstripped
#             (busybox-static): Debian's busybox-static is stripped
#   bash      bash configured as Debian's bash-static is, unstripped
#             (bash-static)
#
# Usage: tests/real/build.sh [redis|busybox|bash]...   (default: all)
# Environment: REAL_DIR (default build/real), REAL_SRC (default /tmp/heapctl-real-src)
set -eu

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
REAL_DIR=${REAL_DIR:-$ROOT/build/real}
SRC=${REAL_SRC:-/tmp/heapctl-real-src}
JOBS=${JOBS:-2}
mkdir -p "$REAL_DIR" "$SRC"

# apt-get source PKG into $SRC/PKG, once; prints the unpacked directory.
fetch() {
	local pkg=$1 d
	if ! ls -d "$SRC/$pkg"/"$pkg"-*/ >/dev/null 2>&1; then
		mkdir -p "$SRC/$pkg"
		(cd "$SRC/$pkg" && apt-get source "$pkg") >&2
	fi
	d=$(ls -d "$SRC/$pkg"/"$pkg"-*/ | head -n 1)
	echo "${d%/}"
}

build_redis() {
	local src kind
	command -v musl-gcc >/dev/null || { echo "redis: musl-gcc missing (apt-get install musl-tools)" >&2; return 1; }
	src=$(fetch redis)
	for kind in dyn static; do
		rm -rf "$src.$kind"
		cp -a "$src" "$src.$kind"
		if [ "$kind" = static ]; then
			make -C "$src.$kind" -j"$JOBS" MALLOC=libc CC=musl-gcc USE_SYSTEMD=no \
				BUILD_TLS=no LDFLAGS=-static >"$src.$kind.log" 2>&1
		else
			make -C "$src.$kind" -j"$JOBS" MALLOC=libc CC=musl-gcc USE_SYSTEMD=no \
				BUILD_TLS=no >"$src.$kind.log" 2>&1
		fi || { tail -n 30 "$src.$kind.log" >&2; return 1; }
		cp "$src.$kind/src/redis-server" "$REAL_DIR/redis-server-musl-$kind"
	done
}

build_busybox() {
	local src
	src=$(fetch busybox)
	cp "$src/debian/config/pkg/static" "$src/.config"
	(cd "$src" && yes "" | make oldconfig >/dev/null 2>&1 &&
	 make -j"$JOBS" >"$src.log" 2>&1) || { tail -n 30 "$src.log" >&2; return 1; }
	cp "$src/busybox_unstripped" "$REAL_DIR/busybox-static"
}

build_bash() {
	local src
	src=$(fetch bash)
	rm -rf "$src/build-static"
	mkdir -p "$src/build-static"
	# debian/rules: conf_args + --enable-static-link (bash-static)
	(cd "$src/build-static" &&
	 ../configure --enable-largefile --prefix=/usr --without-bash-malloc \
		--enable-static-link CFLAGS="-g -O2" >"$src.log" 2>&1 &&
	 make -j"$JOBS" bash >>"$src.log" 2>&1) || { tail -n 30 "$src.log" >&2; return 1; }
	cp "$src/build-static/bash" "$REAL_DIR/bash-static"
}

[ $# -gt 0 ] || set -- redis busybox bash
for what in "$@"; do
	start=$(date +%s)
	case $what in
	redis | busybox | bash) "build_$what" ;;
	*) echo "usage: $0 [redis|busybox|bash]..." >&2; exit 2 ;;
	esac
	echo "$what: built in $(($(date +%s) - start)) s into $REAL_DIR" >&2
done
