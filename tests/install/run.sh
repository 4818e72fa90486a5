#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What an installation gives a user, checked against the built heapctl:
# the man page in step with --help, the bash completion, --version's git
# revision, and `make install`/`make uninstall` with PREFIX and DESTDIR.
#
#   tests/install/run.sh BUILD_DIR
# Prints "PASS name" / "FAIL name: why" / "SKIP name: why" per check and
# exits 1 if any failed.

set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
b=$1
case $b in
/*) heapctl=$b/heapctl ;;
*) heapctl=$src/$b/heapctl ;;
esac
rc=0

"$here/man-sync.sh" "$heapctl" "$src/docs/heapctl.1" || rc=1
"$here/completion.sh" "$heapctl" "$src/completions/heapctl.bash" || rc=1
"$here/version.sh" "$heapctl" "$src" || rc=1
"$here/install.sh" "$src" "$b" || rc=1
exit $rc
