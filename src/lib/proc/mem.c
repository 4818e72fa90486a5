// SPDX-License-Identifier: MIT
/*
 * A live process's memory, read and written without stopping anything:
 * process_vm_readv, and /proc/PID/mem through the fd the image keeps.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "mem.h"

int mem_read(pid_t pid, int memfd, uint64_t raddr, void *buf, size_t len, struct hc_err *err)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)raddr, .iov_len = len };
	uint64_t t0 = now_ns();
	ssize_t n;

	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n != (ssize_t)len && memfd >= 0)
		n = pread(memfd, buf, len, (off_t)raddr);
	pclock_add(PCLK_MEM, t0);
	if (n == (ssize_t)len)
		return 0;
	if (n >= 0)
		errno = EFAULT;
	return err_errno(err, errno, "read %zu bytes at 0x%llx in pid %d", len,
			 (unsigned long long)raddr, pid);
}

int mem_read_fd(int memfd, uint64_t raddr, void *buf, size_t len)
{
	return pread(memfd, buf, len, (off_t)raddr) == (ssize_t)len ? 0 : -1;
}

int mem_write(int memfd, uint64_t raddr, const void *buf, size_t len, struct hc_err *err)
{
	uint64_t t0 = now_ns();
	ssize_t n = pwrite(memfd, buf, len, (off_t)raddr);

	pclock_add(PCLK_MEM, t0);
	if (n == (ssize_t)len)
		return 0;
	if (n >= 0)
		errno = EFAULT;
	return err_errno(err, errno, "write %zu bytes at 0x%llx", len, (unsigned long long)raddr);
}
