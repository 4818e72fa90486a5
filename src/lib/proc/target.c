// SPDX-License-Identifier: MIT
/* An image's lifetime: what hc_target_open() fills and hc_target_close() empties. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"
#include "image.h"

int image_init(struct image *im, pid_t pid)
{
	struct procfs_stat st;
	char path[96];

	memset(im, 0, sizeof(*im));
	im->pid = pid;
	im->memfd = im->mapsfd = -1;
	im->arch = hc_arch_host();
	snprintf(im->proc, sizeof(im->proc), "/proc/%d", pid);
	snprintf(path, sizeof(path), "%s/task/%d/stat", im->proc, pid);
	if (procfs_stat(path, &st) < 0)
		return 0;
	/*
	 * The main thread's first frame sits below argc: where the stack scan
	 * ends.  Its task's stat (the process's sums the times of every
	 * thread); a zombie leader's has none, a live thread's has the same.
	 */
	im->start_stack = st.start_stack;
	if (st.state == 'Z' || st.state == 'X') {
		procfs_live_task(pid, im->proc, sizeof(im->proc));
		snprintf(path, sizeof(path), "%s/stat", im->proc);
		if (procfs_stat(path, &st) == 0)
			im->start_stack = st.start_stack;
	}
	return 0;
}

void image_fini(struct image *im)
{
	objs_free(im);
	if (im->memfd >= 0)
		close(im->memfd);
	if (im->mapsfd >= 0)
		close(im->mapsfd);
	im->memfd = im->mapsfd = -1;
}
