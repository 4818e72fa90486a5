#!/bin/bash
# SPDX-License-Identifier: MIT
#
# docs/heapctl.1 against what heapctl itself prints, both ways:
#   - every command in `heapctl --help` has a ".SS CMD" under COMMANDS, and
#     every ".SS" there is a command;
#   - every option line of `heapctl CMD --help` ("  -p, --pid PID ...")
#     has each of its options in CMD's section or in OPTIONS (the common
#     ones), and every option the man page gives a command (its ".TP"
#     lines) is printed by that command's --help; OPTIONS against the
#     top-level --help the same way;
#   - the page renders without groff warnings (skipped without groff).
# Nothing is listed here: the help texts are read at test time.
#
#   tests/install/man-sync.sh HEAPCTL MANPAGE
# Prints "PASS install.man-sync" / "FAIL install.man-sync: why", and the same
# for install.man-render (or SKIP without groff).

set -u
heapctl=$1
man=$2

fail() {
	echo "FAIL $1: $2"
}

# Option tokens on the option lines of a help text ("  -x, --long ARG   text").
help_opts() {
	sed -n 's/^  \(-[^ ].*\)$/\1/p' | sed 's/   .*//' |
		grep -oE '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' | tr -d ' ,' | sort -u
}

# The page with fonts, \- and \& undone.
plain() {
	sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\&//g' -e "s/\\\\(aq/'/g" "$man"
}

# Lines of section SH (and, if given, subsection SS) of the plain page.
section() {
	plain | awk -v sh="$1" -v ss="${2:-}" '
		/^\.SH / { insh = ($2 == sh); inss = 0; next }
		/^\.SS / { inss = ($2 == ss); next }
		insh && (ss == "" || inss) { print }'
}

# Option tokens of the ".TP" lines (the line after each .TP) in stdin.
man_opts() {
	awk 'tp { print; tp = 0 } /^\.TP/ { tp = 1 }' |
		grep -oE '(^|[ ",])--?[A-Za-z][A-Za-z0-9-]*' | tr -d ' ,"' | sort -u
}

if [ ! -x "$heapctl" ] || [ ! -f "$man" ]; then
	fail install.man-sync "need $heapctl and $man"
	exit 1
fi
top=$("$heapctl" --help) || { fail install.man-sync "heapctl --help failed"; exit 1; }
cmds=$(printf '%s\n' "$top" | awk '/^Commands:/ { c = 1; next } c && /^$/ { exit }
	c && /^  [a-z]/ { print $1 }' | sort -u)
man_cmds=$(plain | awk '/^\.SH / { c = ($2 == "COMMANDS"); next }
	c && /^\.SS / { print $2 }' | sort -u)
common_help=$(printf '%s\n' "$top" | help_opts)
common_man=$(section OPTIONS | man_opts)

problems=()
[ -n "$cmds" ] || problems+=("no commands found in heapctl --help")
for c in $(comm -23 <(printf '%s\n' "$cmds") <(printf '%s\n' "$man_cmds")); do
	problems+=("command '$c' (heapctl --help) has no .SS $c in COMMANDS")
done
for c in $(comm -13 <(printf '%s\n' "$cmds") <(printf '%s\n' "$man_cmds")); do
	problems+=(".SS $c in COMMANDS is not a command in heapctl --help")
done
for o in $(comm -23 <(printf '%s\n' "$common_help") <(printf '%s\n' "$common_man")); do
	problems+=("option $o (heapctl --help) is not in OPTIONS")
done
for o in $(comm -13 <(printf '%s\n' "$common_help") <(printf '%s\n' "$common_man")); do
	problems+=("option $o in OPTIONS is not in heapctl --help")
done
nopts=0
for c in $cmds; do
	if ! h=$("$heapctl" "$c" --help 2>&1); then
		problems+=("heapctl $c --help failed")
		continue
	fi
	copts=$(printf '%s\n' "$h" | help_opts)
	mopts=$(section COMMANDS "$c" | man_opts)
	for o in $copts; do
		nopts=$((nopts + 1))
		grep -qxF -- "$o" <<<"$mopts" || grep -qxF -- "$o" <<<"$common_man" ||
			problems+=("heapctl $c --help has $o; not in .SS $c nor OPTIONS")
	done
	for o in $mopts; do
		grep -qxF -- "$o" <<<"$copts" ||
			problems+=(".SS $c documents $o; heapctl $c --help does not have it")
	done
done
[ "$nopts" -gt 0 ] || problems+=("no options found in any command's --help")

if [ ${#problems[@]} -eq 0 ]; then
	echo "PASS install.man-sync"
else
	msg="${problems[0]}"
	if [ ${#problems[@]} -gt 1 ]; then
		more=$(printf '%s; ' "${problems[@]:1:4}")
		msg="$msg (and $((${#problems[@]} - 1)) more: ${more%; })"
	fi
	fail install.man-sync "$msg"
fi

if command -v groff >/dev/null 2>&1; then
	w=$(groff -man -ww -z "$man" 2>&1)
	if [ -z "$w" ]; then
		echo "PASS install.man-render"
	else
		fail install.man-render "groff warns: $(printf '%s' "$w" | head -3 | tr '\n' ' ')"
	fi
else
	echo "SKIP install.man-render: groff not installed"
fi
[ ${#problems[@]} -eq 0 ]
