// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

void procfs_status_parse(FILE *f, struct procfs_status *st)
{
	unsigned long r, e, s, fs;
	char line[512];

	memset(st, 0, sizeof(*st));
	st->seccomp = -1;
	st->euid = st->fsuid = (uid_t)-1;
	st->fsgid = (gid_t)-1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Name:", 5))
			sscanf(line + 5, " %63[^\n]", st->name);
		else if (!strncmp(line, "State:", 6))
			sscanf(line + 6, " %c", &st->state);
		else if (!strncmp(line, "Tgid:", 5))
			st->tgid = atoi(line + 5);
		else if (!strncmp(line, "PPid:", 5))
			st->ppid = atoi(line + 5);
		else if (!strncmp(line, "TracerPid:", 10))
			st->tracer = atoi(line + 10);
		else if (!strncmp(line, "Seccomp:", 8))
			st->seccomp = atoi(line + 8);
		else if (!strncmp(line, "x86_Thread_features:", 20))
			st->shstk = strstr(line, "shstk") != NULL;
		else if (!strncmp(line, "SigPnd:", 7))
			st->sigpnd = strtoull(line + 7, NULL, 16);
		else if (!strncmp(line, "ShdPnd:", 7))
			st->shdpnd = strtoull(line + 7, NULL, 16);
		else if (!strncmp(line, "SigBlk:", 7))
			st->sigblk = strtoull(line + 7, NULL, 16);
		else if (!strncmp(line, "CapEff:", 7))
			st->capeff = strtoull(line + 7, NULL, 16);
		else if (!strncmp(line, "VmRSS:", 6))
			st->rss = strtoull(line + 6, NULL, 10) * 1024;
		else if (!strncmp(line, "VmSize:", 7))
			st->vmsize = strtoull(line + 7, NULL, 10) * 1024;
		/* sscanf() only where it can match: it costs a string stream per call */
		else if (!strncmp(line, "Uid:", 4) &&
			 sscanf(line, "Uid: %lu %lu %lu %lu", &r, &e, &s, &fs) == 4) {
			st->euid = (uid_t)e;
			st->fsuid = (uid_t)fs;
		}
		else if (!strncmp(line, "Gid:", 4) &&
			 sscanf(line, "Gid: %lu %lu %lu %lu", &r, &e, &s, &fs) == 4)
			st->fsgid = (gid_t)fs;
	}
}

int procfs_status(const char *path, struct procfs_status *st)
{
	FILE *f = fopen(path, "re");

	if (!f) {
		memset(st, 0, sizeof(*st));
		st->seccomp = -1;
		st->euid = st->fsuid = (uid_t)-1;
		st->fsgid = (gid_t)-1;
		return -1;
	}
	procfs_status_parse(f, st);
	fclose(f);
	return 0;
}

int procfs_limit(pid_t pid, const char *name, uint64_t *soft, uint64_t *hard)
{
	size_t nl = strlen(name);
	char path[64], line[256], val[32], hval[32];
	int ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	/* "Max address space         unlimited            unlimited            bytes" */
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, name, nl) || line[nl] != ' ' ||
		    sscanf(line + nl, " %31s %31s", val, hval) != 2)
			continue;
		*soft = !strcmp(val, "unlimited") ? UINT64_MAX : strtoull(val, NULL, 10);
		*hard = !strcmp(hval, "unlimited") ? UINT64_MAX : strtoull(hval, NULL, 10);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

#define ENVIRON_MAX (1u << 20)

char *procfs_environ(const char *proc, size_t *len)
{
	size_t cap = 4096, n = 0;
	char path[96], *buf;
	ssize_t r;
	int fd;

	*len = 0;
	snprintf(path, sizeof(path), "%s/environ", proc);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(cap + 1);
	while (buf) {
		if (n == cap) {
			char *nb = cap < ENVIRON_MAX ? realloc(buf, 2 * cap + 1) : NULL;

			if (!nb)
				break; /* what was read is all there is */
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf) {
		buf[n] = 0;
		*len = n;
	}
	return buf;
}

const char *procfs_env_get(const char *env, size_t len, const char *name)
{
	size_t nl = strlen(name);

	for (size_t at = 0; env && at < len; at += strlen(env + at) + 1)
		if (!strncmp(env + at, name, nl) && env[at + nl] == '=')
			return env + at + nl + 1;
	return NULL;
}

void procfs_comm(pid_t pid, char *out, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(out, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(out, (int)len, f))
			out[strcspn(out, "\n")] = 0;
		fclose(f);
	}
}

const int term_sigs[NTERM_SIGS] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

/*
 * One syscall, no mask query: a signal that is pending at all is blocked,
 * since one that is not would have been delivered on the way out of
 * sigpending() (or, in another thread that lets it through, at once).
 */
int term_pending(void)
{
	sigset_t p;

	if (sigpending(&p) < 0)
		return 0;
	for (size_t i = 0; i < NTERM_SIGS; i++)
		if (sigismember(&p, term_sigs[i]) == 1)
			return term_sigs[i];
	return 0;
}

int procfs_stat_parse(const char *text, struct procfs_stat *st)
{
	const char *p = strrchr(text, ')');
	unsigned long long stack = 0;

	memset(st, 0, sizeof(*st));

	/*
	 * after ')': state(3) ppid pgrp session tty_nr tpgid flags(9) ...
	 * starttime(22) vsize rss rsslim startcode endcode startstack(28)
	 */
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			 "%*d %*d %*d %llu %*u %*d %*u %*u %*u %llu", &st->state, &st->flags, &st->start,
			 &stack) < 3) {
		memset(st, 0, sizeof(*st));
		return -1;
	}
	st->start_stack = stack;
	return 0;
}

int procfs_stat(const char *path, struct procfs_stat *st)
{
	char buf[1024];
	size_t n;
	FILE *f = fopen(path, "re");

	memset(st, 0, sizeof(*st));
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return procfs_stat_parse(buf, st);
}

/*
 * The leader of pid exited but other threads live on: its /proc entries
 * have lost the memory map, so use a live thread's.  Returns true with proc.
 */
bool procfs_live_task(pid_t pid, char *proc, size_t len)
{
	char path[64];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		struct procfs_status ts;
		char tp[96];
		int tid = atoi(de->d_name);

		if (tid <= 0 || tid == pid)
			continue;
		snprintf(tp, sizeof(tp), "/proc/%d/task/%d/status", pid, tid);
		if (procfs_status(tp, &ts) == 0 && ts.state != 'Z' && ts.state != 'X') {
			snprintf(proc, len, "/proc/%d/task/%d", pid, tid);
			found = true;
		}
	}
	closedir(d);
	return found;
}
