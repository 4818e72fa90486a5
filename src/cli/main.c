// SPDX-License-Identifier: MIT
/*
 * main.c: heapctl's command line.
 *
 *   heapctl [-v...] <command> [options] [words]
 *
 * Options may come before or after the command word.  The arguments are
 * first split into options (with their values) and positional words; the
 * first word is the command, looked up in cmds[] the way compel dispatches
 * on its action word, and getopt_long then parses the options alone.  The
 * split is ours rather than getopt's permutation so that a negative VALUE
 * ("heapctl set -p 1 arena.0.dirty_decay_ms -1") stays a word.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <heapctl/prof.h>

#include "cli.h"
#include "hc_version.h" /* generated: HC_GIT_REV */


enum {
	OPT_TID = 256,
	OPT_TIMEOUT,
	OPT_VERSION,
	OPT_JSON,
	OPT_FULL,
	OPT_OPTS,
	OPT_RAW,
	OPT_ARENA,
	OPT_BASE,
	OPT_FORMAT,
	OPT_SYSROOT,
	OPT_SVG,
	OPT_FOLDED,
	OPT_TOP,
	OPT_FOR,
	OPT_WARM_UP,
	OPT_OBJECTS,
	OPT_SHRINK,
	OPT_LINES,
	OPT_NO_INLINE,
	OPT_PROBE,
	OPT_DEBUG_FILE,
	OPT_EVERY,
	OPT_COUNT,
	OPT_TEXTFILE,
	OPT_GROWTH,
	OPT_DIR,
	OPT_SAMPLER,
	OPT_SAMPLE_BYTES,
	OPT_LISTEN,
	OPT_SELECT,
	OPT_PROFILE,
	OPT_MIN_INTERVAL,
	OPT_TOKEN_FILE,
	OPT_ALLOW_CONTROL,
};

/* '+': no permutation, split_args() already did it; ':': report missing values. */
static const char short_opts[] = "+:p:o:vh";

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "output", required_argument, NULL, 'o' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "full", no_argument, NULL, OPT_FULL },
	{ "opts", required_argument, NULL, OPT_OPTS },
	{ "raw", no_argument, NULL, OPT_RAW },
	{ "arena", required_argument, NULL, OPT_ARENA },
	{ "base", required_argument, NULL, OPT_BASE },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "sysroot", required_argument, NULL, OPT_SYSROOT },
	{ "svg", required_argument, NULL, OPT_SVG },
	{ "folded", required_argument, NULL, OPT_FOLDED },
	{ "top", required_argument, NULL, OPT_TOP },
	{ "for", required_argument, NULL, OPT_FOR },
	{ "warm-up", required_argument, NULL, OPT_WARM_UP },
	{ "objects", no_argument, NULL, OPT_OBJECTS },
	{ "shrink", no_argument, NULL, OPT_SHRINK },
	{ "lines", no_argument, NULL, OPT_LINES },
	{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
	{ "probe", no_argument, NULL, OPT_PROBE },
	{ "debug-file", required_argument, NULL, OPT_DEBUG_FILE },
	{ "every", required_argument, NULL, OPT_EVERY },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "textfile", required_argument, NULL, OPT_TEXTFILE },
	{ "dump-on-growth", required_argument, NULL, OPT_GROWTH },
	{ "dir", required_argument, NULL, OPT_DIR },
	{ "sampler", required_argument, NULL, OPT_SAMPLER },
	{ "sample-bytes", required_argument, NULL, OPT_SAMPLE_BYTES },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "select", required_argument, NULL, OPT_SELECT },
	{ "profile", required_argument, NULL, OPT_PROFILE },
	{ "min-interval", required_argument, NULL, OPT_MIN_INTERVAL },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "allow-control", no_argument, NULL, OPT_ALLOW_CONTROL },
	{ NULL, 0, NULL, 0 },
};

/*
 * Edit distance with adjacent transpositions (optimal string alignment):
 * "stast" and "jsno" are one typo away from "stats" and "json".  Names
 * are short; anything past 31 bytes is simply "far".
 */
static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t d[32][32], i, j;

	if (la > 31 || lb > 31)
		return SIZE_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1], v = d[i - 1][j - 1] + cost;

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

/*
 * The one name a mistyped word most likely meant: the only name it is a
 * prefix of ("rep" -> report), else the nearest within one edit (two for
 * words longer than four), else NULL.  A tie is no suggestion: guessing
 * between two names helps nobody.
 */
static const char *suggest(const char *word, size_t len, const char *const *names, size_t n)
{
	const char *best = NULL, *prefix = NULL;
	size_t i, best_d = SIZE_MAX, nprefix = 0, limit = len > 4 ? 2 : 1;
	bool tie = false;

	if (!len)
		return NULL;
	for (i = 0; i < n; i++) {
		size_t d = edit_distance(word, len, names[i], strlen(names[i]));

		if (len >= 2 && len < strlen(names[i]) && !strncmp(names[i], word, len)) {
			prefix = names[i];
			nprefix++;
		}
		if (d < best_d) {
			best_d = d;
			best = names[i];
			tie = false;
		} else if (d == best_d) {
			tie = true;
		}
	}
	if (nprefix == 1)
		return prefix;
	return best_d <= limit && !tie ? best : NULL;
}

static const char *suggest_cmd(const char *word)
{
	const char *names[CLI_MAX_CMDS + 1];
	size_t i;

	for (i = 0; i < cli_ncmds && i < CLI_MAX_CMDS; i++)
		names[i] = cli_cmds[i].name;
	names[i] = "help";
	return suggest(word, strlen(word), names, i + 1);
}

/* "--jsno" or "--jsno=x" -> "json", or NULL. */
static const char *suggest_long(const char *tok)
{
	const char *names[sizeof(long_opts) / sizeof(long_opts[0])];
	size_t n = 0;
	const struct option *o;

	for (o = long_opts; o->name; o++)
		names[n++] = o->name;
	tok += 2;
	return suggest(tok, strcspn(tok, "="), names, n);
}

static int unknown_command(const char *word)
{
	const char *s = suggest_cmd(word);
	char pre[96], hint[160];

	if (!s)
		return cli_usage(NULL, "unknown command '%s'", word);
	snprintf(pre, sizeof(pre), "did you mean 'heapctl %s'?", s);
	return cli_usage_hint(cli_help_hint(NULL, pre, hint, sizeof(hint)), "unknown command '%s'",
			      word);
}

/* "-x" or "--xyz", but not "-" alone nor a negative number such as "-1" or "-.5". */
static bool is_option(const char *s)
{
	return s[0] == '-' && s[1] && !(s[1] >= '0' && s[1] <= '9') && s[1] != '.';
}

/* Does option token tok take the next argument as its value?  Mirrors getopt_long. */
static bool takes_next(const char *tok)
{
	const struct option *o, *hit = NULL;
	const char *p;
	size_t n;
	int nhits = 0;

	if (tok[1] == '-') {
		n = strcspn(tok + 2, "=");
		if (tok[2 + n] == '=')
			return false;
		for (o = long_opts; o->name; o++) {
			if (strncmp(o->name, tok + 2, n))
				continue;
			if (strlen(o->name) == n)
				return o->has_arg == required_argument;
			hit = o;
			nhits++;
		}
		/* getopt_long accepts unambiguous abbreviations. */
		return nhits == 1 && hit->has_arg == required_argument;
	}
	for (p = tok + 1; *p; p++) {
		const char *d = *p == ':' || *p == '+' ? NULL : strchr(short_opts, *p);

		if (!d)
			return false;
		if (d[1] == ':')
			return p[1] == '\0';
	}
	return false;
}

struct parse_state {
	bool help, version;
	char err[320]; /* the first problem found; parsing goes on for --help */
	char hint[160]; /* for err, if better than "see --help" */
	/* Each CLI_O_* bit given, as the user typed it ("--obj", "-o"), for messages. */
	char typed[32][24];
};

static void __attribute__((format(printf, 2, 3)))
parse_error(struct parse_state *ps, const char *fmt, ...)
{
	va_list ap;

	if (ps->err[0])
		return;
	va_start(ap, fmt);
	vsnprintf(ps->err, sizeof(ps->err), fmt, ap);
	va_end(ap);
}

/*
 * The first letter of a short-option bundle ("-vp", "-w.heap") that is not
 * an option, or 0.  getopt would take the letters it knows and skip the
 * rest, so "-w.heap" meant -h: help, exit 0, for a typo.  Letters after one
 * that takes a value are that value ("-p123").
 */
static char bad_bundle_letter(const char *tok)
{
	const char *p, *d;

	if (tok[1] == '-')
		return 0;
	for (p = tok + 1; *p; p++) {
		d = *p == ':' || *p == '+' ? NULL : strchr(short_opts, *p);
		if (!d)
			return *p;
		if (d[1] == ':')
			return 0;
	}
	return 0;
}

/*
 * argv[1..] -> options with their values (ov, after ov[0]) and words (pv).
 * A bundle with a letter that is no option is an error as a whole, and none
 * of its letters take effect.
 */
static void split_args(int argc, char **argv, char **ov, int *on, char **pv, int *pn,
		       struct parse_state *ps)
{
	int i;

	ov[(*on)++] = argv[0];
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			while (++i < argc)
				pv[(*pn)++] = argv[i];
			break;
		}
		if (!is_option(argv[i])) {
			pv[(*pn)++] = argv[i];
			continue;
		}
		if (bad_bundle_letter(argv[i])) {
			char bad = bad_bundle_letter(argv[i]);

			if (argv[i][2])
				parse_error(ps, "unknown option '-%c' in '%s'", bad, argv[i]);
			else
				parse_error(ps, "unknown option '-%c'", bad);
			continue;
		}
		ov[(*on)++] = argv[i];
		if (takes_next(argv[i]) && i + 1 < argc)
			ov[(*on)++] = argv[++i];
	}
	ov[*on] = NULL;
}

/*
 * Remember how the option getopt_long just returned was typed, under the
 * CLI_O_* bits it set, so "does not apply" names what the user wrote.
 */
static void note_typed(struct parse_state *ps, char **ov, int li, int c, unsigned int bits)
{
	char name[24];
	const char *tok;
	unsigned int b;

	if (li < 0) {
		snprintf(name, sizeof(name), "-%c", c);
	} else {
		/* The value may be the next word: then the option is the one before. */
		tok = optarg && optind >= 2 && optarg == ov[optind - 1] ? ov[optind - 2] :
									 ov[optind - 1];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(tok, "="), tok);
	}
	for (b = 0; b < 32; b++)
		if ((bits & (1u << b)) && !ps->typed[b][0])
			snprintf(ps->typed[b], sizeof(ps->typed[b]), "%s", name);
}

/* getopt_long refused ov[optind - 1]: say which option and why. */
static void bad_long(struct parse_state *ps, const char *tok)
{
	size_t n = strcspn(tok + 2, "=");
	const struct option *o;
	const char *s;
	char list[128] = "";
	int nhits = 0;

	for (o = long_opts; o->name; o++) {
		if (strncmp(o->name, tok + 2, n))
			continue;
		nhits++;
		if (strlen(list) + strlen(o->name) + 5 < sizeof(list))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s--%s",
				 list[0] ? ", " : "", o->name);
	}
	if (nhits > 1) {
		parse_error(ps, "ambiguous option '%.*s' (%s)", (int)n + 2, tok, list);
		return;
	}
	if (nhits == 1) {
		/* Known, but "--json=x" gives a value to an option that takes none. */
		parse_error(ps, "option '%.*s' takes no value", (int)n + 2, tok);
		return;
	}
	if (ps->err[0])
		return;
	parse_error(ps, "unknown option '%.*s'", (int)n + 2, tok);
	s = suggest_long(tok);
	if (s)
		snprintf(ps->hint, sizeof(ps->hint), "did you mean '--%s'?", s);
}

static void parse_opts(struct cli_env *env, int on, char **ov, struct parse_state *ps)
{
	unsigned long ul;
	unsigned int seen;
	char why[200];
	int c, li;

	opterr = 0;
	optind = 1;
	for (;;) {
		li = -1;
		seen = env->seen;
		c = getopt_long(on, ov, short_opts, long_opts, &li);
		if (c == -1)
			break;
		switch (c) {
		case 'p':
			env->seen |= CLI_O_PID;
			/* The last one winning silently would drive the wrong process. */
			if (env->pid_arg)
				parse_error(ps, "-p given twice ('%s', then '%s'): give one",
					    env->pid_arg, optarg);
			else if (!optarg[0])
				parse_error(ps, "empty pid");
			env->pid_arg = optarg; /* a pid or a name: resolved in check_env() */
			break;
		case OPT_TID:
			env->seen |= CLI_O_TID;
			if (cli_parse_id(optarg, "tid", &env->topts.tid, why, sizeof(why)))
				parse_error(ps, "%s", why);
			break;
		case OPT_TIMEOUT:
			env->seen |= CLI_O_TIMEOUT;
			if (cli_parse_seconds(optarg, &env->topts.timeout_ms))
				parse_error(ps, "invalid timeout '%s' (expected seconds > 0, "
					    "e.g. 5 or 0.5)", optarg);
			break;
		case 'v':
			env->verbose++;
			break;
		case 'h':
			ps->help = true;
			break;
		case OPT_VERSION:
			ps->version = true;
			break;
		case OPT_JSON:
			env->seen |= CLI_O_JSON;
			env->json = true;
			break;
		case OPT_FULL:
			env->seen |= CLI_O_FULL;
			env->full = true;
			break;
		case OPT_OPTS:
			env->seen |= CLI_O_OPTS;
			env->stats_opts = optarg;
			break;
		case OPT_RAW:
			env->seen |= CLI_O_FULL;
			env->full = true;
			env->raw = true;
			break;
		case 'o':
			env->seen |= CLI_O_OUTPUT;
			env->output = optarg;
			if (!optarg[0])
				parse_error(ps, "empty output file name");
			break;
		case OPT_ARENA:
			env->seen |= CLI_O_ARENA;
			if (cli_parse_uint(optarg, INT_MAX, &ul))
				parse_error(ps, "invalid arena '%s' (expected a number >= 0)",
					    optarg);
			else
				env->arena = (int)ul;
			break;
		case OPT_BASE:
			env->seen |= CLI_O_BASE;
			env->base = optarg;
			break;
		case OPT_FORMAT:
			env->seen |= CLI_O_FORMAT;
			env->format = optarg;
			break;
		case OPT_SYSROOT:
			env->seen |= CLI_O_REPORT;
			env->sysroot = optarg;
			break;
		case OPT_SVG:
		case OPT_FOLDED:
			env->seen |= CLI_O_RENDER;
			*(c == OPT_SVG ? &env->svg : &env->folded) = optarg;
			if (!optarg[0])
				parse_error(ps, "empty output file name");
			break;
		case OPT_TOP:
			env->seen |= CLI_O_REPORT;
			if (cli_parse_uint(optarg, 1000000, &env->top))
				parse_error(ps, "invalid --top '%s' (expected a number)", optarg);
			break;
		case OPT_FOR:
			env->seen |= CLI_O_FOR;
			if (cli_parse_duration(optarg, &env->for_ms))
				parse_error(ps, "invalid --for '%s' (expected seconds, e.g. 30, "
					    "1.5, 500ms or 2m)", optarg);
			break;
		case OPT_WARM_UP: {
			unsigned int ms = 0;

			env->seen |= CLI_O_FOR;
			if (strcmp(optarg, "0") && (cli_parse_duration(optarg, &ms) || ms > 3600000))
				parse_error(ps, "invalid --warm-up '%s' (expected seconds up to an "
					    "hour, e.g. 0, 2, 500ms or 1m)", optarg);
			env->warm_ms = (int)ms;
			break;
		}
		case OPT_OBJECTS:
		case OPT_SHRINK:
		case OPT_LINES:
		case OPT_NO_INLINE:
			env->seen |= CLI_O_REPORT;
			*(c == OPT_OBJECTS ? &env->objects : c == OPT_SHRINK ? &env->shrink :
			  c == OPT_LINES ? &env->lines : &env->no_inline) = true;
			break;
		case OPT_DEBUG_FILE:
			env->seen |= CLI_O_DEBUGFILE;
			if (env->topts.debug_file)
				parse_error(ps, "--debug-file given twice ('%s', then '%s'): give one",
					    env->topts.debug_file, optarg);
			else if (!optarg[0])
				parse_error(ps, "empty --debug-file");
			env->topts.debug_file = optarg;
			break;
		case OPT_SAMPLER:
			env->seen |= CLI_O_SAMPLER;
			if (!strcmp(optarg, "auto"))
				env->topts.sampler = HC_SAMPLER_AUTO;
			else if (!strcmp(optarg, "native"))
				env->topts.sampler = HC_SAMPLER_NATIVE;
			else if (!strcmp(optarg, "inject"))
				env->topts.sampler = HC_SAMPLER_INJECT;
			else
				parse_error(ps, "invalid --sampler '%s' (expected auto, native or inject)",
					    optarg);
			break;
		case OPT_SAMPLE_BYTES:
			env->seen |= CLI_O_SAMPLER;
			if (cli_parse_size(optarg, &env->topts.sample_bytes) ||
			    env->topts.sample_bytes < 64 || env->topts.sample_bytes > (1ull << 40))
				parse_error(ps, "invalid --sample-bytes '%s' (expected a size from 64 to "
					    "1T, e.g. 512K)", optarg);
			break;
		case OPT_PROBE:
			env->seen |= CLI_O_PROBE;
			env->probe = true;
			break;
		case OPT_EVERY:
			env->seen |= CLI_O_WATCH;
			if (cli_parse_duration(optarg, &env->every_ms) || !env->every_ms)
				parse_error(ps, "invalid --every '%s' (expected a time, e.g. 10, "
					    "1.5, 500ms or 2m)", optarg);
			break;
		case OPT_COUNT:
			env->seen |= CLI_O_WATCH;
			if (cli_parse_uint(optarg, 1000000000, &ul) || !ul)
				parse_error(ps, "invalid --count '%s' (expected a number of samples)",
					    optarg);
			env->count = ul;
			break;
		case OPT_TEXTFILE:
			env->seen |= CLI_O_WATCH;
			if (!optarg[0])
				parse_error(ps, "empty --textfile");
			env->textfile = optarg;
			break;
		case OPT_GROWTH:
			env->seen |= CLI_O_WATCH;
			if (cli_parse_size(optarg, &env->growth))
				parse_error(ps, "invalid --dump-on-growth '%s' (expected a size, e.g. "
					    "64MiB or 1G)", optarg);
			break;
		case OPT_DIR:
			env->seen |= CLI_O_WATCH;
			if (!optarg[0])
				parse_error(ps, "empty --dir");
			env->dir = optarg;
			break;
		case OPT_LISTEN:
			env->seen |= CLI_O_SERVE;
			if (!optarg[0])
				parse_error(ps, "empty --listen");
			env->listen = optarg;
			break;
		case OPT_SELECT:
		case OPT_PROFILE: {
			const char **v = c == OPT_SELECT ? env->select : env->profile;
			int *n = c == OPT_SELECT ? &env->nselect : &env->nprofile;

			env->seen |= CLI_O_SERVE;
			if (!optarg[0])
				parse_error(ps, "empty %s", c == OPT_SELECT ? "--select" : "--profile");
			else if (*n == CLI_SERVE_MAX_SEL)
				parse_error(ps, "more than %d %s", CLI_SERVE_MAX_SEL,
					    c == OPT_SELECT ? "--select" : "--profile");
			else
				v[(*n)++] = optarg;
			break;
		}
		case OPT_MIN_INTERVAL:
			env->seen |= CLI_O_SERVE;
			if (cli_parse_duration(optarg, &env->min_interval_ms) ||
			    env->min_interval_ms < 100 || env->min_interval_ms > 86400000)
				parse_error(ps, "invalid --min-interval '%s' (expected seconds from 0.1 "
					    "to a day, e.g. 10, 1.5 or 1m)", optarg);
			break;
		case OPT_TOKEN_FILE:
			env->seen |= CLI_O_SERVE;
			if (!optarg[0])
				parse_error(ps, "empty --token-file");
			env->token_file = optarg;
			break;
		case OPT_ALLOW_CONTROL:
			env->seen |= CLI_O_SERVE;
			env->allow_control = true;
			break;
		case ':':
			parse_error(ps, "option '%s' needs a value", ov[optind - 1]);
			break;
		default:
			if (optopt > 0 && optopt < 256) {
				char s[3] = { '-', (char)optopt, '\0' };

				parse_error(ps, "unknown option '%s'", s);
			} else {
				bad_long(ps, ov[optind - 1]);
			}
			break;
		}
		if (env->seen & ~seen)
			note_typed(ps, ov, li, c, env->seen & ~seen);
	}
}

/* Everything that needs the command: which options it takes, its words. */
static int check_env(struct cli_env *env, const struct parse_state *ps)
{
	const struct cli_cmd *c = env->cmd;
	unsigned int bad = env->seen & ~(c->opts | (c->opts & CLI_O_PIDOPT ? CLI_O_PID : 0));

	if (bad) {
		/* The first option given that the command does not take, as typed. */
		const char *name = NULL;
		unsigned int b;

		for (b = 0; b < 32 && !name; b++)
			if ((bad & (1u << b)) && ps->typed[b][0])
				name = ps->typed[b];
		return cli_usage(env, "option '%s' does not apply to '%s'", name ? name : "?",
				 c->name);
	}
	if (env->nargs < c->min_args)
		return cli_usage(env, "missing argument (usage: %s)", c->usage);
	if (env->nargs > c->max_args)
		return cli_usage(env, "unexpected argument '%s' (usage: %s)",
				 env->args[c->max_args], c->usage);
	if ((c->opts & CLI_O_PID) && !(env->seen & CLI_O_PID))
		return cli_usage(env, "missing -p PID (usage: %s)", c->usage);
	if (env->json && env->full)
		return cli_usage(env, "--json and %s are mutually exclusive",
				 ps->typed[__builtin_ctz(CLI_O_FULL)]);
	if (env->stats_opts && !env->full)
		return cli_usage(env, "--opts only applies with --full");
	if (!env->growth != !env->dir)
		return cli_usage(env, "--dump-on-growth SIZE and --dir DIR go together");
	if (c->fn == cmd_stats && env->format) {
		if (strcmp(env->format, "prometheus"))
			return cli_usage(env, "stats --format takes 'prometheus' (not '%s')",
					 env->format);
		if (env->json || env->full)
			return cli_usage(env, "--format prometheus and %s ask for two formats",
					 env->json ? "--json" : "--full");
	}
	/* --json is the one switch for JSON everywhere; report's is a --format. */
	if (env->json && c->fn == cmd_report) {
		if (env->format && hc_report_format_parse(env->format) != HC_FMT_JSON)
			return cli_usage(env, "--json and --format %s ask for two formats",
					 env->format);
		env->format = "json";
	}
	/* --json's summary is stdout: what -o names goes to a file (report's -o is its JSON) */
	if (env->json && (c->opts & CLI_O_OUTPUT) && c->fn != cmd_report &&
	    cli_out_is_stdout(env->output))
		return cli_usage(env, "%s --json prints its summary on stdout; give -o a file name",
				 c->name);
	if (!(env->seen & CLI_O_TIMEOUT))
		env->topts.timeout_ms = c->fn == cmd_list ? CLI_LIST_TIMEOUT_MS : CLI_TIMEOUT_MS;
	return cli_resolve_pid(env);
}

/*
 * A write error on stdout is reported once, at the end.  EPIPE is not an
 * error worth a message: "heapctl stats --full | head" is normal use.
 */
static int finish(int rc)
{
	int err;

	cli_flush();
	err = cli_stdout_errno();
	if (err && err != EPIPE) {
		fprintf(stderr, "heapctl: error: writing output: %s\n", strerror(err));
		return rc ? rc : CLI_EXIT_FAIL;
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct parse_state ps;
	struct cli_env env;
	char **ov, **pv;
	int on = 0, pn = 0, rc;

	/*
	 * A reader that goes away ("| head") must not kill heapctl while it has
	 * a thread of the target borrowed; writes fail with EPIPE instead.
	 */
	signal(SIGPIPE, SIG_IGN);
	/*
	 * An ignored SIGCHLD survives exec: heapctl's children would be reaped
	 * unseen and no SIGCHLD would come for the worker's exit (the front
	 * would wait for ever) or a traced thread's stop.  Its default reaps
	 * nothing and lets a blocked SIGCHLD wait to be taken.
	 */
	signal(SIGCHLD, SIG_DFL);

	memset(&env, 0, sizeof(env));
	memset(&ps, 0, sizeof(ps));
	env.arena = -1;
	env.warm_ms = -1;
	ov = calloc((size_t)argc + 1, sizeof(*ov));
	pv = calloc((size_t)argc + 1, sizeof(*pv));
	if (!ov || !pv) {
		fputs("heapctl: error: out of memory\n", stderr);
		free(ov);
		free(pv);
		return CLI_EXIT_FAIL;
	}
	split_args(argc, argv, ov, &on, pv, &pn, &ps);
	parse_opts(&env, on, ov, &ps);
	cli_log_init(env.verbose);

	if (pn) {
		env.cmd = cli_find_cmd(pv[0]);
		env.args = pv + 1;
		env.nargs = pn - 1;
	}
	if (ps.version) {
		printf("heapctl %s (git %s)\n", HC_VERSION, HC_GIT_REV);
		rc = finish(CLI_EXIT_OK);
	} else if (pn && !strcmp(pv[0], "help")) {
		/* "heapctl help [COMMAND]": the same text as --help, on stdout. */
		rc = CLI_EXIT_OK;
		if (pn > 2)
			rc = cli_usage(NULL, "unexpected argument '%s' (usage: heapctl help "
				       "[COMMAND])", pv[2]);
		else if (pn == 2 && strcmp(pv[1], "help") && !cli_find_cmd(pv[1]))
			rc = unknown_command(pv[1]);
		else if (pn == 2 && cli_find_cmd(pv[1]))
			cli_cmd_help(stdout, cli_find_cmd(pv[1]));
		else
			cli_main_help(stdout);
		if (rc == CLI_EXIT_OK)
			rc = finish(CLI_EXIT_OK);
	} else if (pn && !env.cmd) {
		rc = unknown_command(pv[0]);
	} else if (ps.help) {
		if (env.cmd)
			cli_cmd_help(stdout, env.cmd);
		else
			cli_main_help(stdout);
		rc = finish(CLI_EXIT_OK);
	} else if (ps.err[0] && ps.hint[0]) {
		char hint[256];

		rc = cli_usage_hint(cli_help_hint(env.cmd, ps.hint, hint, sizeof(hint)), "%s",
				    ps.err);
	} else if (ps.err[0]) {
		rc = cli_usage(&env, "%s", ps.err);
	} else if (!env.cmd) {
		rc = cli_usage(NULL, "no command given");
	} else {
		rc = check_env(&env, &ps);
		/* a command that may borrow a thread: see keeper.c */
		if (rc == CLI_EXIT_OK &&
		    ((env.cmd->opts & CLI_O_TID) || env.probe || env.cmd->fn == cmd_serve))
			cli_keeper();
		if (rc == CLI_EXIT_OK)
			rc = finish(env.cmd->fn(&env));
	}
	free(ov);
	free(pv);
	return rc;
}
