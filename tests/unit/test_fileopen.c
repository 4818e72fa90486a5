// SPDX-License-Identifier: MIT
/*
 * Unit test: file_open() and obj_open() (src/lib/proc/sym.c), the one way the
 * library opens a file the target named.  A FIFO must not block, a link
 * at the end of an object's name is not followed, and in another root (a
 * child chroot()ed into a directory of ours) an absolute link, at the end
 * or in the middle of the path, resolves in that root, never in ours.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/lib/proc/image.h"
#include "unit.h"

static char dir[64];

static void put(const char *rel, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void at(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", dir, rel);
}

/* In heapctl's own view (pid 0) and in our own root (pid = us). */
static void own_root(void)
{
	char reg[256], fifo[256], lnk[256];
	struct stat st;
	int fd;

	begin("file-open-own-root");
	at(reg, sizeof(reg), "reg");
	at(fifo, sizeof(fifo), "fifo");
	at(lnk, sizeof(lnk), "lnk");
	put("reg", "x");
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
	CHECK(symlink(reg, lnk) == 0, "symlink: %s", strerror(errno));
	for (pid_t pid = 0; pid >= 0; pid = pid ? -1 : getpid()) {
		fd = file_open(pid, reg, O_NOFOLLOW, &st);
		CHECK(fd >= 0 && S_ISREG(st.st_mode) && st.st_size == 1,
		      "pid %d: a regular file: fd %d", (int)pid, fd);
		if (fd >= 0)
			close(fd);
		/* alarm() below: a blocking open fails the whole test */
		errno = 0;
		fd = file_open(pid, fifo, 0, NULL);
		CHECK(fd < 0 && errno == EINVAL, "pid %d: a FIFO gave fd %d (%s)", (int)pid, fd,
		      strerror(errno));
		fd = file_open(pid, lnk, O_NOFOLLOW, NULL);
		CHECK(fd < 0, "pid %d: a link was followed with O_NOFOLLOW", (int)pid);
		fd = file_open(pid, lnk, 0, NULL);
		CHECK(fd >= 0, "pid %d: a link to a regular file: %s", (int)pid, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = file_open(pid, "/dev/null", 0, NULL);
		CHECK(fd < 0, "pid %d: a device was opened", (int)pid);
	}
	end();
}

/*
 * A child chroot()ed into dir/root: "/lib.so" there is a link to our
 * dir/secret, "/sub" a link to our dir, "/fifo" a FIFO.  Its objects must
 * open nothing of ours and block on nothing.
 */
static void other_root(void)
{
	char root[256], p[256], secret[256];
	struct obj o = { 0 };
	int go[2], ready[2], fd;
	pid_t child;
	char c;

	begin("file-open-other-root");
	if (geteuid() != 0) {
		printf("SKIP %s: chroot needs root\n", group);
		return;
	}
	at(root, sizeof(root), "root");
	at(secret, sizeof(secret), "secret");
	put("secret", "host");
	mkdir(root, 0700);
	put("root/real", "mine");
	at(p, sizeof(p), "root/lib.so");
	CHECK(symlink(secret, p) == 0, "symlink: %s", strerror(errno));
	at(p, sizeof(p), "root/sub");
	CHECK(symlink(dir, p) == 0, "symlink: %s", strerror(errno));
	at(p, sizeof(p), "root/fifo");
	CHECK(mkfifo(p, 0600) == 0, "mkfifo: %s", strerror(errno));
	if (pipe(go) || pipe(ready)) {
		CHECK(0, "pipe: %s", strerror(errno));
		end();
		return;
	}
	child = fork();
	if (child == 0) {
		close(go[1]);
		if (chroot(root) || chdir("/"))
			_exit(1);
		if (write(ready[1], "R", 1) != 1)
			_exit(1);
		if (read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	CHECK(child > 0 && read(ready[0], &c, 1) == 1, "the chroot()ed child did not start");
	if (!group_nfail) {
		fd = file_open(child, "/real", O_NOFOLLOW, NULL);
		CHECK(fd >= 0, "a regular file in the child's root: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		/* without RESOLVE_IN_ROOT these would be our dir/secret */
		CHECK(file_open(child, "/lib.so", 0, NULL) < 0, "/lib.so -> %s was opened", secret);
		snprintf(p, sizeof(p), "/sub%s", secret + strlen(dir));
		CHECK(file_open(child, p, 0, NULL) < 0, "%s (through /sub -> %s) was opened", p,
		      dir);
		CHECK(file_open(child, "/fifo", 0, NULL) < 0, "the child's FIFO was opened");
		/* an object named by the child's maps, without map_files */
		o.pid = child;
		o.path = (char *)"/lib.so";
		CHECK(obj_open(&o, NULL) < 0,
		      "obj_open() followed /lib.so out of the child's root");
		o.path = (char *)"/real";
		fd = obj_open(&o, NULL);
		CHECK(fd >= 0, "obj_open() of /real in the child's root: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	close(go[1]);
	close(ready[0]);
	if (child > 0)
		waitpid(child, NULL, 0);
	end();
}

int main(void)
{
	char cmd[128];

	snprintf(dir, sizeof(dir), "/tmp/hc-fileopen-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	alarm(20);
	own_root();
	other_root();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return nfailed != 0;
}
