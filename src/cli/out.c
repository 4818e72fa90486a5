// SPDX-License-Identifier: MIT
/*
 * out.c: the files heapctl writes (-o, --svg, --folded), and the format
 * each name asks for (the one suffix -> format table).
 *
 * An output is checked and its temporary file created before any thread of
 * the target is borrowed: a path that cannot be written is refused while
 * nothing has happened yet, with a hint about the path (not about the
 * process).  The data goes into the temporary file beside the final name,
 * which is renamed over it at the end, so a failure leaves neither half a
 * file nor a clobbered old one.  "-" is stdout; an existing file that is
 * not a regular one (/dev/null, a FIFO, a symlink such as /dev/stdout) is
 * written in place, through a temporary file in $TMPDIR.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <heapctl/prof.h>

#include "cli.h"

/*
 * The one suffix -> format table, for report and leak alike.  The first
 * suffix of each format is the one heapctl uses when it names a file.
 */
static const struct {
	const char *suffix;
	int fmt;
} suffixes[] = {
	{ ".folded", HC_FMT_FOLDED },	{ ".collapsed", HC_FMT_FOLDED },
	{ ".folded.txt", HC_FMT_FOLDED }, { ".svg", HC_FMT_SVG },
	{ ".pb.gz", HC_FMT_PPROF },	{ ".pb", HC_FMT_PPROF },
	{ ".pprof", HC_FMT_PPROF },	{ ".proto.gz", HC_FMT_PPROF },
	{ ".txt", HC_FMT_TEXT },	{ ".text", HC_FMT_TEXT },
	{ ".json", HC_FMT_JSON },
};

#define NSUFFIXES (sizeof(suffixes) / sizeof(suffixes[0]))

int cli_format_of_path(const char *path)
{
	size_t i, n = strlen(path), best = 0;
	int fmt = -1;

	/* The longest suffix wins: "x.folded.txt" is folded, not text. */
	for (i = 0; i < NSUFFIXES; i++) {
		size_t m = strlen(suffixes[i].suffix);

		if (n > m && m > best && !strcmp(path + n - m, suffixes[i].suffix)) {
			best = m;
			fmt = suffixes[i].fmt;
		}
	}
	return fmt;
}

const char *cli_format_suffix(int fmt)
{
	size_t i;

	for (i = 0; i < NSUFFIXES; i++)
		if (suffixes[i].fmt == fmt)
			return suffixes[i].suffix;
	return "";
}

int cli_output_format(const struct cli_env *env, const char *path, int dflt, int *fmt)
{
	char known[128] = "";
	struct stat st;
	size_t i;

	if (env->format) {
		*fmt = hc_report_format_parse(env->format);
		if (*fmt < 0)
			return cli_usage(env, "unknown format '%s' (folded, svg, pprof, text, json)",
					 env->format);
		return CLI_EXIT_OK;
	}
	if (!path || cli_out_is_stdout(path)) {
		*fmt = dflt;
		return CLI_EXIT_OK;
	}
	*fmt = cli_format_of_path(path);
	if (*fmt >= 0)
		return CLI_EXIT_OK;
	/* A directory has no suffix to tell: cli_out_open() says what is wrong with it. */
	if (path[strlen(path) - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
		*fmt = dflt;
		return CLI_EXIT_OK;
	}
	for (i = 0; i < NSUFFIXES; i++)
		snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? " " : "",
			 suffixes[i].suffix);
	return cli_usage(env, "cannot tell the format from '%s' (known suffixes: %s); add "
			 "--format folded|svg|pprof|text|json", path, known);
}

/*
 * The temporary files that exist right now.  A signal that ends heapctl
 * (Ctrl-C before the target is opened, or once it is released) removes
 * them on the way out: nothing is left behind.  leak catches these signals
 * itself and discards its output on every path.
 */
#define MAX_TEMPS 4
static const char *volatile temps[MAX_TEMPS];

static void on_fatal(int sig)
{
	int e = errno;

	for (int i = 0; i < MAX_TEMPS; i++)
		if (temps[i])
			unlink(temps[i]);
	errno = e;
	/* SA_RESETHAND put the default back: this ends heapctl as the signal would have. */
	raise(sig);
}

static void track(const char *tmp)
{
	static bool installed;
	int i;

	if (!installed) {
		struct sigaction sa, old;

		installed = true;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_fatal;
		sa.sa_flags = SA_RESETHAND;
		sigemptyset(&sa.sa_mask);
		for (i = 0; i < CLI_NTERM; i++) {
			/* an ignored signal stays ignored */
			if (sigaction(cli_term_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
				sigaction(cli_term_sigs[i], &sa, NULL);
		}
	}
	for (i = 0; i < MAX_TEMPS; i++)
		if (!temps[i]) {
			temps[i] = tmp;
			return;
		}
}

/*
 * mkostemp() and track() with the fatal signals held: a SIGINT between the
 * two would end heapctl before its handler knew the file, and leave it.
 */
static int mktemp_tracked(char *tmpl)
{
	sigset_t set, old;
	int fd;

	sigemptyset(&set);
	cli_term_sigaddset(&set);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd >= 0)
		track(tmpl);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return fd;
}

static void untrack(const char *tmp)
{
	for (int i = 0; i < MAX_TEMPS; i++)
		if (temps[i] == tmp)
			temps[i] = NULL;
}

bool cli_out_is_stdout(const char *path)
{
	return path && !strcmp(path, "-");
}

/* err: what went wrong with path, and a hint about the path. */
static int file_error(const struct cli_out *o, const char *path, int e, struct hc_err *err)
{
	const char *with = o->defaulted ? " (name the file with -o FILE)" : "";

	memset(err, 0, sizeof(*err));
	err->code = HC_E_IO;
	err->sys_errno = e;
	switch (e) {
	case EISDIR:
		snprintf(err->msg, sizeof(err->msg), "%s %s names a directory", o->opt, path);
		snprintf(err->hint, sizeof(err->hint), "give a file name, such as %s%sout%s",
			 path, path[strlen(path) - 1] == '/' ? "" : "/", o->suffix);
		break;
	case ENOENT:
		snprintf(err->msg, sizeof(err->msg), "cannot write %.100s: directory %.100s does not "
			 "exist", path, o->dir);
		snprintf(err->hint, sizeof(err->hint), "create it or choose another path%s", with);
		break;
	case ENOTDIR:
		snprintf(err->msg, sizeof(err->msg), "cannot write %.100s: %.100s is not a directory",
			 path, o->dir);
		snprintf(err->hint, sizeof(err->hint), "choose another path%s", with);
		break;
	case EACCES:
	case EPERM:
		snprintf(err->msg, sizeof(err->msg), "cannot write %s: permission denied", path);
		snprintf(err->hint, sizeof(err->hint), "choose a writable path%s", with);
		break;
	case EROFS:
		snprintf(err->msg, sizeof(err->msg), "cannot write %s: read-only file system", path);
		snprintf(err->hint, sizeof(err->hint), "choose a writable path%s", with);
		break;
	case ENOSPC:
	case EDQUOT:
		snprintf(err->msg, sizeof(err->msg), "cannot write %s: %s", path, strerror(e));
		snprintf(err->hint, sizeof(err->hint), "free some space or choose another path%s",
			 with);
		break;
	case ENAMETOOLONG:
		snprintf(err->msg, sizeof(err->msg), "cannot write %.150s...: name too long", path);
		snprintf(err->hint, sizeof(err->hint), "choose a shorter path");
		break;
	default:
		snprintf(err->msg, sizeof(err->msg), "cannot write %s: %s", path, strerror(e));
		snprintf(err->hint, sizeof(err->hint), "check the path and free space%s", with);
		break;
	}
	return -1;
}

int cli_out_fail(const struct cli_out *o, int e, struct hc_err *err)
{
	return file_error(o, o->how == CLI_OUT_STDOUT ? "stdout" : o->path, e ? e : EIO, err);
}

const char *cli_tmpdir(void)
{
	const char *dir = getenv("TMPDIR");

	return dir && dir[0] ? dir : "/tmp";
}

/* A private file in $TMPDIR (or /tmp) for data that is copied somewhere at the end. */
static int tmp_elsewhere(struct cli_out *o, struct hc_err *err)
{
	const char *dir = cli_tmpdir();
	snprintf(o->tmp, sizeof(o->tmp), "%s/heapctl-out.XXXXXX", dir);
	o->fd = mktemp_tracked(o->tmp);
	if (o->fd < 0) {
		int e = errno;

		o->tmp[0] = '\0';
		memset(err, 0, sizeof(*err));
		err->code = HC_E_IO;
		err->sys_errno = e;
		snprintf(err->msg, sizeof(err->msg), "cannot create a temporary file in %s: %s", dir,
			 strerror(e));
		snprintf(err->hint, sizeof(err->hint), "set TMPDIR to a writable directory");
		return -1;
	}
	return 0;
}

int cli_out_open(struct cli_out *o, const char *path, const char *opt, int fmt,
		 struct hc_err *err)
{
	struct stat st;
	const char *slash;
	size_t n;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->path = path;
	o->opt = opt ? opt : "-o";
	o->defaulted = !opt;
	o->suffix = fmt >= 0 ? cli_format_suffix(fmt) : ".heap";
	if (cli_out_is_stdout(path)) {
		o->how = CLI_OUT_STDOUT;
		return 0;
	}
	n = strlen(path);
	slash = strrchr(path, '/');
	if (!slash)
		snprintf(o->dir, sizeof(o->dir), ".");
	else if (slash == path)
		snprintf(o->dir, sizeof(o->dir), "/");
	else
		snprintf(o->dir, sizeof(o->dir), "%.*s", (int)(slash - path), path);
	if (n >= PATH_MAX - 32)
		return file_error(o, path, ENAMETOOLONG, err);
	if (path[n - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
		return file_error(o, path, EISDIR, err);
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/*
		 * /dev/null, a FIFO, /dev/stdout: written in place, never renamed
		 * over.  Only one of the user's own, or root's: a link or FIFO
		 * that someone else planted at that name in a shared directory
		 * (a target's user in /tmp) would lead heapctl's writes, with the
		 * user's rights, wherever that other user chose.
		 */
		if (st.st_uid != geteuid() && st.st_uid != 0) {
			file_error(o, path, EPERM, err);
			snprintf(err->msg, sizeof(err->msg), "%.20s %.150s is a %s of uid %u, not "
				 "yours: heapctl does not write through it", o->opt, path,
				 S_ISLNK(st.st_mode) ? "link" : "special file", (unsigned)st.st_uid);
			snprintf(err->hint, sizeof(err->hint), "remove it, or choose a path in a "
				 "directory only you can write");
			return -1;
		}
		if (access(path, W_OK))
			return file_error(o, path, errno, err);
		o->how = CLI_OUT_COPY;
		return 0;
	}
	/* Replacing a file its owner made read-only would go around their choice. */
	if (access(path, F_OK) == 0 && access(path, W_OK))
		return file_error(o, path, errno, err);
	o->how = CLI_OUT_RENAME;
	if ((size_t)snprintf(o->tmp, sizeof(o->tmp), "%s/.%s.heapctl-XXXXXX", o->dir,
			     slash ? slash + 1 : path) >= sizeof(o->tmp))
		return file_error(o, path, ENAMETOOLONG, err);
	o->fd = mktemp_tracked(o->tmp);
	if (o->fd < 0) {
		int e = errno;

		o->tmp[0] = '\0';
		/* mkostemp says ENOENT or ENOTDIR for the directory, not for the file. */
		return file_error(o, path, e, err);
	}
	/*
	 * mkostemp makes it 0600, and so it stays (the umask may narrow it
	 * further): what heapctl writes comes from a process that may be
	 * another user's (docs/security.md).
	 */
	{
		mode_t um = umask(0);

		umask(um);
		if (fchmod(o->fd, 0600 & ~um))
			cli_log(HC_LOG_DEBUG, "chmod %s: %s", o->tmp, strerror(errno));
	}
	return 0;
}

const char *cli_out_path(struct cli_out *o, struct hc_err *err)
{
	if (!o->tmp[0] && tmp_elsewhere(o, err))
		return NULL;
	return o->tmp;
}

FILE *cli_out_stream(struct cli_out *o, struct hc_err *err)
{
	if (o->how == CLI_OUT_STDOUT)
		return stdout;
	if (o->f)
		return o->f;
	if (!o->tmp[0] && tmp_elsewhere(o, err))
		return NULL;
	o->f = fdopen(o->fd, "w");
	if (!o->f) {
		memset(err, 0, sizeof(*err));
		err->code = HC_E_NOMEM;
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return NULL;
	}
	o->fd = -1;
	return o->f;
}

/* Closes what is open on the temporary file; -1 with errno if data was lost. */
static int close_tmp(struct cli_out *o)
{
	int rc = 0, e = 0;

	if (o->f) {
		if (fflush(o->f) == EOF || ferror(o->f)) {
			rc = -1;
			e = errno ? errno : EIO;
		}
		if (fclose(o->f) == EOF && !rc) {
			rc = -1;
			e = errno;
		}
		o->f = NULL;
	}
	if (o->fd >= 0) {
		if (close(o->fd) && !rc) {
			rc = -1;
			e = errno;
		}
		o->fd = -1;
	}
	errno = e;
	return rc;
}

/* Copies the temporary file to fd; -1 with errno (the write's, or the read's). */
static int copy_to(const char *from, int to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY | O_CLOEXEC);

	if (in < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		char *p = buf;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		while (n > 0) {
			ssize_t w = write(to, p, (size_t)n);

			if (w < 0) {
				if (errno == EINTR)
					continue;
				goto fail;
			}
			p += w;
			n -= w;
		}
	}
	close(in);
	return 0;
fail:
	{
		int e = errno;

		close(in);
		errno = e;
	}
	return -1;
}

int cli_out_commit(struct cli_out *o, struct hc_err *err)
{
	int rc = 0, fd;

	if (o->how == CLI_OUT_STDOUT && !o->tmp[0])
		return 0; /* written to stdout directly; main.c reports stdout's errors */
	if (close_tmp(o))
		rc = file_error(o, o->how == CLI_OUT_STDOUT ? "stdout" : o->path, errno, err);
	else if (o->how == CLI_OUT_RENAME) {
		if (rename(o->tmp, o->path)) {
			rc = file_error(o, o->path, errno, err);
		} else {
			untrack(o->tmp);
			o->tmp[0] = '\0';
		}
	} else if (o->how == CLI_OUT_STDOUT) {
		cli_flush();
		if (copy_to(o->tmp, STDOUT_FILENO)) {
			/* "| head" went away: not an error worth a message (main.c's finish()). */
			if (errno == EPIPE)
				cli_stdout_failed(EPIPE);
			else
				rc = file_error(o, "stdout", errno, err);
		}
	} else {
		fd = open(o->path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (fd < 0 || copy_to(o->tmp, fd))
			rc = file_error(o, o->path, errno, err);
		if (fd >= 0 && close(fd) && !rc)
			rc = file_error(o, o->path, errno, err);
	}
	cli_out_discard(o);
	return rc;
}

void cli_out_discard(struct cli_out *o)
{
	int e = errno;

	close_tmp(o);
	if (o->tmp[0]) {
		unlink(o->tmp);
		untrack(o->tmp);
	}
	o->tmp[0] = '\0';
	errno = e;
}
