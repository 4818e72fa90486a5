// SPDX-License-Identifier: MIT
/*
 * plain_victim: a glibc-malloc process (no jemalloc anywhere) for the
 * "target isn't using jemalloc" tests.
 *
 * Usage: plain_victim READY_FD CTL_FD REPLY_FD   (or see vcommon.h)
 *
 * Threads: main reads commands; "read" blocks in read() on a pipe that
 * main feeds on "feed N".
 *
 * Commands (one reply line each):
 *   ping        pong
 *   tids        tids pid=P main=T read=T
 *   feed N      read ok N | read bad WHY
 *   state       state pid=P errors=N eintr_main=N eintr_read=N heap=BYTES
 *   fds         fds N
 *   maps        maps N anon_odd=M
 *   quit        bye, then exit(0); EOF on CTL_FD also exits
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>

#include "vcommon.h"

static int feed_pipe[2];
static pid_t tid_read;
static unsigned long eintr_main, eintr_read, n_errors;
static size_t feed_len;
static unsigned long feed_done;
static char feed_res[128];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *read_thread(void *arg)
{
	static char buf[65536];

	(void)arg;
	__atomic_store_n(&tid_read, vgettid(), __ATOMIC_RELEASE);
	for (;;) {
		ssize_t n = read(feed_pipe[0], buf, sizeof(buf));
		ssize_t i;

		if (n < 0 && errno == EINTR) {
			pthread_mutex_lock(&mu);
			eintr_read++;
			n_errors++;
			pthread_mutex_unlock(&mu);
			continue;
		}
		if (n <= 0)
			return NULL;
		pthread_mutex_lock(&mu);
		snprintf(feed_res, sizeof(feed_res), "ok %zd", n);
		if ((size_t)n != feed_len)
			snprintf(feed_res, sizeof(feed_res), "bad got %zd wanted %zu", n, feed_len);
		for (i = 0; i < n; i++) {
			if (buf[i] != (char)('a' + i % 26)) {
				snprintf(feed_res, sizeof(feed_res), "bad byte %zd", i);
				break;
			}
		}
		if (strncmp(feed_res, "ok", 2))
			n_errors++;
		feed_done++;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
}

static void cmd_feed(int fd, const char *arg)
{
	static char buf[4096];
	long n = strtol(arg, NULL, 10), i;
	const long nr_read[] = { SYS_read };
	struct timespec dl;
	unsigned long start;
	bool ok = true;

	if (n < 1 || n > (long)sizeof(buf)) {
		vreply(fd, "read bad usage");
		return;
	}
	for (i = 0; i < n; i++)
		buf[i] = (char)('a' + i % 26);
	pthread_mutex_lock(&mu);
	feed_len = (size_t)n;
	start = feed_done;
	pthread_mutex_unlock(&mu);
	if (vwrite_all(feed_pipe[1], buf, (size_t)n))
		vdie("write feed");
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 10;
	pthread_mutex_lock(&mu);
	while (feed_done == start && ok)
		if (pthread_cond_timedwait(&cv, &mu, &dl) == ETIMEDOUT)
			ok = feed_done != start;
	pthread_mutex_unlock(&mu);
	if (!ok)
		vreply(fd, "read bad timeout");
	else if (!vwait_in_syscall(tid_read, nr_read, 1, 10000))
		vreply(fd, "read bad thread did not block again");
	else
		vreply(fd, "read %s", feed_res);
}

int main(int argc, char **argv)
{
	const long nr_read[] = { SYS_read };
	struct vline line = { .len = 0 };
	struct mallinfo2 mi;
	struct vfds fds;
	pthread_t t;
	char cmd[1024];
	char c = 'R';
	void *keep;

	vfds_get(&fds, argc, argv);
	vallow_ptrace();
	/* Make sure glibc's heap is in use, as in any real program. */
	keep = malloc(100000);
	if (!keep)
		vdie("malloc");
	memset(keep, 1, 100000);

	if (pipe2(feed_pipe, O_CLOEXEC))
		vdie("pipe2");
	if (pthread_create(&t, NULL, read_thread, NULL))
		vdie("pthread_create");
	while (!__atomic_load_n(&tid_read, __ATOMIC_ACQUIRE))
		sched_yield();
	if (!vwait_in_syscall(tid_read, nr_read, 1, 10000)) {
		fprintf(stderr, "victim: read thread did not park\n");
		return 3;
	}
	if (vwrite_all(fds.ready, &c, 1))
		vdie("write ready");
	close(fds.ready);

	for (;;) {
		ssize_t n = vline_read(&line, fds.ctl, cmd, sizeof(cmd), &eintr_main);
		char *arg;

		if (n < 0)
			break;
		arg = strchr(cmd, ' ');
		if (arg)
			*arg++ = '\0';
		else
			arg = cmd + n;

		if (!strcmp(cmd, "ping")) {
			vreply(fds.reply, "pong");
		} else if (!strcmp(cmd, "tids")) {
			vreply(fds.reply, "tids pid=%d main=%d read=%d", (int)getpid(),
			       (int)getpid(), tid_read);
		} else if (!strcmp(cmd, "feed")) {
			cmd_feed(fds.reply, arg);
		} else if (!strcmp(cmd, "state")) {
			mi = mallinfo2();
			pthread_mutex_lock(&mu);
			vreply(fds.reply, "state pid=%d errors=%lu eintr_main=%lu eintr_read=%lu heap=%zu",
			       (int)getpid(), n_errors, eintr_main, eintr_read, mi.uordblks);
			pthread_mutex_unlock(&mu);
		} else if (!strcmp(cmd, "dlnames")) {
			vcmd_dlnames(fds.reply, arg);
		} else if (!strcmp(cmd, "fds")) {
			vreply(fds.reply, "fds %ld", vcount_fds());
		} else if (!strcmp(cmd, "maps")) {
			long maps, anon_odd;

			vcount_maps(&maps, &anon_odd);
			vreply(fds.reply, "maps %ld anon_odd=%ld", maps, anon_odd);
		} else if (!strcmp(cmd, "quit")) {
			vreply(fds.reply, "bye");
			break;
#ifdef VICTIM_EXTRA_CMD
		} else if (VICTIM_EXTRA_CMD(fds.reply, cmd, arg)) {
			/* a victim that includes this file answered it */
#endif
		} else {
			vreply(fds.reply, "error unknown command '%s'", cmd);
		}
	}
	free(keep);
	return 0;
}
