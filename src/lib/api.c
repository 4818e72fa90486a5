// SPDX-License-Identifier: MIT
/* The public entry points: open a target, dispatch to its allocator driver. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "call.h"
#include "clock.h"
#include "evidence.h"
#include "inject.h"
#include "libc.h"
#include "log.h"
#include "procfs.h"
#include "image.h"
#include "tlock.h"
#include "where.h"

#define DEFAULT_TIMEOUT_MS 30000

static int read_status_path(const char *path, struct procfs_status *ps, struct hc_err *err)
{
	if (procfs_status(path, ps) == 0)
		return 0;
	if (errno == ENOENT)
		return err_set(err, HC_E_NO_PROC, ENOENT, "no such process (%s)", path);
	return err_errno(err, errno, "open %s", path);
}

static int read_status(pid_t pid, struct procfs_status *ps, struct hc_err *err)
{
	char path[64];
	struct hc_err e = { 0 };

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (read_status_path(path, ps, &e) == 0)
		return 0;
	if (e.code == HC_E_NO_PROC)
		return err_sethint(err, HC_E_NO_PROC, ENOENT,
				   "check the pid with ps; 'heapctl list' shows the processes "
				   "heapctl can drive",
				   "no process with pid %d", pid);
	*err = e;
	return -1;
}

/*
 * What would otherwise fail later with a message about something else:
 * each gets its own.  ps: pid's status; proc: the /proc directory to read
 * its memory through (a live thread's if the leader is a zombie).
 */
static int pid_check(pid_t pid, pid_t tid, struct procfs_status *ps, char *proc, size_t len,
		     struct hc_err *err)
{
	struct procfs_status ts;
	struct procfs_stat st;
	char path[96], comm[64], hint[200];

	if (pid <= 0)
		return err_set(err, HC_E_USAGE, 0, "invalid pid %d", pid);
	snprintf(proc, len, "/proc/%d", pid);
	if (read_status(pid, ps, err) < 0)
		return -1;
	/* /proc/TID exists for every thread, though readdir does not show it. */
	if (ps->tgid > 0 && ps->tgid != pid) {
		procfs_comm(ps->tgid, comm, sizeof(comm));
		snprintf(hint, sizeof(hint), "give -p %d (with --tid %d to borrow that very thread)",
			 ps->tgid, pid);
		return err_sethint(err, HC_E_USAGE, 0, hint,
				   "%d is a thread of pid %d (%s), not a process", pid, ps->tgid,
				   comm);
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, pid);
	if (procfs_stat(path, &st) == 0 && (st.flags & PF_KTHREAD))
		return err_sethint(err, HC_E_UNSUPPORTED, 0,
				   "heapctl drives user processes; 'heapctl list' shows them",
				   "pid %d (%s) is a kernel thread: it has no user memory, nothing "
				   "is mapped and there is no allocator", pid, ps->name);
	if ((ps->state == 'Z' || ps->state == 'X') && !procfs_live_task(pid, proc, len)) {
		procfs_comm(ps->ppid, comm, sizeof(comm));
		snprintf(hint, sizeof(hint),
			 "nothing is left to inspect; its parent, pid %d (%s), has not reaped it yet",
			 ps->ppid, comm);
		return err_sethint(err, HC_E_NO_PROC, 0, hint,
				   "pid %d (%s) is a zombie: it has exited and nothing is mapped "
				   "any more", pid, ps->name);
	}
	if (!tid)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d", pid, tid);
	if (access(path, F_OK) == 0)
		return 0;
	/* not "the process may have exited": the process is there, the tid is wrong */
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	if (procfs_status(path, &ts) == 0 && ts.tgid > 0 && ts.tgid != pid) {
		procfs_comm(ts.tgid, comm, sizeof(comm));
		snprintf(hint, sizeof(hint), "give -p %d --tid %d, or a tid listed in /proc/%d/task",
			 ts.tgid, tid, pid);
		return err_sethint(err, HC_E_USAGE, 0, hint,
				   "tid %d is not a thread of pid %d: it belongs to pid %d (%s)",
				   tid, pid, ts.tgid, comm);
	}
	snprintf(hint, sizeof(hint), "pid %d's threads are listed in /proc/%d/task", pid, pid);
	return err_sethint(err, HC_E_NO_PROC, 0, hint, "no thread %d in pid %d (nor anywhere else)",
			   tid, pid);
}

int hc_pid_check(pid_t pid, pid_t tid, struct hc_err *err)
{
	struct procfs_status ps;
	char proc[64];

	return pid_check(pid, tid, &ps, proc, sizeof(proc), err);
}

int hc_proc_read(pid_t pid, struct hc_proc *p, struct hc_err *err)
{
	struct procfs_status ps;
	struct procfs_stat st;
	char path[64];

	memset(p, 0, sizeof(*p));
	p->euid = -1;
	if (read_status(pid, &ps, err) < 0)
		return -1;
	snprintf(p->name, sizeof(p->name), "%s", ps.name);
	p->state = ps.state;
	p->tgid = ps.tgid;
	p->ppid = ps.ppid;
	p->euid = ps.euid == (uid_t)-1 ? -1 : (long)ps.euid;
	p->rss = ps.rss;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, pid);
	p->kthread = procfs_stat(path, &st) == 0 && (st.flags & PF_KTHREAD);
	return 0;
}

/*
 * maps_load(), once the dynamic loader is done.  A process caught while it
 * starts (or inside dlopen) has libraries mapped but not yet relocated:
 * calling into them could crash it, and its malloc may not be found yet.
 * Such a state lasts milliseconds, so heapctl looks again, less and less
 * often, until --timeout.
 */
static int loader_wait(struct hc_target *t, struct hc_err *err)
{
	uint64_t end = now_ns() + (uint64_t)t->img.opts.timeout_ms * 1000000ull;

	for (long pause_ms = 1;; pause_ms = pause_ms < 32 ? pause_ms * 2 : pause_ms) {
		struct procfs_status ps;

		if (maps_load(&t->img, err) < 0)
			return -1;
		if (!t->img.loading)
			return 0;
		if (read_status(t->img.pid, &ps, err) < 0)
			return -1;
		if (ps.state == 'Z' || ps.state == 'X')
			return err_set(err, HC_E_NO_PROC, 0, "pid %d exited", t->img.pid);
		t->eng.cancel_sig = term_pending();
		if (t->eng.cancel_sig)
			return err_set(err, HC_E_CANCELLED, 0, "interrupted by SIG%s; pid %d untouched",
				       sigabbrev_np(t->eng.cancel_sig), t->img.pid);
		if (now_ns() >= end)
			return err_sethint(err, HC_E_TIMEOUT, 0,
					   "retry once the process has started, or raise --timeout",
					   "pid %d (%s) is still loading its libraries: its dynamic "
					   "loader has not finished, so their code cannot be called yet",
					   t->img.pid, ps.name);
		if (pause_ms == 1)
			pr_info("pid %d is still loading its libraries; waiting for its dynamic loader",
				t->img.pid);
		objs_free(&t->img);
		nanosleep(&(struct timespec){ .tv_nsec = pause_ms * 1000000 }, NULL);
	}
}

static int perm_error(pid_t pid, int e, struct hc_err *err)
{
	char hint[256];
	int scope = -1;
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = -1;
		fclose(f);
	}
	if (scope >= 1)
		snprintf(hint, sizeof(hint),
			 "ptrace_scope=%d: run as root or grant CAP_SYS_PTRACE%s", scope,
			 scope == 1 ? " (or have the target call prctl(PR_SET_PTRACER))" : "");
	else
		snprintf(hint, sizeof(hint),
			 "run as the target's user or as root (CAP_SYS_PTRACE); a setuid or "
			 "non-dumpable target needs root");
	return err_sethint(err, HC_E_PERM, e, hint, "not permitted to trace pid %d: %s", pid,
			   strerror(e));
}

/*
 * Opening /proc/PID/mem takes two checks (fs/proc/base.c): the file's mode,
 * 0600 and owned by the target's user, then ptrace access (mm_access()).
 * Root that may trace (CAP_SYS_PTRACE) still fails the first on another
 * user's process without CAP_DAC_OVERRIDE, as in a container or unit that
 * drops it: a ptrace hint would send the user the wrong way.
 */
static int mem_open_error(pid_t pid, const char *path, int e, struct hc_err *err)
{
	struct procfs_status self;
	struct stat st;
	char hint[256];

	if (e != EACCES || stat(path, &st) < 0 || procfs_status("/proc/self/status", &self) < 0 ||
	    st.st_uid == self.fsuid || (self.capeff & (1ull << CAP_DAC_OVERRIDE)) ||
	    !(self.capeff & (1ull << CAP_SYS_PTRACE)))
		return perm_error(pid, e, err);
	snprintf(hint, sizeof(hint),
		 "give heapctl CAP_DAC_OVERRIDE as well as CAP_SYS_PTRACE, or run it as uid %u, "
		 "the target's user", (unsigned)st.st_uid);
	return err_sethint(err, HC_E_PERM, e, hint,
			   "cannot open %s: it belongs to uid %u and heapctl runs as uid %u without "
			   "CAP_DAC_OVERRIDE", path, (unsigned)st.st_uid, (unsigned)self.fsuid);
}

/* Does path, as the dynamic linker of pid would take it from LD_PRELOAD, name the file in st? */
static bool same_file(pid_t pid, const char *path, const char *dir, const struct stat *st)
{
	char buf[PATH_MAX];
	struct stat ps;
	int fd;

	/* a bare name is searched for in the library path: the object's own directory is one */
	if (!strchr(path, '/') && snprintf(buf, sizeof(buf), "%s/%s", dir, path) < (int)sizeof(buf))
		path = buf;
	fd = file_open(pid, path, 0, &ps);
	if (fd < 0)
		return false;
	close(fd);
	return ps.st_dev == st->st_dev && ps.st_ino == st->st_ino;
}

/*
 * A target: its image with nothing open yet, and no lock (lockfd -1);
 * NULL if out of memory.  target_free() gives back what the layers kept.
 */
static struct hc_target *target_new(pid_t pid)
{
	struct hc_target *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	image_init(&t->img, pid);
	t->eng.img = &t->img;
	t->eng.lockfd = -1;
	return t;
}

static void target_free(struct hc_target *t)
{
	if (!t)
		return;
	image_fini(&t->img);
	free(t->eng.shadow);
	free(t->eng.regs_area);
	free(t);
}

/*
 * How the object that serves malloc came to: the executable's own, an
 * entry of LD_PRELOAD in the process's environment (the very file: the
 * linker opens LD_PRELOAD=libmimalloc.so.2 and maps show where that link
 * leads), or the dynamic linker's search order (DT_NEEDED, ld.so.preload).
 */
static const char *malloc_via(struct hc_target *t)
{
	struct obj *o = t->img.malloc_obj;
	const char *pre, *via = "search order";
	char dir[PATH_MAX], *env, *list, *tok, *save;
	struct stat st;
	size_t len;
	int fd;

	if (!o)
		return "";
	if (o->is_exe)
		return "executable";
	env = procfs_environ(t->img.proc, &len);
	pre = env ? procfs_env_get(env, len, "LD_PRELOAD") : NULL;
	fd = pre && *pre ? obj_open(o, &st) : -1;
	if (fd >= 0 && (list = strdup(pre))) {
		close(fd);
		snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(o->path, '/') - o->path), o->path);
		for (tok = strtok_r(list, " :", &save); tok; tok = strtok_r(NULL, " :", &save))
			if (same_file(t->img.pid, tok, dir, &st)) {
				via = "LD_PRELOAD";
				break;
			}
		free(list);
	} else if (fd >= 0) {
		close(fd);
	}
	free(env);
	return via;
}

struct hc_target *hc_target_open(pid_t pid, const struct hc_target_opts *o, struct hc_err *err)
{
	struct procfs_status ps;
	struct hc_target *t;
	char path[96], proc[64];

	if (o && o->evidence)
		memset(o->evidence, 0, sizeof(*o->evidence));
	if (pid == getpid())
		return err_set(err, HC_E_UNSUPPORTED, 0, "heapctl cannot drive itself"), NULL;
	if (pid_check(pid, o ? o->tid : 0, &ps, proc, sizeof(proc), err) < 0)
		return NULL;
	/*
	 * Traced by a heapctl that holds the target's lock: not an error, the
	 * first call waits for its turn (tlock_acquire()).  A heapctl only
	 * traces while it holds the lock, so a tracer seen before and after a
	 * moment when the lock was free is someone else.
	 */
	if (ps.tracer && ps.tracer != getpid() && tlock_busy(pid) == 0 &&
	    read_status(pid, &ps, &(struct hc_err){ 0 }) == 0 && ps.tracer &&
	    ps.tracer != getpid() && tlock_busy(pid) == 0) {
		char comm[64];

		procfs_comm(ps.tracer, comm, sizeof(comm));
		/* a heapctl from another network namespace does not share our lock */
		err_sethint(err, HC_E_TRACED, 0,
			    strcmp(comm, "heapctl") ? "detach the other tracer (gdb, strace) first" :
						      "another heapctl is working on it: retry when "
						      "it has finished",
			    "pid %d (%s) is already traced by pid %d (%s)", pid, ps.name,
			    tlock_front(ps.tracer), comm);
		return NULL;
	}
	if (ps.seccomp == 1) {
		err_sethint(err, HC_E_UNSUPPORTED, 0,
			    "strict seccomp allows only read/write/exit: nothing can be called safely",
			    "pid %d (%s) runs in strict seccomp mode", pid, ps.name);
		return NULL;
	}
	if (ps.shstk) {
		/* injected returns do not match the shadow stack: the callee would fault */
		err_sethint(err, HC_E_UNSUPPORTED, 0,
			    "start the process without user shadow stacks (glibc.cpu.x86_shstk=off)",
			    "pid %d (%s) runs with CET shadow stacks", pid, ps.name);
		return NULL;
	}
	t = target_new(pid);
	if (!t)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory"), NULL;
	t->img.judge = &evidence_judge;
	t->eng.seccomp = ps.seccomp;
	if (o)
		t->img.opts = *o;
	if (!t->img.opts.timeout_ms)
		t->img.opts.timeout_ms = DEFAULT_TIMEOUT_MS;
	snprintf(path, sizeof(path), "%s/mem", t->img.proc);
	t->img.memfd = open(path, O_RDWR | O_CLOEXEC);
	if (t->img.memfd < 0) {
		if (errno == EACCES || errno == EPERM)
			mem_open_error(pid, path, errno, err);
		else if (errno == ENOENT || errno == ESRCH)
			err_set(err, HC_E_NO_PROC, errno, "pid %d exited", pid);
		else
			err_errno(err, errno, "open %s", path);
		goto fail;
	}
	if (loader_wait(t, err) < 0 || sym_debug_file_check(&t->img, err) < 0 || where_init(&t->eng, err) < 0)
		goto fail;
	if (alloc_detect(t, err) < 0)
		goto fail;
	t->drv.where.malloc_object = t->img.malloc_obj ? t->img.malloc_obj->path : "";
	/*
	 * Symbols found are not the whole story: an object whose read-only
	 * data carries another allocator's strings but no symbols for it (a
	 * stripped static jemalloc) is the real heap, whatever else is mapped.
	 * With glibc or no driver, every object is read; otherwise only the
	 * executable and the driver's own object.
	 */
	if (evidence_check(&t->img, t->drv.where.allocator, t->drv.where.object,
			   !t->drv.alloc || !strcmp(t->drv.where.allocator, "glibc"), err) < 0) {
		if (read_status(pid, &ps, &(struct hc_err){ 0 }) < 0 || ps.state == 'Z' ||
		    ps.state == 'X') {
			memset(err, 0, sizeof(*err));
			err_set(err, HC_E_NO_PROC, 0, "pid %d exited", pid);
		}
		goto fail;
	}
	t->drv.where.evidence = t->img.ev_alloc;
	t->drv.where.evidence_object = t->img.ev_obj ? t->img.ev_obj : "";
	t->drv.where.evidence_found = t->img.ev_found;
	if (!t->drv.alloc) {
		/* A process that died while we looked has no allocator to report. */
		if (read_status(pid, &ps, err) < 0 || ps.state == 'Z' || ps.state == 'X') {
			err_set(err, HC_E_NO_PROC, 0, "pid %d exited", pid);
			goto fail;
		}
		const struct obj *exe = NULL;

		for (size_t i = 0; i < t->img.nobjs; i++)
			if (t->img.objs[i].is_exe)
				exe = &t->img.objs[i];
		/*
		 * A stripped executable may hide a statically linked jemalloc.
		 * LD_PRELOAD only helps where a loader reads it, and only a
		 * library built for the process's libc can be preloaded.
		 */
		const struct libc_id *id = libc_identify(&t->img);

		err_sethint(err, HC_E_NO_ALLOC, 0,
			    exe && exe->symsrc && !strcmp(exe->symsrc, ".dynsym") ?
				    "heapctl drives jemalloc, tcmalloc, mimalloc, glibc malloc and "
				    "musl's; a stripped binary that links its allocator statically "
				    "needs its debug file" :
			    id->is_static || id->kind == LIBC_MUSL ?
				    "heapctl drives jemalloc, tcmalloc (gperftools), mimalloc, glibc "
				    "malloc and musl's; link the program with one of them" :
				    "heapctl drives jemalloc, tcmalloc (gperftools), mimalloc, glibc "
				    "malloc and musl's; start the process with one of them (e.g. "
				    "LD_PRELOAD=libjemalloc.so.2)",
			    "pid %d (%s) uses no allocator heapctl drives: its malloc comes from %s",
			    pid, ps.name, alloc_guess(t));
		goto fail;
	}
	return t;
fail:
	/* the objects were read: their signs come with the refusal, not from a second read */
	if (o && o->evidence && t->img.nobjs && (err->code == HC_E_NO_SYM || err->code == HC_E_NO_ALLOC))
		evidence_first(&t->img, o->evidence);
	hc_target_close(t);
	return NULL;
}

void hc_target_close(struct hc_target *t)
{
	if (!t)
		return;
	if (t->eng.sess) {
		struct hc_err e = { 0 };

		call_end(&t->eng, &e);
	}
	/* after call_end(): the thread is given back before the next heapctl may come */
	tlock_release(&t->eng);
	if (t->drv.alloc && t->drv.alloc->release)
		t->drv.alloc->release(t);
	where_fini(&t->eng);
	/* the sampler's state is this file's: sampler_probe() made it */
	inj_free(t->inj);
	target_free(t);
}

/* The allocator's signs in pid's objects, with nothing stopped and no driver chosen. */
int hc_evidence_read(pid_t pid, struct hc_evidence *out, struct hc_err *err)
{
	struct hc_target *t = target_new(pid);
	char path[96];
	int r = -1;

	memset(out, 0, sizeof(*out));
	if (!t)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	t->img.judge = &evidence_judge;
	snprintf(path, sizeof(path), "%s/mem", t->img.proc);
	t->img.memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->img.memfd < 0)
		err_errno(err, errno, "open %s", path);
	else if (maps_load(&t->img, err) == 0)
		r = evidence_first(&t->img, out);
	target_free(t);
	return r;
}

void hc_target_where(struct hc_target *t, struct hc_where *w)
{
	/* how malloc's object came first: read from the environment when first asked */
	if (!t->drv.where.malloc_via)
		t->drv.where.malloc_via = malloc_via(t);
	*w = t->drv.where;
}

void hc_target_timing(const struct hc_target *t, struct hc_timing *tm)
{
	*tm = t->eng.timing;
}

/* Every operation gets the whole --timeout, counted from its start. */
static void arm(struct hc_target *t)
{
	t->eng.deadline_ns = now_ns() + (uint64_t)t->img.opts.timeout_ms * 1000000ull;
}

/* The end of every operation: the thread goes back unless a session keeps it. */
static int done(struct hc_target *t, int r, struct hc_err *err)
{
	if (call_done(&t->eng, err) < 0)
		return -1;
	return r < 0 ? -1 : 0;
}

void hc_session_begin(struct hc_target *t)
{
	call_hold(&t->eng);
}

int hc_session_end(struct hc_target *t, struct hc_err *err)
{
	return call_release(&t->eng, err);
}

int hc_info_get(struct hc_target *t, struct hc_info *info, struct hc_err *err)
{
	arm(t);
	return done(t, t->drv.alloc->info(t, info, err), err);
}

/*
 * Profiling goes to the allocator's own profiler or to heapctl's injected
 * sampler (inject.c).  A loaded sampler is looked for again at each
 * operation (it is a read of the maps): another heapctl may have loaded
 * or stopped it meanwhile.  1: loaded, 0: not, -1: error.
 */
static int sampler_probe(struct hc_target *t, struct hc_err *err)
{
	if (!t->inj && !(t->inj = calloc(1, sizeof(*t->inj))))
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory");
	t->inj->where = &t->drv.where;
	return inj_probe(&t->eng, t->inj, err);
}

static bool sampling(const struct hc_target *t)
{
	return t->inj && t->inj->state && t->inj->s.enabled;
}

/* heapctl's sampler is off, and what it sampled is kept */
static bool kept(const struct hc_target *t)
{
	return t->inj && !sampling(t) && inj_watching(t->inj);
}

/* The allocator as messages name it. */
static const char *heap_name(const struct hc_target *t)
{
	if (!strcmp(t->drv.alloc->name, "musl"))
		return t->drv.where.allocator; /* "musl mallocng" */
	return strcmp(t->drv.alloc->name, "glibc") ? t->drv.alloc->name : "glibc malloc";
}

/*
 * The allocator's own profiler; glibc, mimalloc and musl have none.  The
 * driver's hint points at heapctl's sampler, unless sampler_loadable()
 * says it cannot be loaded here: then its hint, which fits the process.
 */
static int no_prof(struct hc_target *t, struct hc_err *err)
{
	const char *why, *hint;

	if (!sampler_loadable(&t->eng, &why, &hint))
		return err_sethint(err, HC_E_UNSUPPORTED, 0, hint,
				   "%s in pid %d has no heap profiler, and %s", heap_name(t),
				   t->img.pid, why);
	return err_sethint(err, HC_E_UNSUPPORTED, 0, t->drv.alloc->no_prof_hint,
			   "%s in pid %d has no heap profiler", heap_name(t), t->img.pid);
}

static int own_prof_get(struct hc_target *t, bool *enabled, bool *active, struct hc_err *err)
{
	*enabled = *active = false;
	return t->drv.alloc->prof_get ? t->drv.alloc->prof_get(t, enabled, active, err) : no_prof(t, err);
}

static int own_prof_set(struct hc_target *t, bool active, bool *was, struct hc_err *err)
{
	*was = false;
	return t->drv.alloc->prof_set ? t->drv.alloc->prof_set(t, active, was, err) : no_prof(t, err);
}

static int own_prof_dump(struct hc_target *t, const char *out, bool *active, struct hc_err *err)
{
	*active = false;
	return t->drv.alloc->prof_dump ? t->drv.alloc->prof_dump(t, out, active, err) : no_prof(t, err);
}

/* Whether the allocator's own profiler can run (opt.prof; a full tcmalloc). */
static bool native_prof(struct hc_target *t)
{
	struct hc_err e = { 0 };
	bool enabled = false, active = false;

	return own_prof_get(t, &enabled, &active, &e) == 0 && enabled;
}

/* Bracket an operation in one borrow: its steps share the thread. */
static int end_op(struct hc_target *t, int r, struct hc_err *err)
{
	if (call_release(&t->eng, err) < 0)
		return -1;
	return r < 0 ? -1 : 0;
}

int hc_prof_get(struct hc_target *t, bool *enabled, bool *active, struct hc_err *err)
{
	int r;

	arm(t);
	r = sampler_probe(t, err);
	if (r < 0)
		return -1;
	if (r == 1 && (t->inj->s.enabled || t->img.opts.sampler == HC_SAMPLER_INJECT)) {
		*enabled = true;
		*active = t->inj->s.enabled;
		/* objects loaded since the last call get their hooks now */
		return done(t, inj_rescan(&t->eng, t->inj, err), err);
	}
	return done(t, own_prof_get(t, enabled, active, err), err);
}

int hc_prof_set(struct hc_target *t, bool active, bool *was, struct hc_err *err)
{
	uint64_t interval = t->img.opts.sample_bytes; /* 0: see below */
	int mode = t->img.opts.sampler, r;
	bool old = false;

	arm(t);
	if (!was)
		was = &old;
	*was = false;
	r = sampler_probe(t, err);
	if (r < 0)
		return -1;
	/*
	 * A bare prof on: the documented default, 512 KiB, where the sampler
	 * starts a new profile; one that samples already, or was stopped with
	 * its samples kept, keeps its interval, and so what it has sampled.
	 */
	if (!interval && !sampling(t) && !kept(t))
		interval = HC_SAMPLE_BYTES_DEFAULT;
	call_hold(&t->eng);
	if (!active) {
		if (sampling(t)) {
			*was = true;
			r = inj_off(&t->eng, t->inj, err);
		} else if (kept(t) && mode != HC_SAMPLER_NATIVE) {
			r = 0; /* off already */
		} else {
			r = own_prof_set(t, false, was, err);
		}
	} else if (mode == HC_SAMPLER_NATIVE) {
		r = own_prof_set(t, true, was, err);
	} else if (mode == HC_SAMPLER_AUTO && !sampling(t) && !kept(t)) {
		/* the sampler's reads first, while nothing is stopped: the next step stops the thread */
		struct hc_err why = { 0 }, own = { 0 };
		bool can_inject = inj_prepare(&t->eng, t->inj, &why) == 0;

		/*
		 * The allocator's own profiler if it can run: trying it is the
		 * one step that turns it on, and fails with HC_E_PROF_OFF where
		 * it cannot (jemalloc without opt.prof, tcmalloc_minimal).
		 */
		r = t->drv.alloc->prof_set ? own_prof_set(t, true, was, &own) : -1;
		if (r < 0 && t->drv.alloc->prof_set && own.code != HC_E_PROF_OFF)
			*err = own;
		else if (r < 0 && can_inject)
			r = inj_on(&t->eng, t->inj, interval, err);
		else if (r < 0)
			*err = why;
	} else {
		*was = sampling(t);
		r = inj_on(&t->eng, t->inj, interval, err);
	}
	return end_op(t, r, err);
}

int hc_prof_dump(struct hc_target *t, const char *out_path, bool *active, struct hc_err *err)
{
	const char *why, *hint;
	bool on = false;
	int r;

	arm(t);
	if (!active)
		active = &on;
	*active = false;
	r = sampler_probe(t, err);
	if (r < 0)
		return -1;
	if (r == 1 && !sampling(t) && !kept(t) && t->img.opts.sampler != HC_SAMPLER_NATIVE &&
	    !native_prof(t))
		return done(t, err_sethint(err, HC_E_PROF_OFF, 0, "run 'heapctl prof on' first",
					   "heapctl's sampler in pid %d is off, with nothing sampled "
					   "kept", t->img.pid), err);
	if (r == 0 && !t->drv.alloc->prof_dump && !sampler_loadable(&t->eng, &why, &hint))
		return done(t, err_sethint(err, HC_E_UNSUPPORTED, 0, hint,
					   "%s in pid %d has no heap profiler, and %s", heap_name(t),
					   t->img.pid, why), err);
	if (r == 0 && !t->drv.alloc->prof_dump)
		return done(t, err_sethint(err, HC_E_PROF_OFF, 0,
					   "run 'heapctl prof on -p PID' first: it loads heapctl's "
					   "sampler, which the dump reads",
					   "%s in pid %d has no heap profiler, and heapctl's sampler is "
					   "not loaded",
					   heap_name(t), t->img.pid),
			    err);
	if (!sampling(t) && (!kept(t) || t->img.opts.sampler == HC_SAMPLER_NATIVE))
		return done(t, own_prof_dump(t, out_path, active, err), err);
	*active = sampling(t);
	/* hook what was loaded since; the dump itself runs nothing in the target */
	call_hold(&t->eng);
	r = inj_rescan(&t->eng, t->inj, err);
	if (end_op(t, r, err) < 0)
		return -1;
	return inj_dump(&t->eng, t->inj, out_path, err);
}

void hc_target_set_sample_bytes(struct hc_target *t, uint64_t bytes)
{
	t->img.opts.sample_bytes = bytes;
}

int hc_prof_reset(struct hc_target *t, struct hc_err *err)
{
	int r;

	arm(t);
	r = sampler_probe(t, err);
	if (r < 0)
		return -1;
	if (r == 1 && t->img.opts.sampler != HC_SAMPLER_NATIVE) {
		call_hold(&t->eng);
		return end_op(t, inj_reset(&t->eng, t->inj, err), err);
	}
	if (!t->drv.alloc->prof_reset)
		return done(t, t->drv.alloc->prof_get ?
			    err_sethint(err, HC_E_UNSUPPORTED, 0,
					"'heapctl prof off' then 'prof on' starts a new profile",
					"%s's heap profiler in pid %d has no reset", heap_name(t),
					t->img.pid) : no_prof(t, err), err);
	return done(t, t->drv.alloc->prof_reset(t, err), err);
}

int hc_sampler_get(struct hc_target *t, struct hc_sampler *s, struct hc_err *err)
{
	const char *why, *hint;

	memset(s, 0, sizeof(*s));
	if (sampler_probe(t, err) < 0 || inj_status(&t->eng, t->inj, s, err) < 0)
		return -1;
	if (!s->installed && !sampler_loadable(&t->eng, &why, &hint)) {
		s->cannot_load = true;
		snprintf(s->why, sizeof(s->why), "%s", why);
		snprintf(s->hint, sizeof(s->hint), "%s", hint);
	}
	return 0;
}

static uint64_t rss_of(pid_t pid)
{
	struct procfs_status ps;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	return procfs_status(path, &ps) == 0 ? ps.rss : 0;
}

int hc_stats_get(struct hc_target *t, struct hc_stats *st, struct hc_err *err)
{
	struct hc_err e = { 0 };

	memset(st, 0, sizeof(*st));
	arm(t);
	if (done(t, t->drv.alloc->stats(t, st, err), err) < 0)
		return -1;
	st->rss = rss_of(t->img.pid);
	/*
	 * musl counts nothing: where heapctl's sampler is loaded, what it has
	 * seen live is the one figure of the program's own allocations there
	 * is (samples times the mean interval: an estimate).  Read, not called.
	 */
	if (!strcmp(t->drv.alloc->name, "musl") && sampler_probe(t, &e) == 1 && t->inj->s.interval)
		alloc_fig(st, "sampled_live", t->inj->s.live_count * t->inj->s.interval,
			  "live bytes heapctl's sampler estimates (samples x interval)");
	return 0;
}

int hc_stats_print(struct hc_target *t, const char *opts, hc_sink_fn sink, void *arg,
		   struct hc_err *err)
{
	arm(t);
	return done(t, t->drv.alloc->stats_print(t, opts, sink, arg, err), err);
}

int hc_purge(struct hc_target *t, int arena, struct hc_err *err)
{
	arm(t);
	return done(t, t->drv.alloc->purge(t, arena, err), err);
}

int hc_ctl_get(struct hc_target *t, const char *name, struct hc_value *v, struct hc_err *err)
{
	arm(t);
	return done(t, t->drv.alloc->ctl_get(t, name, v, err), err);
}

int hc_ctl_set(struct hc_target *t, const char *name, const char *value, struct hc_value *old,
	       struct hc_value *now, struct hc_err *err)
{
	memset(old, 0, sizeof(*old));
	memset(now, 0, sizeof(*now));
	arm(t);
	return done(t, t->drv.alloc->ctl_set(t, name, value, old, now, err), err);
}

int hc_ctl_list(struct hc_target *t, const char *prefix, struct hc_ctl_entry **out, size_t *n,
		char *skipped, size_t skipped_len, struct hc_err *err)
{
	*out = NULL;
	*n = 0;
	if (skipped_len)
		skipped[0] = 0;
	if (!t->drv.alloc->ctl_list)
		return err_sethint(err, HC_E_NO_CTL, 0, "ask for one name: heapctl get -p PID NAME",
				   "%s has no list of control names", t->drv.alloc->name);
	arm(t);
	return done(t, t->drv.alloc->ctl_list(t, prefix, out, n, skipped, skipped_len, err), err);
}

