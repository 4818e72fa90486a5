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
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define CLI_O_COMMON (CLI_O_TID | CLI_O_TIMEOUT)

/*
 * Help texts, kept out of the table so they can be read as they print:
 * each ends with '\n', options are aligned on column 22, lines stay under 80.
 */
static const char list_help[] =
	"Walk /proc and show every process that uses jemalloc, with its heap\n"
	"profiling state.  PROF is 'active' (sampling now), 'enabled' (started\n"
	"with opt.prof, sampling paused), 'off' (started without opt.prof) or '?'\n"
	"(the process could not be asked; -v says why).  Each process listed\n"
	"lends one thread for a moment; --timeout is per process here (default\n"
	"2 s).\n";
static const char list_opts[] =
	"  --json              a JSON array instead of the table\n";
static const char list_examples[] =
	"    heapctl list\n"
	"    heapctl list --json | jq '.[] | select(.prof == \"enabled\") | .pid'\n";

static const char info_help[] =
	"Show the allocator and its version, the object and symbol table heapctl\n"
	"found it in, the addresses it calls, whether heap profiling is built in,\n"
	"enabled and active, and the allocator's key opt.* settings.\n";
static const char info_opts[] =
	"  --json              one JSON object (addresses as \"0x...\" strings)\n";
static const char info_examples[] =
	"    heapctl info -p 1234\n"
	"    heapctl info -p \"$(pidof -s redis-server)\" --json\n";

static const char prof_help[] =
	"'on' and 'off' flip prof.active, the switch that samples allocations.\n"
	"That needs a process started with profiling enabled (opt.prof); start it\n"
	"with MALLOC_CONF=prof:true,prof_active:false to have it at no cost until\n"
	"you turn it on.  'off' on a process without opt.prof does nothing and\n"
	"succeeds.  'status' shows both switches.\n";
static const char prof_opts[] =
	"  --json              {\"pid\":N,\"enabled\":BOOL,\"active\":BOOL}; on and\n"
	"                      off add \"previous_active\"\n";
static const char prof_examples[] =
	"    heapctl prof status -p 1234\n"
	"    heapctl prof on -p 1234 && sleep 60 && heapctl dump -p 1234\n"
	"    heapctl prof off -p 1234\n"
	"    heapctl prof status -p 1234 --json\n";

static const char dump_help[] =
	"Have the allocator write a heap profile inside the process, copy it here\n"
	"and remove the process-side file.  Allocations are sampled only while\n"
	"profiling is active ('heapctl prof on').  Read the file with jeprof.\n";
static const char dump_opts[] =
	"  -o, --output FILE   where to write it, - for stdout (default\n"
	"                      ./heapctl.PID.N.heap with the first N that does\n"
	"                      not exist yet)\n"
	"  --svg FILE          also write a flamegraph of it (see 'heapctl report')\n"
	"  --folded FILE       also write its folded stacks\n";
static const char dump_examples[] =
	"    heapctl dump -p 1234\n"
	"    heapctl dump -p 1234 -o /tmp/before.heap\n"
	"    heapctl dump -p 1234 --svg heap.svg\n"
	"    jeprof --text /usr/bin/redis-server heapctl.1234.0.heap\n";

static const char stats_help[] =
	"Summarise the process's heap: what the program holds (allocated), what\n"
	"backs it (active, metadata), what the allocator keeps for reuse (dirty,\n"
	"muzzy, retained) and the whole process RSS for comparison.\n";
static const char stats_opts[] =
	"  --json              one JSON object, sizes in bytes\n"
	"  --full              the allocator's own full report\n"
	"                      (malloc_stats_print)\n"
	"  --opts STR          malloc_stats_print options for --full: 'J' for\n"
	"                      JSON, 'a' to leave out arenas... (jemalloc(3))\n"
	"  --raw               glibc: malloc_info()'s XML as is (implies --full)\n";
static const char stats_examples[] =
	"    heapctl stats -p 1234\n"
	"    heapctl stats -p 1234 --json | jq .dirty\n"
	"    heapctl stats -p 1234 --full | less\n"
	"    heapctl stats -p 1234 --full --opts J > stats.json\n"
	"    heapctl stats -p 1234 --raw > malloc_info.xml     # glibc\n";

static const char purge_help[] =
	"Return dirty pages (freed by the program, still mapped by the allocator)\n"
	"to the operating system, in every arena or in one, and show dirty and\n"
	"RSS before and after.\n";
static const char purge_opts[] =
	"  --arena N           purge arena N only (default: all arenas)\n";
static const char purge_examples[] =
	"    heapctl purge -p 1234\n"
	"    heapctl purge -p 1234 --arena 0\n";

static const char get_help[] =
	"Read the allocator control NAME (jemalloc(3), MALLCTL NAMESPACE) and\n"
	"print its value, alone, on stdout.\n";
static const char get_examples[] =
	"    heapctl get -p 1234 version\n"
	"    heapctl get -p 1234 opt.narenas\n"
	"    heapctl get -p 1234 arena.0.dirty_decay_ms\n";

static const char set_help[] =
	"Write VALUE to the allocator control NAME and print 'NAME: OLD -> NEW'.\n"
	"VALUE is parsed as the control's type.  Leave it out for the controls\n"
	"that are actions and take nothing, such as arena.0.decay.  A negative\n"
	"VALUE such as -1 is read as the value, not as an option.\n";
static const char set_examples[] =
	"    heapctl set -p 1234 prof.active true\n"
	"    heapctl set -p 1234 arena.0.dirty_decay_ms -1\n"
	"    heapctl set -p 1234 arena.0.decay\n";

static const char report_help[] =
	"Turn a jemalloc heap profile (from 'heapctl dump' or prof.prefix dumps)\n"
	"into named code: folded stacks, an interactive SVG flamegraph, a gzipped\n"
	"pprof profile.proto or a jeprof-like text table.  Addresses are resolved\n"
	"in-process with libdw, against the objects listed in the profile itself;\n"
	"the allocator's own frames are dropped.  With --base, stacks are matched\n"
	"by name and the report shows what grew (--shrink: what shrank).\n";
static const char report_opts[] =
	"  --format F          folded, svg, pprof, text or json (default: from the\n"
	"                      -o suffix: .folded .svg .pb.gz .txt .json; else text)\n"
	"  -o, --output FILE   write there instead of stdout (- is stdout)\n"
	"  --base FILE         subtract this earlier profile: show growth\n"
	"  --shrink            with --base, folded/svg show what shrank instead\n"
	"  --objects           weigh by live objects instead of bytes\n"
	"  --top N             text: rows per table (default 25)\n"
	"  --lines             add file:line to frames\n"
	"  --no-inline         do not show inlined functions as frames\n"
	"  -p, --pid PID|NAME  also find files through /proc/PID (containers,\n"
	"                      binaries replaced since start)\n"
	"  --sysroot DIR       look for files and debug files under DIR first\n";
static const char report_examples[] =
	"    heapctl report heapctl.1234.0.heap\n"
	"    heapctl report later.heap --base before.heap -o growth.svg\n"
	"    heapctl report x.heap --format folded | flamegraph.pl > x.svg\n"
	"    heapctl report x.heap -o x.pb.gz && pprof -top x.pb.gz\n"
	"    heapctl report x.heap -p 1234 --lines --top 10\n";

static const char leak_help[] =
	"Find what is growing in a live process, with no restart: make sure heap\n"
	"profiling is active, take two profiles SEC seconds apart, subtract them,\n"
	"print the top growing functions and stacks, and write a flamegraph of\n"
	"the growth.  prof.active is put back as it was found.  Ctrl-C during the\n"
	"wait ends it early and reports what grew so far.  The process must\n"
	"run with opt.prof (MALLOC_CONF=prof:true,prof_active:false costs\n"
	"nothing until then).\n";
static const char leak_opts[] =
	"  --for SEC           time between the two profiles (default 30; 1.5,\n"
	"                      500ms, 2m accepted)\n"
	"  -o, --output FILE   flamegraph of the growth (default\n"
	"                      ./heapctl-leak.PID.svg; - for stdout); .folded\n"
	"                      .pb.gz .txt .json suffixes pick that format\n"
	"  --objects           weigh by objects instead of bytes\n"
	"  --top N             rows in the printed tables (default 10)\n"
	"  --lines             add file:line to frames\n";
static const char leak_examples[] =
	"    heapctl leak -p 1234\n"
	"    heapctl leak -p 1234 --for 2m -o leak.svg\n"
	"    heapctl leak -p \"$(pidof -s myservice)\" --for 10 -o leak.pb.gz\n";

static const char maps_help[] =
	"Show where the process's resident memory is, read from /proc/PID/smaps\n"
	"with nothing injected and nothing stopped: the main [heap], glibc's thread\n"
	"arenas (64 MiB-aligned reservations, counted, resident against reserved),\n"
	"thread stacks, allocator mappings named with PR_SET_VMA_ANON_NAME,\n"
	"file-backed code and data, and other anonymous memory (jemalloc's extents\n"
	"and tcmalloc's spans land there).  The categories add up to the RSS; a\n"
	"last line says what the biggest one means.\n";
static const char maps_opts[] =
	"  --json              one JSON object, sizes in bytes\n";
static const char maps_examples[] =
	"    heapctl maps -p 1234\n"
	"    heapctl maps -p \"$(pidof -s mysqld)\" --json | jq .glibc_arenas\n";

#define CMD(n, o, lo, hi, use, sum, opts_text)                                              \
	{                                                                                   \
		.name = #n, .fn = cmd_##n, .opts = (o), .min_args = (lo), .max_args = (hi), \
		.usage = (use), .summary = (sum), .help = n##_help, .options = (opts_text), \
		.examples = n##_examples,                                                   \
	}

static const struct cli_cmd cmds[] = {
	CMD(list, CLI_O_TIMEOUT | CLI_O_JSON, 0, 0, "heapctl list [--json]",
	    "processes heapctl can drive: pid, name, allocator, profiling", list_opts),
	CMD(info, CLI_O_COMMON | CLI_O_PID | CLI_O_JSON, 0, 0, "heapctl info -p PID [--json]",
	    "allocator, version, where it was found, key opt.* settings", info_opts),
	CMD(prof, CLI_O_COMMON | CLI_O_PID | CLI_O_JSON, 1, 1,
	    "heapctl prof on|off|status -p PID [--json]",
	    "turn heap profiling on or off, or show its state", prof_opts),
	CMD(dump, CLI_O_COMMON | CLI_O_PID | CLI_O_OUTPUT | CLI_O_RENDER | CLI_O_REPORT, 0, 0,
	    "heapctl dump -p PID [-o FILE] [--svg FILE] [--folded FILE]",
	    "write a heap profile (needs profiling, see 'heapctl prof')", dump_opts),
	CMD(stats, CLI_O_COMMON | CLI_O_PID | CLI_O_JSON | CLI_O_FULL | CLI_O_OPTS, 0, 0,
	    "heapctl stats -p PID [--json | --full [--opts STR]]",
	    "where the heap memory is: live, allocator overhead, dirty, RSS", stats_opts),
	CMD(purge, CLI_O_COMMON | CLI_O_PID | CLI_O_ARENA, 0, 0, "heapctl purge -p PID [--arena N]",
	    "return dirty pages to the OS and show what it saved", purge_opts),
	CMD(get, CLI_O_COMMON | CLI_O_PID, 1, 1, "heapctl get -p PID NAME",
	    "read one allocator control (mallctl name)", NULL),
	CMD(set, CLI_O_COMMON | CLI_O_PID, 1, 2, "heapctl set -p PID NAME [VALUE]",
	    "write one allocator control, or trigger a void one", NULL),
	CMD(report, CLI_O_PIDOPT | CLI_O_OUTPUT | CLI_O_BASE | CLI_O_REPORT, 1, 1,
	    "heapctl report FILE [--base FILE] [--format F] [-o OUT] [--objects] [-p PID]",
	    "name the code in a heap profile: folded, svg, pprof, text", report_opts),
	CMD(leak, CLI_O_COMMON | CLI_O_PID | CLI_O_OUTPUT | CLI_O_FOR | CLI_O_REPORT, 0, 0,
	    "heapctl leak -p PID [--for SEC] [-o FILE]",
	    "what grows: two profiles apart, diffed, top stacks and an SVG", leak_opts),
	CMD(maps, CLI_O_PID | CLI_O_JSON, 0, 0, "heapctl maps -p PID [--json]",
	    "where the RSS is: heap, glibc arenas, stacks, files (no injection)", maps_opts),
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

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
	OPT_OBJECTS,
	OPT_SHRINK,
	OPT_LINES,
	OPT_NO_INLINE,
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
	{ "objects", no_argument, NULL, OPT_OBJECTS },
	{ "shrink", no_argument, NULL, OPT_SHRINK },
	{ "lines", no_argument, NULL, OPT_LINES },
	{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
	{ NULL, 0, NULL, 0 },
};

static const struct {
	unsigned int bit;
	const char *name;
} opt_names[] = {
	{ CLI_O_PID, "-p/--pid" },	 { CLI_O_TID, "--tid" },
	{ CLI_O_TIMEOUT, "--timeout" },	 { CLI_O_JSON, "--json" },
	{ CLI_O_FULL, "--full" },	 { CLI_O_OPTS, "--opts" },
	{ CLI_O_OUTPUT, "-o/--output" }, { CLI_O_ARENA, "--arena" },
	{ CLI_O_BASE, "--base" },
	{ CLI_O_REPORT, "--format/--objects/--shrink/--top/--lines/--sysroot/--no-inline" },
	{ CLI_O_RENDER, "--svg/--folded" },	 { CLI_O_FOR, "--for" },
};

static void print_common(FILE *f, unsigned int allowed, bool per_process)
{
	fputs("\nCommon options (before or after the command):\n", f);
	if (allowed & CLI_O_TID)
		fputs("  --tid TID           borrow this thread (default: the first found at a\n"
		      "                      safe point, outside the allocator)\n", f);
	if (allowed & CLI_O_TIMEOUT)
		fprintf(f, "  --timeout SEC       give up after SEC seconds, fractions allowed\n"
			   "                      (default %s)\n", per_process ? "2 per process" : "30");
	fputs("  -v, -vv, -vvv       log steps, ptrace requests, register dumps (stderr)\n"
	      "  -h, --help          show help and exit\n"
	      "  --version           print the version and exit\n", f);
}

static void main_help(FILE *f)
{
	size_t i;

	fputs("Usage: heapctl [-v...] <command> [options]\n"
	      "\n"
	      "Drive the allocator of a running process from outside.  heapctl borrows one\n"
	      "thread at a safe point, makes it call the process's own jemalloc control\n"
	      "functions, restores it bit for bit and detaches; other threads keep running.\n"
	      "\n"
	      "Commands:\n", f);
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-8s  %s\n", cmds[i].name, cmds[i].summary);
	print_common(f, CLI_O_COMMON, false);
	fputs("\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n"
	      "Run 'heapctl COMMAND --help' for a command's options and examples.\n"
	      "\n"
	      "EXAMPLES:\n"
	      "    heapctl list\n"
	      "    heapctl stats -p 1234\n"
	      "    heapctl -v prof on -p 1234\n"
	      "    heapctl dump --help\n", f);
}

static void cmd_help(FILE *f, const struct cli_cmd *c)
{
	fprintf(f, "Usage: %s\n\n%s\nOptions:\n", c->usage, c->help);
	if ((c->opts & CLI_O_PID) && !(c->opts & CLI_O_PIDOPT))
		fputs("  -p, --pid PID|NAME  the target process, or its name as pidof finds it\n", f);
	if (c->options)
		fputs(c->options, f);
	print_common(f, c->opts, c->fn == cmd_list);
	fprintf(f, "\nEXAMPLES:\n%s", c->examples);
}

static const struct cli_cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
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

/* argv[1..] -> options with their values (ov, after ov[0]) and words (pv). */
static void split_args(int argc, char **argv, char **ov, int *on, char **pv, int *pn)
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
		ov[(*on)++] = argv[i];
		if (takes_next(argv[i]) && i + 1 < argc)
			ov[(*on)++] = argv[++i];
	}
	ov[*on] = NULL;
}

struct parse_state {
	bool help, version;
	char err[320]; /* the first problem found; parsing goes on for --help */
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

static void parse_opts(struct cli_env *env, int on, char **ov, struct parse_state *ps)
{
	unsigned long ul;
	char why[200];
	int c;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(on, ov, short_opts, long_opts, NULL)) != -1) {
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
			env->seen |= CLI_O_REPORT;
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
		case OPT_OBJECTS:
		case OPT_SHRINK:
		case OPT_LINES:
		case OPT_NO_INLINE:
			env->seen |= CLI_O_REPORT;
			*(c == OPT_OBJECTS ? &env->objects : c == OPT_SHRINK ? &env->shrink :
			  c == OPT_LINES ? &env->lines : &env->no_inline) = true;
			break;
		case ':':
			parse_error(ps, "option '%s' needs a value", ov[optind - 1]);
			break;
		default:
			if (optopt > 0 && optopt < 256) {
				char s[3] = { '-', (char)optopt, '\0' };

				parse_error(ps, "unknown option '%s'", s);
			} else {
				parse_error(ps, "unknown or ambiguous option '%s'", ov[optind - 1]);
			}
			break;
		}
	}
}

/* Everything that needs the command: which options it takes, its words. */
static int check_env(struct cli_env *env)
{
	const struct cli_cmd *c = env->cmd;
	unsigned int bad = env->seen & ~(c->opts | (c->opts & CLI_O_PIDOPT ? CLI_O_PID : 0));
	size_t i;

	for (i = 0; bad && i < sizeof(opt_names) / sizeof(opt_names[0]); i++)
		if (bad & opt_names[i].bit)
			return cli_usage(env, "option %s does not apply to '%s'",
					 opt_names[i].name, c->name);
	if (env->nargs < c->min_args)
		return cli_usage(env, "missing argument (usage: %s)", c->usage);
	if (env->nargs > c->max_args)
		return cli_usage(env, "unexpected argument '%s' (usage: %s)",
				 env->args[c->max_args], c->usage);
	if ((c->opts & CLI_O_PID) && !(env->seen & CLI_O_PID))
		return cli_usage(env, "missing -p PID (usage: %s)", c->usage);
	if (env->json && env->full)
		return cli_usage(env, "--json and --full are mutually exclusive");
	if (env->stats_opts && !env->full)
		return cli_usage(env, "--opts only applies with --full");
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

	memset(&env, 0, sizeof(env));
	memset(&ps, 0, sizeof(ps));
	env.arena = -1;
	ov = calloc((size_t)argc + 1, sizeof(*ov));
	pv = calloc((size_t)argc + 1, sizeof(*pv));
	if (!ov || !pv) {
		fputs("heapctl: error: out of memory\n", stderr);
		free(ov);
		free(pv);
		return CLI_EXIT_FAIL;
	}
	split_args(argc, argv, ov, &on, pv, &pn);
	parse_opts(&env, on, ov, &ps);
	cli_log_init(env.verbose);

	if (pn) {
		env.cmd = find_cmd(pv[0]);
		env.args = pv + 1;
		env.nargs = pn - 1;
	}
	if (ps.version) {
		printf("heapctl %s\n", HC_VERSION);
		rc = finish(CLI_EXIT_OK);
	} else if (pn && !env.cmd) {
		rc = cli_usage(NULL, "unknown command '%s'", pv[0]);
	} else if (ps.help) {
		if (env.cmd)
			cmd_help(stdout, env.cmd);
		else
			main_help(stdout);
		rc = finish(CLI_EXIT_OK);
	} else if (ps.err[0]) {
		rc = cli_usage(&env, "%s", ps.err);
	} else if (!env.cmd) {
		rc = cli_usage(NULL, "no command given");
	} else {
		rc = check_env(&env);
		if (rc == CLI_EXIT_OK)
			rc = finish(env.cmd->fn(&env));
	}
	free(ov);
	free(pv);
	return rc;
}
