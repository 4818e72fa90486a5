#!/bin/bash
# SPDX-License-Identifier: MIT
#
# `make install` puts bin/heapctl, share/man/man1/heapctl.1 and
# share/bash-completion/completions/heapctl under DESTDIR/PREFIX (PREFIX
# defaulting to /usr/local), the installed heapctl runs, and `make
# uninstall` with the same variables removes exactly those files.
#
#   tests/install/install.sh SRCDIR BUILD_DIR
# Prints "PASS install.make" or "FAIL install.make: why".

set -u
src=$1
b=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
problems=()
files="bin/heapctl share/man/man1/heapctl.1 share/bash-completion/completions/heapctl"

# check PREFIX (empty: the default) -> the directory it must land in
check() {
	local prefix=$1 root=$2 dest=$tmp/dest-${3} f
	local -a pv=()

	[ -n "$prefix" ] && pv=("PREFIX=$prefix")
	if ! make -C "$src" -s --no-print-directory B="$b" DESTDIR="$dest" "${pv[@]}" install \
		>"$tmp/out" 2>&1; then
		problems+=("make install ${pv[*]} failed: $(tail -2 "$tmp/out" | tr '\n' ' ')")
		return
	fi
	for f in $files; do
		[ -f "$dest$root/$f" ] || problems+=("make install ${pv[*]}: no $root/$f under DESTDIR")
	done
	[ -x "$dest$root/bin/heapctl" ] && ! "$dest$root/bin/heapctl" --version >/dev/null 2>&1 &&
		problems+=("the installed heapctl does not run")
	cmp -s "$src/docs/heapctl.1" "$dest$root/share/man/man1/heapctl.1" ||
		problems+=("the installed man page differs from docs/heapctl.1")
	if ! make -C "$src" -s --no-print-directory B="$b" DESTDIR="$dest" "${pv[@]}" uninstall \
		>"$tmp/out" 2>&1; then
		problems+=("make uninstall ${pv[*]} failed: $(tail -2 "$tmp/out" | tr '\n' ' ')")
		return
	fi
	left=$(find "$dest" -type f | sed "s|^$dest||" | tr '\n' ' ')
	[ -z "$left" ] || problems+=("make uninstall ${pv[*]} left: $left")
}

check "" /usr/local default
check /opt/heapctl /opt/heapctl opt

if [ ${#problems[@]} -eq 0 ]; then
	echo "PASS install.make"
else
	echo "FAIL install.make: ${problems[0]}$([ ${#problems[@]} -gt 1 ] && echo " (and $((${#problems[@]} - 1)) more)")"
	exit 1
fi
