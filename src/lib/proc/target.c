// SPDX-License-Identifier: MIT
/* A target's lifetime: what hc_target_open() fills and hc_target_close() empties. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "procfs.h"
#include "target.h"

struct hc_target *target_new(pid_t pid)
{
	struct hc_target *t = calloc(1, sizeof(*t));
	struct procfs_stat st;
	char path[96];

	if (!t)
		return NULL;
	t->pid = pid;
	t->lockfd = t->memfd = t->mapsfd = -1;
	t->arch = hc_arch_host();
	snprintf(t->proc, sizeof(t->proc), "/proc/%d", pid);
	snprintf(path, sizeof(path), "%s/task/%d/stat", t->proc, pid);
	if (procfs_stat(path, &st) < 0)
		return t;
	/*
	 * The main thread's first frame sits below argc: where the stack scan
	 * ends.  Its task's stat (the process's sums the times of every
	 * thread); a zombie leader's has none, a live thread's has the same.
	 */
	t->start_stack = st.start_stack;
	if (st.state == 'Z' || st.state == 'X') {
		procfs_live_task(pid, t->proc, sizeof(t->proc));
		snprintf(path, sizeof(path), "%s/stat", t->proc);
		if (procfs_stat(path, &st) == 0)
			t->start_stack = st.start_stack;
	}
	return t;
}

void target_free(struct hc_target *t)
{
	if (!t)
		return;
	objs_free(t);
	free(t->shadow);
	free(t->regs_area);
	if (t->memfd >= 0)
		close(t->memfd);
	if (t->mapsfd >= 0)
		close(t->mapsfd);
	free(t);
}
