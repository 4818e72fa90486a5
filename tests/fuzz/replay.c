// SPDX-License-Identifier: MIT
/*
 * A plain driver for a libFuzzer target, so that `make test` replays the
 * stored inputs without clang: every file in FUZZ_DIRS (a colon-separated
 * list: tests/fuzz/regress/NAME, then the target's seeds) goes through
 * LLVMFuzzerTestOneInput() once, in a child of its own, so that a crash, a
 * sanitizer report or a trap names the input that caused it.  The target
 * and the library are built with ASan and UBSan (Makefile, fuzz-replay).
 *
 * Prints "PASS fuzz-replay-NAME: N inputs" or one "FAIL fuzz-replay-NAME:
 * FILE: why" per failing input, and exits 1 on any failure.  A missing
 * regression directory is a failure: the inputs are part of the tree.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef FUZZ_NAME
#error "build with -DFUZZ_NAME=\"name\" -DFUZZ_DIRS=\"dir:dir\""
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned int nrun, nfail;

/* The whole file in a buffer of exactly its size: ASan sees any overread. */
static uint8_t *slurp(const char *path, size_t *sizep)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	while (buf && got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(buf);
			buf = NULL;
			break;
		}
		got += (size_t)r;
	}
	close(fd);
	*sizep = got;
	return buf;
}

static void run_one(const char *path)
{
	size_t size = 0;
	uint8_t *data = slurp(path, &size);
	int status;
	pid_t pid;

	if (!data) {
		printf("FAIL fuzz-replay-%s: %s: cannot read: %s\n", FUZZ_NAME, path, strerror(errno));
		nfail++;
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* The target writes nothing to stdout; keep its stderr for reports. */
		LLVMFuzzerTestOneInput(data, size);
		_exit(0);
	}
	free(data);
	nrun++;
	if (pid < 0 || waitpid(pid, &status, 0) != pid) {
		printf("FAIL fuzz-replay-%s: %s: fork/wait: %s\n", FUZZ_NAME, path, strerror(errno));
		nfail++;
	} else if (WIFSIGNALED(status)) {
		printf("FAIL fuzz-replay-%s: %s: killed by %s\n", FUZZ_NAME, path,
		       strsignal(WTERMSIG(status)));
		nfail++;
	} else if (WEXITSTATUS(status)) {
		printf("FAIL fuzz-replay-%s: %s: exit status %d (a sanitizer report is above)\n",
		       FUZZ_NAME, path, WEXITSTATUS(status));
		nfail++;
	}
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_dir(const char *dir, int must_exist)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;

	if (!d) {
		if (must_exist) {
			printf("FAIL fuzz-replay-%s: %s: %s\n", FUZZ_NAME, dir, strerror(errno));
			nfail++;
		}
		return;
	}
	while ((de = readdir(d))) {
		char *p;

		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*names));

			if (!nn)
				break;
			names = nn;
		}
		if (asprintf(&p, "%s/%s", dir, de->d_name) < 0)
			break;
		names[n++] = p;
	}
	closedir(d);
	if (n) /* an empty directory: names is NULL, which qsort() must not be given */
		qsort(names, n, sizeof(*names), cmp_name);
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
			run_one(names[i]);
		free(names[i]);
	}
	free(names);
}

int main(void)
{
	char *dirs = strdup(FUZZ_DIRS), *save = NULL;
	int first = 1;

	signal(SIGPIPE, SIG_IGN);
	for (char *dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		run_dir(dir, first); /* the regression directory comes first */
		first = 0;
	}
	free(dirs);
	if (!nfail && !nrun) {
		printf("FAIL fuzz-replay-%s: no input found in %s\n", FUZZ_NAME, FUZZ_DIRS);
		nfail++;
	}
	if (!nfail)
		printf("PASS fuzz-replay-%s: %u inputs\n", FUZZ_NAME, nrun);
	return nfail ? 1 : 0;
}
