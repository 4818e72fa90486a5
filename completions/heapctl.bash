# SPDX-License-Identifier: MIT
# bash completion for heapctl(1).
#
# Commands and each command's options are read from heapctl's own --help
# (once per shell and command), so they never drift from the program.
# Values: process ids (and names) for -p/--pid, the target's threads for
# --tid, files for -o/--output, --base, --svg, --folded and report's
# profile, directories for --sysroot, on/off/reset/status after prof, the
# formats after --format.

# The options one help text lists on its option lines ("  -p, --pid PID  ...").
_heapctl_help_opts()
{
	"$1" ${2:+"$2"} --help 2>/dev/null |
		sed -n 's/^  \(-[^ ].*\)$/\1/p' | sed 's/   .*//' |
		grep -oE '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' | tr -d ' ,'
}

_heapctl_commands()
{
	"$1" --help 2>/dev/null |
		awk '/^Commands:/ { c = 1; next } c && /^$/ { exit } c && /^  [a-z]/ { print $1 }'
}

_heapctl_pids()
{
	local d

	for d in /proc/[0-9]*; do
		printf '%s\n' "${d#/proc/}"
	done
}

_heapctl()
{
	local cur prev exe cmd w i pid words var
	local -a opts

	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=""
	((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
	exe=${COMP_WORDS[0]}
	command -v "$exe" >/dev/null 2>&1 || exe=heapctl

	# The command word: the first word that is neither an option nor an option's value.
	cmd=""
	pid=""
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		case $w in
		-p | --pid)
			pid=${COMP_WORDS[i + 1]:-}
			((i++))
			;;
		--pid=*) pid=${w#--pid=} ;;
		--tid | --timeout | -o | --output | --svg | --folded | --base | --format | --top | \
			--arena | --for | --warm-up | --sample-bytes | --sampler | --opts | --sysroot | \
			--debug-file | --every | --count | --textfile | --dump-on-growth | --dir | \
			--listen | --select | --profile | --min-interval | --token-file)
			((i++))
			;;
		-*) ;;
		*)
			if [ -z "$cmd" ]; then
				cmd=$w
			fi
			;;
		esac
	done

	case $prev in
	-p | --pid)
		if [[ $cur == [0-9]* || -z $cur ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$(_heapctl_pids)" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$(cat /proc/[0-9]*/comm 2>/dev/null | sort -u)" -- "$cur")
		fi
		return
		;;
	--tid)
		if [ -n "$pid" ] && [ -d "/proc/$pid/task" ]; then
			mapfile -t COMPREPLY < <(compgen -W "$(ls "/proc/$pid/task")" -- "$cur")
		fi
		return
		;;
	--profile | --select)
		mapfile -t COMPREPLY < <(compgen -W "$(cat /proc/[0-9]*/comm 2>/dev/null | sort -u)" -- "$cur")
		return
		;;
	-o | --output | --base | --svg | --folded | --debug-file | --token-file)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		compopt -o filenames 2>/dev/null
		return
		;;
	--sysroot)
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		compopt -o filenames 2>/dev/null
		return
		;;
	--format)
		mapfile -t COMPREPLY < <(compgen -W "folded svg pprof text json" -- "$cur")
		return
		;;
	--timeout | --top | --arena | --for | --warm-up | --sample-bytes | --opts | --listen | \
		--min-interval)
		return
		;;
	esac

	if [ -z "$cmd" ]; then
		if [[ $cur == -* ]]; then
			mapfile -t opts < <(_heapctl_help_opts "$exe")
			mapfile -t COMPREPLY < <(compgen -W "${opts[*]}" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$(_heapctl_commands "$exe")" -- "$cur")
		fi
		return
	fi

	if [[ $cur == -* ]]; then
		# Cached per command: one `heapctl CMD --help` per shell.
		var=_heapctl_opts_${cmd//[^a-z]/_}
		if [ -z "${!var:-}" ]; then
			printf -v "$var" '%s' "$(_heapctl_help_opts "$exe" "$cmd" | sort -u | tr '\n' ' ')"
		fi
		words=${!var}
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return
	fi

	case $cmd in
	prof)
		# on|off|reset|status once, right after "prof".
		for ((i = 1; i < COMP_CWORD; i++)); do
			case ${COMP_WORDS[i]} in on | off | reset | status) return ;; esac
		done
		mapfile -t COMPREPLY < <(compgen -W "on off reset status" -- "$cur")
		;;
	help)
		mapfile -t COMPREPLY < <(compgen -W "$(_heapctl_commands "$exe")" -- "$cur")
		;;
	report)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		compopt -o filenames 2>/dev/null
		;;
	esac
}

complete -F _heapctl heapctl
