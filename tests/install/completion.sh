#!/bin/bash
# SPDX-License-Identifier: MIT
#
# completions/heapctl.bash, sourced into a bash and driven the way bash's
# programmable completion drives it (COMP_WORDS, COMP_CWORD, then the
# function `complete -p heapctl` names), against a real heapctl:
# commands, each command's options as its --help prints them, pids (this
# shell's among them) and threads, files, prof's words, formats.
#
#   tests/install/completion.sh HEAPCTL COMPLETION_FILE
# Prints "PASS install.completion" or "FAIL install.completion: why".

set -u
heapctl=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
file=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=/dev/null
if ! source "$file" 2>"$tmp/err"; then
	echo "FAIL install.completion: sourcing $file: $(head -1 "$tmp/err")"
	exit 1
fi
fn=$(complete -p heapctl 2>/dev/null | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
if [ -z "$fn" ]; then
	echo "FAIL install.completion: $file does not register a completion for heapctl"
	exit 1
fi

problems=()

# complete WORD... : the candidates for the last word, one per line.
complete_words() {
	COMP_WORDS=("$heapctl" "$@")
	COMP_CWORD=$#
	COMP_LINE="${COMP_WORDS[*]}"
	COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	"$fn" heapctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}" 2>/dev/null
	printf '%s\n' "${COMPREPLY[@]}"
}

# expect DESC WANT WORD...: WANT must be among the candidates.
expect() {
	local desc=$1 want=$2
	shift 2
	complete_words "$@" | grep -qxF -- "$want" ||
		problems+=("$desc: '$want' not offered for 'heapctl $*' (got: $(complete_words "$@" | head -8 | tr '\n' ' '))")
}

# reject DESC NOT WORD...: NOT must not be offered.
reject() {
	local desc=$1 not=$2
	shift 2
	! complete_words "$@" | grep -qxF -- "$not" ||
		problems+=("$desc: '$not' offered for 'heapctl $*'")
}

# Every command in --help, from an empty word.
cmds=$("$heapctl" --help | awk '/^Commands:/ { c = 1; next } c && /^$/ { exit }
	c && /^  [a-z]/ { print $1 }')
[ -n "$cmds" ] || problems+=("no commands in heapctl --help")
for c in $cmds; do
	expect "commands" "$c" ""
done
expect "command prefix" stats st
reject "command prefix" dump st
expect "top-level option" --version --v

# Each command's long options, as its --help lists them.
for c in $cmds; do
	for o in $("$heapctl" "$c" --help | sed -n 's/^  \(-[^ ].*\)$/\1/p' | sed 's/   .*//' |
		grep -oE '(^|[ ,])--[a-z][a-z0-9-]*' | tr -d ' ,'); do
		expect "options of $c" "$o" "$c" --
	done
done
expect "option prefix" --output dump --ou
reject "options are per command" --svg stats --

# Values.
expect "pid after -p" "$$" stats -p ""
expect "pid after --pid" "$$" info --pid ""
expect "thread after --tid" "$$" stats -p "$$" --tid ""
expect "prof" on prof ""
expect "prof" status prof -p 1 st
reject "prof takes one word" off prof on ""
expect "format" svg report x.heap --format ""
mkdir -p "$tmp/d" && : >"$tmp/d/before.heap" && : >"$tmp/d/base.heap"
expect "file after --base" "$tmp/d/before.heap" report x.heap --base "$tmp/d/be"
expect "file after -o" "$tmp/d/base.heap" dump -p 1 -o "$tmp/d/ba"
expect "profile for report" "$tmp/d/before.heap" report "$tmp/d/bef"

if [ ${#problems[@]} -eq 0 ]; then
	echo "PASS install.completion"
else
	more=""
	[ ${#problems[@]} -gt 1 ] && more=" (and $((${#problems[@]} - 1)) more)"
	echo "FAIL install.completion: ${problems[0]}$more"
	exit 1
fi
