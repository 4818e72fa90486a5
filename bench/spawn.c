// SPDX-License-Identifier: MIT
/*
 * spawn: run one command and print how long it took, for bench/run.sh.
 *
 * Usage: spawn OUT ERR COMMAND [ARG]...
 *
 * Starts COMMAND with posix_spawn() (stdin from /dev/null, stdout to OUT,
 * stderr to ERR; "-" is /dev/null, the same path twice shares one file),
 * waits for it and prints the wall time in microseconds, from just before
 * the spawn to the reap.  Exits as the command did (128 + signal if it
 * was killed).
 *
 * Why not bash's own clock around the command: bash forks itself to run
 * it, and a shell that has run a benchmark for a while is large, so the
 * fork alone cost more than a millisecond here, counted against whichever
 * tool ran.  Both tools go through this launcher, so each one's figure is
 * its own start, work and exit, as a user's small shell would see it.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int redirect(posix_spawn_file_actions_t *fa, int fd, const char *path, int flags)
{
	return posix_spawn_file_actions_addopen(fa, fd, strcmp(path, "-") ? path : "/dev/null",
						flags, 0644);
}

int main(int argc, char **argv)
{
	posix_spawn_file_actions_t fa;
	long long t0, t1;
	pid_t pid;
	int st, e;

	if (argc < 4) {
		fprintf(stderr, "usage: spawn OUT ERR COMMAND [ARG]...\n");
		return 2;
	}
	if (posix_spawn_file_actions_init(&fa) ||
	    redirect(&fa, 0, "-", O_RDONLY) ||
	    redirect(&fa, 1, argv[1], O_WRONLY | O_CREAT | O_TRUNC) ||
	    (strcmp(argv[1], argv[2]) || !strcmp(argv[2], "-") ?
		     redirect(&fa, 2, argv[2], O_WRONLY | O_CREAT | O_TRUNC) :
		     posix_spawn_file_actions_adddup2(&fa, 1, 2))) {
		perror("spawn: file actions");
		return 2;
	}
	t0 = now_us();
	e = posix_spawnp(&pid, argv[3], &fa, NULL, argv + 3, environ);
	if (e) {
		fprintf(stderr, "spawn: %s: %s\n", argv[3], strerror(e));
		return 127;
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			perror("spawn: waitpid");
			return 2;
		}
	t1 = now_us();
	printf("%lld\n", t1 - t0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
