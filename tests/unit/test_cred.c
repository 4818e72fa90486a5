// SPDX-License-Identifier: MIT
/*
 * Unit test: cred.c, heapctl acting with a target's rights.  A thread with
 * a uid 65534 process's credentials cannot open a root-only file, can
 * open a world-readable one, and the rest of heapctl keeps its own rights
 * afterwards; heapctl's own process needs no thread.  cred_out_open()
 * writes only a regular file of heapctl's own with one link.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/lib/proc/cred.h"
#include "../../src/lib/base/err.h"
#include "unit.h"

static char dir[64];

static void at(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", dir, rel);
}

static int open_path(void *p)
{
	return open(p, O_RDONLY | O_CLOEXEC);
}

static int tid_of(void *p)
{
	*(pid_t *)p = (pid_t)syscall(SYS_gettid);
	return 0;
}

static void test_other(void)
{
	char secret[128], pub[128], c;
	struct hc_err err = { 0 };
	struct cred cr;
	int p[2], fd;
	pid_t child;

	begin("cred-run-as-other");
	if (geteuid() != 0) {
		printf("SKIP %s: taking another user's credentials needs root\n", group);
		return;
	}
	at(secret, sizeof(secret), "secret");
	at(pub, sizeof(pub), "public");
	fd = open(secret, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && close(fd) == 0, "create %s: %s", secret, strerror(errno));
	fd = open(pub, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && close(fd) == 0, "create %s: %s", pub, strerror(errno));
	chmod(dir, 0755);
	if (pipe(p))
		return;
	child = fork();
	if (child == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(1);
		close(p[1]);
		(void)!read(p[0], &c, 1); /* until the parent is done */
		_exit(0);
	}
	close(p[0]);
	/* it may not have dropped root yet: ask until it has */
	for (int i = 0; i < 1000; i++) {
		CHECK(cred_of(child, &cr, &err) == 0, "cred_of: %s", err.msg);
		if (cr.fsuid == 65534)
			break;
		usleep(1000);
	}
	CHECK(cr.fsuid == 65534 && cr.fsgid == 65534 && cr.ngroups == 0 && !cr.self,
	      "uid %u gid %u, %d groups, self %d", (unsigned)cr.fsuid, (unsigned)cr.fsgid,
	      cr.ngroups, cr.self);
	CHECK(cr.capeff == 0, "the target has capabilities %llx", (unsigned long long)cr.capeff);
	errno = 0;
	fd = cred_run(&cr, open_path, secret);
	CHECK(fd < 0 && errno == EACCES, "a root-only file opened as uid 65534: fd %d, %s", fd,
	      strerror(errno));
	if (fd >= 0)
		close(fd);
	fd = cred_run(&cr, open_path, pub);
	CHECK(fd >= 0, "a world-readable file not opened as uid 65534: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	/* the thread's credentials ended with it */
	CHECK((uid_t)syscall(SYS_setfsuid, -1) == 0, "heapctl's fsuid changed");
	fd = open(secret, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "heapctl lost its rights: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	close(p[1]);
	waitpid(child, NULL, 0);
	unlink(secret);
	unlink(pub);
	end();
}

static void test_self(void)
{
	struct hc_err err = { 0 };
	struct cred cr;
	pid_t tid = 0;

	begin("cred-self");
	CHECK(cred_of(getpid(), &cr, &err) == 0, "cred_of: %s", err.msg);
	CHECK(cr.self, "heapctl is not itself");
	CHECK(cred_run(&cr, tid_of, &tid) == 0 && tid == (pid_t)syscall(SYS_gettid),
	      "ran in another thread (%d)", (int)tid);
	CHECK(cred_of(999999999, &cr, &err) < 0 && err_isset(&err), "no process, no error");
	end();
}

static void test_out_open(void)
{
	char f[128], l[128], h[128];
	struct stat st;
	mode_t um = umask(022);
	int fd;

	begin("cred-out-open");
	at(f, sizeof(f), "out");
	at(l, sizeof(l), "link");
	at(h, sizeof(h), "hard");
	fd = cred_out_open(f);
	CHECK(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0600,
	      "a new output is mode %o", fd >= 0 ? (unsigned)(st.st_mode & 07777) : 0);
	if (fd >= 0) {
		CHECK(write(fd, "x", 1) == 1, "write");
		close(fd);
	}
	fd = cred_out_open(f);
	CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0, "an output is not emptied");
	if (fd >= 0)
		close(fd);
	CHECK(symlink(f, l) == 0, "symlink");
	errno = 0;
	CHECK(cred_out_open(l) < 0 && errno == ELOOP, "written through a link: %s",
	      strerror(errno));
	unlink(l);
	CHECK(mkfifo(l, 0600) == 0, "mkfifo");
	errno = 0;
	CHECK(cred_out_open(l) < 0, "opened a FIFO for output");
	unlink(l);
	CHECK(link(f, h) == 0, "link");
	errno = 0;
	CHECK(cred_out_open(f) < 0 && errno == EPERM, "written through a hard link: %s",
	      strerror(errno));
	unlink(h);
	if (geteuid() == 0 && chown(f, 65534, 65534) == 0)
		CHECK(cred_out_open(f) < 0 && errno == EPERM, "wrote another user's file");
	unlink(f);
	umask(um);
	end();
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/hc-cred.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_other();
	test_self();
	test_out_open();
	rmdir(dir);
	return nfailed != 0;
}
