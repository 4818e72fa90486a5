#!/bin/bash
# SPDX-License-Identifier: MIT
#
# heapctl --version names the revision it was built from:
#   "heapctl X.Y.Z (git REV)", REV as `git describe --always --dirty`
# gives it in a git checkout; tools/gen-version.sh, which makes it, says
# "unknown" in a tree without .git (a release tarball, even one unpacked
# inside another repository) and takes HC_GIT_REV from packagers.
#
#   tests/install/version.sh HEAPCTL SRCDIR
# Prints "PASS install.version" or "FAIL install.version: why".

set -u
heapctl=$1
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
problems=()

v=$("$heapctl" --version 2>&1)
if [[ ! $v =~ ^heapctl\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ ([A-Za-z0-9._+-]+)\)$ ]]; then
	problems+=("--version printed '$v', not 'heapctl X.Y.Z (git REV)'")
else
	rev=${BASH_REMATCH[1]}
	if command -v git >/dev/null 2>&1 && [ -e "$src/.git" ]; then
		want=$(git -C "$src" describe --always --dirty 2>/dev/null)
		# Edits since the build may add or drop "-dirty"; the commit must match.
		[ "${rev%-dirty}" = "${want%-dirty}" ] ||
			problems+=("--version says git $rev, the tree is at $want")
	fi
fi

# A tarball: no .git; inside an unrelated repository; with a packager's override.
mkdir -p "$tmp/outer/heapctl-0/tools"
cp "$src/tools/gen-version.sh" "$tmp/outer/heapctl-0/tools/"
"$tmp/outer/heapctl-0/tools/gen-version.sh" "$tmp/outer/heapctl-0" "$tmp/v1.h"
grep -qx '#define HC_GIT_REV "unknown"' "$tmp/v1.h" ||
	problems+=("without .git: $(tail -1 "$tmp/v1.h")")
if command -v git >/dev/null 2>&1; then
	git -C "$tmp/outer" init -q 2>/dev/null &&
		git -C "$tmp/outer" -c user.name=t -c user.email=t@t commit -q --allow-empty -m x 2>/dev/null
	"$tmp/outer/heapctl-0/tools/gen-version.sh" "$tmp/outer/heapctl-0" "$tmp/v2.h"
	grep -qx '#define HC_GIT_REV "unknown"' "$tmp/v2.h" ||
		problems+=("unpacked inside another repository: $(tail -1 "$tmp/v2.h")")
fi
HC_GIT_REV='1.2-deb"1' "$tmp/outer/heapctl-0/tools/gen-version.sh" "$tmp/outer/heapctl-0" "$tmp/v3.h"
grep -qx '#define HC_GIT_REV "1.2-deb1"' "$tmp/v3.h" ||
	problems+=("HC_GIT_REV override: $(tail -1 "$tmp/v3.h")")

if [ ${#problems[@]} -eq 0 ]; then
	echo "PASS install.version"
else
	echo "FAIL install.version: ${problems[0]}$([ ${#problems[@]} -gt 1 ] && echo " (and $((${#problems[@]} - 1)) more)")"
	exit 1
fi
