#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Boot Debian's arm64 cloud kernel under qemu-system-aarch64 with the test
# initramfs, and pass the suite's result back.
#
#   tests/aarch64/run-qemu.sh IMAGE INITRAMFS LOG [NAME=VALUE...]
#
# NAME=VALUE words go to the kernel command line, and from there into the
# environment of /init (ITEST_FILTER=..., A64_SHELL=1).  The console is
# copied to LOG.  The exit status is the suite's, carried out of the guest
# by semihosting (tests/aarch64/a64-exit.c); the "HEAPCTL-A64-DONE rc=N"
# marker on the console must agree with it, so a guest that panics or
# reboots (panic=-1, -no-reboot: QEMU exits 0) never passes.
#
# A64_TIMEOUT (seconds, default 2700) bounds the whole boot.
#
# Measured on this kind of machine (QEMU 7.2, TCG): the guest reaches /init
# in about 2 s.  Plain -cpu max emulates pointer authentication with the
# architected QARMA algorithm and boots in 10 s instead; pauth-impdef=on
# uses a cheaper IMPLEMENTATION DEFINED one.  -smp 2 is slower, not
# faster, under TCG.  Without QEMU's recommended packages the virt board
# has no NIC firmware, hence -nic none.
set -u

IMAGE=${1:?usage: $0 IMAGE INITRAMFS LOG [NAME=VALUE...]}
INITRD=${2:?usage: $0 IMAGE INITRAMFS LOG [NAME=VALUE...]}
LOG=${3:?usage: $0 IMAGE INITRAMFS LOG [NAME=VALUE...]}
shift 3
A64_TIMEOUT=${A64_TIMEOUT:-2700}
QEMU=${QEMU:-qemu-system-aarch64}

if ! command -v "$QEMU" >/dev/null 2>&1; then
	echo "FAIL check-aarch64: $QEMU not found (make deps-aarch64 installs qemu-system-arm)"
	exit 1
fi

t0=$(date +%s)
set -o pipefail
# </dev/null: QEMU must never wait for, or eat, the caller's input.
timeout -k 10 "$A64_TIMEOUT" "$QEMU" -M virt -cpu max,pauth-impdef=on -m 1024 \
	-nographic -no-reboot -nic none \
	-kernel "$IMAGE" -initrd "$INITRD" \
	-append "console=ttyAMA0 panic=-1 quiet $*" \
	-semihosting-config enable=on,target=native,userspace=on </dev/null |
	sed -u 's/\r$//' | tee "$LOG"
rc=${PIPESTATUS[0]}
t1=$(date +%s)
echo "# check-aarch64: qemu exited $rc after $((t1 - t0)) s"

marker=$(sed -n 's/^HEAPCTL-A64-DONE rc=\([0-9]*\)$/\1/p' "$LOG" | tail -n1)
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "FAIL check-aarch64: the VM did not finish within ${A64_TIMEOUT} s"
	exit 1
fi
if [ -z "$marker" ]; then
	echo "FAIL check-aarch64: the suite never finished in the VM (panic, or init died); see $LOG"
	exit 1
fi
if [ "$marker" != "$rc" ]; then
	echo "FAIL check-aarch64: the suite said rc=$marker but QEMU exited $rc; see $LOG"
	exit 1
fi
exit "$rc"
