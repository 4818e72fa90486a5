// SPDX-License-Identifier: MIT
/*
 * restart: what a user does instead of attaching, for bench/libc.sh: start
 * the program anew (with a profiler preloaded, where there is one to
 * preload) and wait until it can serve again.
 *
 * Usage: restart RUNS [-e VAR=VALUE]... COMMAND [ARG]...
 *
 * RUNS times: fork(), set the -e variables in the child alone, exec
 * COMMAND with a pipe for its stdin and one for its stdout, and read its
 * stdout until its first line, "ready" (bench/mallocloop.c and
 * bench/mtloop.c print it once they can take work; mtloop after its
 * threads are up).  Prints one line a run, "READY_US EXIT_US": the wall
 * time from just before the fork to that line, and from the EOF then
 * written to its stdin to its reap (how long the old process takes to go).
 * Exits 1 if the command did not say ready or did not exit 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* one run; 0 if it said ready and exited 0 */
static int one(char **env, int nenv, char **cmd)
{
	int in[2], out[2], st, ok = 0;
	long long t0, t1, t2;
	char buf[64];
	size_t got = 0;
	pid_t pid;

	if (pipe(in) || pipe(out)) {
		perror("restart: pipe");
		return -1;
	}
	t0 = now_us();
	pid = fork();
	if (pid < 0) {
		perror("restart: fork");
		return -1;
	}
	if (pid == 0) {
		for (int i = 0; i < nenv; i++)
			putenv(env[i]);
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execvp(cmd[0], cmd);
		fprintf(stderr, "restart: %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	while (got < sizeof(buf) - 1) {
		ssize_t n = read(out[0], buf + got, sizeof(buf) - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = 0;
		if (strchr(buf, '\n'))
			break;
	}
	t1 = now_us();
	buf[got] = 0;
	ok = !strncmp(buf, "ready\n", 6);
	close(in[1]);
	close(out[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			perror("restart: waitpid");
			return -1;
		}
	t2 = now_us();
	if (!ok) {
		fprintf(stderr, "restart: %s did not say ready\n", cmd[0]);
		return -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "restart: %s did not exit 0\n", cmd[0]);
		return -1;
	}
	printf("%lld %lld\n", t1 - t0, t2 - t1);
	return 0;
}

int main(int argc, char **argv)
{
	char *env[16];
	int nenv = 0, runs, i = 2;

	if (argc < 3 || (runs = atoi(argv[1])) < 1) {
		fprintf(stderr, "usage: restart RUNS [-e VAR=VALUE]... COMMAND [ARG]...\n");
		return 2;
	}
	for (; i + 1 < argc && !strcmp(argv[i], "-e") && nenv < 16; i += 2)
		env[nenv++] = argv[i + 1];
	if (i >= argc) {
		fprintf(stderr, "restart: no command\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int r = 0; r < runs; r++)
		if (one(env, nenv, argv + i))
			return 1;
	return 0;
}
