// SPDX-License-Identifier: MIT
/*
 * Unit test: procfs_environ() reads a whole environ file (longer than its
 * first buffer) into one NUL-terminated buffer, and procfs_env_get() finds
 * NAME=value as getenv() does: the first one, the whole name only.
 * procfs_status_parse() takes every field heapctl uses from a status
 * text as Linux 6.x writes it, and none from a line that only looks like one.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"
#include "unit.h"

static void env_get(void)
{
	static const char env[] = "HOME=/root\0HEAP=\0HEAP_PROFILE_INUSE_INTERVAL=7\0"
				  "HEAP_PROFILE_INUSE_INTERVAL=9\0=odd\0TAIL=end";
	const char *v;

	begin("procfs_env_get");
	v = procfs_env_get(env, sizeof(env) - 1, "HEAP_PROFILE_INUSE_INTERVAL");
	CHECK(v && !strcmp(v, "7"), "first match: %s", v ? v : "(null)");
	v = procfs_env_get(env, sizeof(env) - 1, "HEAP");
	CHECK(v && !*v, "empty value: %s", v ? v : "(null)");
	CHECK(!procfs_env_get(env, sizeof(env) - 1, "HOM"), "a prefix of a name matched");
	CHECK(!procfs_env_get(env, sizeof(env) - 1, "HEAP_PROFILE"), "a prefix of a name matched");
	v = procfs_env_get(env, sizeof(env) - 1, "TAIL");
	CHECK(v && !strcmp(v, "end"), "last entry: %s", v ? v : "(null)");
	CHECK(!procfs_env_get(NULL, 0, "HOME"), "no environment");
	end();
}

static void environ_read(void)
{
	char dir[] = "/tmp/hc-procfs-XXXXXX", path[64], *buf;
	size_t len = 0, want = 0;
	FILE *f;

	begin("procfs_environ");
	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp failed");
		end();
		return;
	}
	snprintf(path, sizeof(path), "%s/environ", dir);
	f = fopen(path, "w");
	CHECK(f != NULL, "cannot write %s", path);
	for (int i = 0; f && i < 2000; i++) {
		want += (size_t)fprintf(f, "VAR%d=%d", i, i * 3) + 1;
		fputc(0, f);
	}
	if (f)
		fclose(f);
	buf = procfs_environ(dir, &len);
	CHECK(buf && len == want, "read %zu bytes, want %zu", len, want);
	if (buf) {
		const char *v = procfs_env_get(buf, len, "VAR1999");

		CHECK(buf[len] == 0, "no final NUL");
		CHECK(v && !strcmp(v, "5997"), "VAR1999 is %s", v ? v : "(null)");
	}
	free(buf);
	unlink(path);
	buf = procfs_environ(dir, &len);
	CHECK(!buf && len == 0, "a missing file read as %zu bytes", len);
	rmdir(dir);
	end();
}

/* A status text as Linux 6.x writes it (abridged), with lines that only look like fields. */
static const char status_text[] =
	"Name:\tmysqld worker\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\n"
	"Ngid:\t0\nPid:\t4242\nPPid:\t1\nTracerPid:\t77\n"
	"Uid:\t1000\t1001\t1002\t1003\nGid:\t2000\t2001\t2002\t2003\n"
	"FDSize:\t64\nGroups:\t27 100\nVmSize:\t  123456 kB\nVmRSS:\t    4096 kB\n"
	"Threads:\t12\nSigQ:\t0/63451\nSigPnd:\t0000000000000001\n"
	"ShdPnd:\t0000000000000100\nSigBlk:\t0000000000014000\n"
	"SigIgn:\t0000000000001000\nCapEff:\t0000000000200000\nSeccomp:\t2\n"
	"x86_Thread_features:\tshstk wrss\nUidMap: 5 6 7 8\nGid:\t9\t9\t9\n";

static void status_parse(void)
{
	struct procfs_status st;
	FILE *f = fmemopen((void *)status_text, sizeof(status_text) - 1, "r");

	begin("procfs_status_parse");
	if (!f) {
		CHECK(0, "fmemopen failed");
		end();
		return;
	}
	procfs_status_parse(f, &st);
	fclose(f);
	CHECK(!strcmp(st.name, "mysqld worker"), "name '%s'", st.name);
	CHECK(st.state == 'S' && st.tgid == 4242 && st.ppid == 1 && st.tracer == 77,
	      "state %c tgid %d ppid %d tracer %d", st.state, (int)st.tgid, (int)st.ppid,
	      (int)st.tracer);
	CHECK(st.euid == 1001 && st.fsuid == 1003, "euid %u fsuid %u (Uid: real effective saved fs)",
	      (unsigned)st.euid, (unsigned)st.fsuid);
	/* the last line, with three fields, is no Gid: line */
	CHECK(st.fsgid == 2003, "fsgid %u", (unsigned)st.fsgid);
	CHECK(st.sigpnd == 1 && st.shdpnd == 0x100 && st.sigblk == 0x14000 && st.capeff == 0x200000,
	      "signals %llx %llx %llx capeff %llx", (unsigned long long)st.sigpnd,
	      (unsigned long long)st.shdpnd, (unsigned long long)st.sigblk,
	      (unsigned long long)st.capeff);
	CHECK(st.seccomp == 2 && st.shstk, "seccomp %d shstk %d", st.seccomp, st.shstk);
	CHECK(st.rss == 4096ull * 1024 && st.vmsize == 123456ull * 1024, "rss %llu vmsize %llu",
	      (unsigned long long)st.rss, (unsigned long long)st.vmsize);
	end();
}

int main(void)
{
	env_get();
	environ_read();
	status_parse();
	return nfailed != 0;
}
