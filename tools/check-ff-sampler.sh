#!/bin/sh
# SPDX-License-Identifier: MIT
#
# tools/check-ff-sampler.sh READELF SO: the freestanding sampler must load
# with nothing but heapctl's own mapping and its R_*_RELATIVE relocations:
# no DT_NEEDED, no PT_INTERP, no PT_TLS, no other dynamic relocation.
# Prints what is wrong and exits 1.
set -u
readelf=$1
so=$2
bad=0

if ! "$readelf" -W -d -l -r "$so" >/dev/null; then
	echo "check-ff-sampler: $readelf cannot read $so" >&2
	exit 1
fi
if "$readelf" -W -d "$so" | grep -q '(NEEDED)'; then
	echo "check-ff-sampler: $so needs a library:" >&2
	"$readelf" -W -d "$so" | grep '(NEEDED)' >&2
	bad=1
fi
hdrs=$("$readelf" -W -l "$so" | awk '$1 == "INTERP" || $1 == "TLS" { print $1 }')
if [ -n "$hdrs" ]; then
	echo "check-ff-sampler: $so has program headers it may not:" $hdrs >&2
	bad=1
fi
# relocation lines: offset, info, type, ...
rel=$("$readelf" -W -r "$so" | awk '$1 ~ /^[0-9a-f]+$/ && NF >= 3 && $3 !~ /^R_(X86_64|AARCH64)_RELATIVE$/')
if [ -n "$rel" ]; then
	echo "check-ff-sampler: $so has relocations other than R_*_RELATIVE:" >&2
	echo "$rel" >&2
	bad=1
fi
exit $bad
