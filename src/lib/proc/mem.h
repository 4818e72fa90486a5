/* SPDX-License-Identifier: MIT */
/* A live process's memory, with nothing stopped (mem.c). */
#ifndef HC_MEM_H
#define HC_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct hc_err;

/* Target memory.  mem_read uses process_vm_readv, falling back to memfd. */
int mem_read(pid_t pid, int memfd, uint64_t raddr, void *buf, size_t len, struct hc_err *err);
/* Through memfd alone (0 or -1): it reads nothing once the target has run execve. */
int mem_read_fd(int memfd, uint64_t raddr, void *buf, size_t len);
/*
 * Writes go through /proc/PID/mem: it can write read-only pages (FOLL_FORCE)
 * and it keeps the instruction cache coherent, which process_vm_writev
 * does not on arm64.
 */
int mem_write(int memfd, uint64_t raddr, const void *buf, size_t len, struct hc_err *err);

#endif
