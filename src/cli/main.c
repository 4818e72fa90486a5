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

#define CLI_O_COMMON (CLI_O_TID | CLI_O_TIMEOUT | CLI_O_DEBUGFILE)

/*
 * Help texts, kept out of the table so they can be read as they print:
 * each ends with '\n', options are aligned on column 22, lines stay under 80.
 */
static const char list_help[] =
	"Walk /proc and show every process heapctl can drive: those that use\n"
	"jemalloc, tcmalloc, mimalloc or glibc malloc, with their user and RSS.\n"
	"Only /proc and the processes' ELF files are read: nothing is stopped or\n"
	"called.  PROF, the heap profiling state, needs a call into the process,\n"
	"so it shows '-' unless --probe is given ('n/a' where there is no\n"
	"profiler: glibc, tcmalloc_minimal, mimalloc).\n"
	"With --probe, PROF is 'active' (sampling now), 'enabled' (started with\n"
	"profiling, sampling paused), 'off' (started without it) or '?' (the\n"
	"process could not be asked; -v says why), and each jemalloc or tcmalloc\n"
	"process lends one thread for a moment; --timeout is per process then\n"
	"(default 2 s).\n";
static const char list_opts[] =
	"  --probe             ask each process for its profiling state (PROF)\n"
	"  --json              a JSON array instead of the table\n";
static const char list_examples[] =
	"    heapctl list\n"
	"    heapctl list --probe\n"
	"    heapctl list --probe --json | jq '.[] | select(.prof == \"enabled\") | .pid'\n";

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
	"jemalloc: 'on' and 'off' flip prof.active, the switch that samples\n"
	"allocations, in a process started with profiling enabled (opt.prof).\n"
	"tcmalloc (the full libtcmalloc): 'on' and 'off' start and stop gperftools'\n"
	"heap profiler.  Where the allocator has no profiler that can run (glibc,\n"
	"tcmalloc_minimal, mimalloc, jemalloc without opt.prof), 'on' loads\n"
	"heapctl's own sampler into the process, with no restart: it hooks the\n"
	"allocation functions in every loaded library's GOT and samples one\n"
	"allocation per 512 KiB on average; allocations made before it starts\n"
	"are not seen.\n"
	"'off' stops sampling and keeps what was sampled, as jemalloc's\n"
	"prof.active does: heapctl's hooks stay to see its frees, so 'dump',\n"
	"'report -p' and 'leak' still read it, and a later 'on' at the same\n"
	"interval goes on with it.  'reset' forgets it (jemalloc's prof.reset);\n"
	"with heapctl's sampler off, it also puts every hook back (the sampler's\n"
	"code stays loaded, idle).\n"
	"Without a profiler, 'status' says so and 'off' does nothing; both succeed.\n";
static const char prof_opts[] =
	"  --sampler MODE      auto (default): the allocator's own profiler when it\n"
	"                      can run, else heapctl's; native; inject\n"
	"  --sample-bytes N    heapctl's sampler: mean bytes between samples\n"
	"                      (default 512K; K, M, G accepted); without it a\n"
	"                      sampler that sampled already keeps its own; a\n"
	"                      new interval starts a new profile\n"
	"  --json              {\"pid\":N,\"allocator\":S,\"available\":BOOL,\n"
	"                      \"enabled\":BOOL,\"active\":BOOL,\"profiler\":S,\n"
	"                      \"sampler\":{...}}; on and off add \"previous_active\"\n";
static const char prof_examples[] =
	"    heapctl prof status -p 1234\n"
	"    heapctl prof on -p 1234 && sleep 60 && heapctl dump -p 1234\n"
	"    heapctl prof off -p 1234 && heapctl dump -p 1234\n"
	"    heapctl prof reset -p 1234\n"
	"    heapctl prof status -p 1234 --json\n";

static const char dump_help[] =
	"Have the allocator write a heap profile inside the process, copy it here\n"
	"and remove the process-side file.  Allocations are sampled only while\n"
	"profiling is active ('heapctl prof on'); dumping while it is off warns.\n"
	"Read a jemalloc profile with jeprof, a tcmalloc one with pprof, either\n"
	"with 'heapctl report'.\n";
static const char dump_opts[] =
	"  -o, --output FILE   where to write it, - for stdout (default\n"
	"                      ./heapctl.PID.N.heap with the first N that does\n"
	"                      not exist yet)\n"
	"  --svg FILE          also write a flamegraph of it (see 'heapctl report')\n"
	"  --folded FILE       also write its folded stacks\n"
	"  --json              {\"pid\":N,\"path\":S,\"bytes\":N,\"allocator\":S,\n"
	"                      \"format\":\"jemalloc\"|\"gperftools\",\"active\":BOOL}\n";
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
	"                      (malloc_stats_print, mi_stats_print_out...)\n"
	"  --opts STR          malloc_stats_print options for --full: 'J' for\n"
	"                      JSON, 'a' to leave out arenas... (jemalloc(3))\n"
	"  --raw               glibc: malloc_info()'s XML as is (implies --full)\n"
	"  --format prometheus the figures in Prometheus' text format, labelled\n"
	"                      pid, comm and allocator\n";
static const char stats_examples[] =
	"    heapctl stats -p 1234\n"
	"    heapctl stats -p 1234 --json | jq .dirty\n"
	"    heapctl stats -p 1234 --full | less\n"
	"    heapctl stats -p 1234 --full --opts J > stats.json\n"
	"    heapctl stats -p 1234 --raw > malloc_info.xml     # glibc\n"
	"    heapctl stats -p 1234 --format prometheus\n";

static const char purge_help[] =
	"Return dirty pages (freed by the program, still mapped by the allocator)\n"
	"to the operating system, in every arena or in one, and show dirty and\n"
	"RSS before and after.\n";
static const char purge_opts[] =
	"  --arena N           purge arena N only (default: all arenas)\n"
	"  --json              one JSON object: before, after, released (bytes)\n";
static const char purge_examples[] =
	"    heapctl purge -p 1234\n"
	"    heapctl purge -p 1234 --arena 0\n"
	"    heapctl purge -p 1234 --json | jq .released\n";

static const char get_help[] =
	"Read the allocator control NAME (jemalloc(3), MALLCTL NAMESPACE; glibc's\n"
	"mallopt names such as M_ARENA_MAX; tcmalloc's numeric properties;\n"
	"mimalloc 2.0.9's options such as decommit_delay) and print its value,\n"
	"alone, on stdout; notes go to stderr.  stats.* names are current: the\n"
	"statistics are refreshed (epoch) in the same borrow.  A NAME ending in\n"
	"'.' or '_' (glibc: 'M_', mimalloc: 'mi_option_') lists every readable\n"
	"control under it as 'name value' lines, all read in one borrow; indexed\n"
	"names such as arenas.bin.<i> are expanded one index level beyond the\n"
	"prefix.\n";
static const char get_opts[] =
	"  --json              {\"name\":..,\"value\":..}; a PREFIX. gives an array\n"
	"                      of them\n";
static const char get_examples[] =
	"    heapctl get -p 1234 version\n"
	"    heapctl get -p 1234 stats.allocated\n"
	"    heapctl get -p 1234 arena.0.dirty_decay_ms\n"
	"    heapctl get -p 1234 opt.\n"
	"    heapctl get -p 1234 stats.arenas.0.bins.3.\n"
	"    heapctl get -p 1234 decommit_delay     # mimalloc\n";

static const char set_help[] =
	"Write VALUE to the allocator control NAME, read it back in the same\n"
	"borrow and print 'NAME: OLD -> NEW' with NEW as the allocator holds it.\n"
	"Numbers are plain decimal (a leading '-' only for signed types; no '+',\n"
	"blanks, leading zeros or 0x) within the type's range; a bool is\n"
	"true/false, 1/0, yes/no or on/off.  Write-only controls (prof.reset,\n"
	"prof.dump, tcache.flush) print 'NAME: -> NEW'.  Leave VALUE out for the\n"
	"controls that are actions, such as arena.0.decay ('NAME: done'), or that\n"
	"create something, such as arenas.create ('NAME: -> INDEX').  A negative\n"
	"VALUE such as -1 is read as the value, not as an option.\n";
static const char set_opts[] =
	"  --json              {\"name\":..,\"old\":..,\"new\":..} (null where there\n"
	"                      is no value)\n";
static const char set_examples[] =
	"    heapctl set -p 1234 prof.active true\n"
	"    heapctl set -p 1234 arena.0.dirty_decay_ms -1\n"
	"    heapctl set -p 1234 arena.0.decay\n"
	"    heapctl set -p 1234 prof.reset 19\n";

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
	"  --json              the same as --format json\n"
	"  -o, --output FILE   write there instead of stdout (- is stdout)\n"
	"  --base FILE         subtract this earlier profile: show growth\n"
	"  --shrink            with --base, folded/svg show what shrank instead\n"
	"  --objects           weigh by live objects instead of bytes\n"
	"  --top N             text: rows per table (default 25)\n"
	"  --lines             add file:line to frames\n"
	"  --no-inline         do not show inlined functions as frames\n"
	"  -p, --pid PID|NAME  find the profile's files through /proc/PID, in\n"
	"                      the process's root and with its rights, never\n"
	"                      on the host (containers, binaries replaced since\n"
	"                      start); a process that has exited is no error\n"
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
	"print the growth with the samples behind it and its 95% range, the top\n"
	"growing functions (each with its rate and range) and stacks, and write\n"
	"a flamegraph of the growth.  Profiling is put back as it was found.\n"
	"Ctrl-C during the wait ends it early and reports what grew so far.\n"
	"Where the allocator cannot profile, heapctl's sampler is loaded for it\n"
	"(see 'heapctl help prof'): leak measures for 0.5 s how fast the process\n"
	"allocates and picks the interval that gives the window about 65,536\n"
	"samples.  Where leak turned profiling on, it warms up before the first\n"
	"profile, so that the steady live set is sampled and its turnover is not\n"
	"taken for growth; only allocations made from then on are seen.\n";
static const char leak_opts[] =
	"  --sampler MODE      auto, native or inject (see 'heapctl help prof')\n"
	"  --sample-bytes N    heapctl's sampler: mean bytes between samples\n"
	"  --for SEC           time between the two profiles (default 30; 1.5,\n"
	"                      500ms, 2m accepted)\n"
	"  --warm-up SEC       where leak turns profiling on, the wait before the\n"
	"                      first profile (default a fifth of --for, 1 to 10 s;\n"
	"                      0 skips it)\n"
	"  -o, --output FILE   flamegraph of the growth (default\n"
	"                      ./heapctl-leak.PID.svg; - for stdout); .folded\n"
	"                      .pb.gz .txt .json suffixes pick that format\n"
	"  --objects           weigh by objects instead of bytes\n"
	"  --top N             rows in the printed tables (default 10)\n"
	"  --lines             add file:line to frames\n"
	"  --json              the summary as one JSON object on stdout (the\n"
	"                      -o file is still written)\n";
static const char leak_examples[] =
	"    heapctl leak -p 1234\n"
	"    heapctl leak -p 1234 --for 2m -o leak.svg\n"
	"    heapctl leak -p \"$(pidof -s myservice)\" --for 10 -o leak.pb.gz\n"
	"    heapctl leak -p 1234 --for 1m --json | jq '.functions[0]'\n";

static const char watch_help[] =
	"Sample the process's heap figures every interval, one borrow each, and\n"
	"print a line per sample: allocated, active, dirty and RSS with their\n"
	"rates of change since the previous one.  Runs until --count samples or\n"
	"Ctrl-C (SIGINT, SIGTERM: a clean stop, exit 0).\n";
static const char watch_opts[] =
	"  --every DUR         time between samples (default 10s; 1.5, 500ms, 2m)\n"
	"  --count N           stop after N samples (default: until stopped)\n"
	"  --json              one JSON object per line: the keys of 'stats --json',\n"
	"                      \"time\" (seconds since the epoch) and \"rates\"\n"
	"                      (bytes per second since the previous line)\n"
	"  --textfile DIR      also write DIR/heapctl_PID.prom (Prometheus text\n"
	"                      format, replaced atomically each sample) for the\n"
	"                      node exporter's textfile collector\n"
	"  --dump-on-growth SIZE\n"
	"                      write a heap profile at the first sample, then each\n"
	"                      time allocated has grown by SIZE (64MiB, 1G...)\n"
	"                      since the last one: jemalloc's lg_prof_interval\n"
	"                      without a restart; needs profiling on ('heapctl\n"
	"                      prof on'); diff two with 'heapctl report B --base A'\n"
	"  --dir DIR           where those go: DIR/heapctl.PID.N.heap\n";
static const char watch_examples[] =
	"    heapctl watch -p 1234\n"
	"    heapctl watch -p 1234 --every 1s --count 60 --json > heap.jsonl\n"
	"    heapctl watch -p 1234 --dump-on-growth 64MiB --dir /var/tmp/heaps\n"
	"    heapctl watch -p \"$(pidof -s mysqld)\" --every 30s \\\n"
	"        --textfile /var/lib/prometheus/node-exporter\n";

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

static const char doctor_help[] =
	"Explain the process's RSS: the live allocations, then the rest cause by\n"
	"cause, largest first, each with its size, what it means and the command or\n"
	"setting that addresses it (dirty and muzzy pages, fragmentation, glibc's\n"
	"trimmable free pages and arenas, metadata, thread caches, stacks, shared\n"
	"memory, files, other anonymous memory; retained address space apart, as it\n"
	"is not RSS), with Redis' ratios.  One borrow reads the allocator's figures;\n"
	"/proc/PID/smaps is read after.  Advice names 'heapctl purge' only for what\n"
	"a purge returns.\n";
static const char doctor_opts[] =
	"  --json              one JSON object: pid, allocator, rss, allocated,\n"
	"                      ratios, findings (cause, bytes, explanation, advice;\n"
	"                      largest first) and not_rss\n";
static const char doctor_examples[] =
	"    heapctl doctor -p 1234\n"
	"    heapctl doctor -p \"$(pidof -s mysqld)\" --json | jq '.findings[0]'\n";

#define CMD(n, o, lo, hi, use, sum, opts_text)                                              \
	{                                                                                   \
		.name = #n, .fn = cmd_##n, .opts = (o), .min_args = (lo), .max_args = (hi), \
		.usage = (use), .summary = (sum), .help = n##_help, .options = (opts_text), \
		.examples = n##_examples,                                                   \
	}

static const struct cli_cmd cmds[] = {
	CMD(list, CLI_O_TIMEOUT | CLI_O_JSON | CLI_O_PROBE, 0, 0, "heapctl list [--probe] [--json]",
	    "processes heapctl can drive: pid, user, RSS, allocator, profiling", list_opts),
	CMD(info, CLI_O_COMMON | CLI_O_PID | CLI_O_JSON, 0, 0, "heapctl info -p PID [--json]",
	    "allocator, version, where found and the evidence, key opt.* settings", info_opts),
	CMD(prof, CLI_O_COMMON | CLI_O_PID | CLI_O_JSON | CLI_O_SAMPLER, 1, 1,
	    "heapctl prof on|off|reset|status -p PID [--sampler MODE] [--sample-bytes N] [--json]",
	    "turn heap profiling on or off, forget its samples, or show its state", prof_opts),
	CMD(dump, CLI_O_COMMON | CLI_O_PID | CLI_O_OUTPUT | CLI_O_RENDER | CLI_O_REPORT | CLI_O_FORMAT | CLI_O_JSON,
	    0, 0, "heapctl dump -p PID [-o FILE] [--svg FILE] [--folded FILE] [--json]",
	    "write a heap profile (needs profiling, see 'heapctl prof')", dump_opts),
	CMD(stats, CLI_O_COMMON | CLI_O_PID | CLI_O_JSON | CLI_O_FULL | CLI_O_OPTS | CLI_O_FORMAT, 0, 0,
	    "heapctl stats -p PID [--json | --format prometheus | --full [--opts STR]]",
	    "where the heap memory is: live, allocator overhead, dirty, RSS", stats_opts),
	CMD(doctor, CLI_O_COMMON | CLI_O_PID | CLI_O_JSON, 0, 0, "heapctl doctor -p PID [--json]",
	    "why the RSS is what it is: causes, largest first, with advice", doctor_opts),
	CMD(purge, CLI_O_COMMON | CLI_O_PID | CLI_O_ARENA | CLI_O_JSON, 0, 0,
	    "heapctl purge -p PID [--arena N] [--json]",
	    "return dirty pages to the OS and show what it saved", purge_opts),
	CMD(get, CLI_O_COMMON | CLI_O_PID | CLI_O_JSON, 1, 1,
	    "heapctl get -p PID NAME|PREFIX. [--json]",
	    "read an allocator control (mallctl name), or all under a prefix", get_opts),
	CMD(set, CLI_O_COMMON | CLI_O_PID | CLI_O_JSON, 1, 2,
	    "heapctl set -p PID NAME [VALUE] [--json]",
	    "write one allocator control, or trigger a void one", set_opts),
	CMD(report, CLI_O_PIDOPT | CLI_O_OUTPUT | CLI_O_BASE | CLI_O_REPORT | CLI_O_FORMAT | CLI_O_JSON | CLI_O_DEBUGFILE,
	    1, 1,
	    "heapctl report FILE [--base FILE] [--format F | --json] [-o OUT] [-p PID]",
	    "name the code in a heap profile: folded, svg, pprof, text", report_opts),
	CMD(leak, CLI_O_COMMON | CLI_O_PID | CLI_O_OUTPUT | CLI_O_FOR | CLI_O_REPORT | CLI_O_FORMAT | CLI_O_JSON |
		  CLI_O_SAMPLER, 0,
	    0, "heapctl leak -p PID [--for SEC] [--warm-up SEC] [--sampler MODE] [-o FILE] [--json]",
	    "what grows: two profiles apart, diffed, top stacks and an SVG", leak_opts),
	CMD(maps, CLI_O_PID | CLI_O_JSON, 0, 0, "heapctl maps -p PID [--json]",
	    "where the RSS is: heap, glibc arenas, stacks, files (no injection)", maps_opts),
	CMD(watch, CLI_O_COMMON | CLI_O_PID | CLI_O_JSON | CLI_O_WATCH, 0, 0,
	    "heapctl watch -p PID [--every DUR] [--count N] [--json] [--textfile DIR] "
	    "[--dump-on-growth SIZE --dir DIR]",
	    "the heap figures over time, one borrow per sample; Prometheus files", watch_opts),
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
	{ NULL, 0, NULL, 0 },
};

static void print_common(FILE *f, unsigned int allowed, bool per_process)
{
	fputs("\nCommon options (before or after the command):\n", f);
	if (allowed & CLI_O_TID)
		fputs("  --tid TID           borrow this thread (default: the first found at a\n"
		      "                      safe point, outside the allocator)\n", f);
	if (allowed & CLI_O_TIMEOUT)
		fprintf(f, "  --timeout SEC       give up after SEC seconds, fractions allowed\n"
			   "                      (default %s); another heapctl working on the\n"
			   "                      process is waited for within it\n",
			per_process ? "2 per process" : "30");
	if (allowed & CLI_O_DEBUGFILE)
		fputs("  --debug-file FILE   the executable's symbols from FILE: its unstripped\n"
		      "                      build or debug file (the build-ids must match)\n", f);
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
	      "thread at a safe point, makes it call the process's own allocator control\n"
	      "functions (jemalloc's mallctl, glibc malloc's mallinfo2/malloc_trim,\n"
	      "tcmalloc's MallocExtension and heap profiler, mimalloc's mi_collect and\n"
	      "mi_option_*), restores it bit for bit and detaches; other threads keep\n"
	      "running.  'list' (without --probe), 'maps' and 'report' stop nothing.\n"
	      "\n"
	      "Commands:\n", f);
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-8s  %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "  %-8s  %s\n", "help", "help on a command: heapctl help COMMAND");
	print_common(f, CLI_O_COMMON, false);
	fputs("\n"
	      "Exit status: 0 success, 1 failure, 2 usage error.\n"
	      "--json gives one JSON value on stdout wherever a command prints a result.\n"
	      "Run 'heapctl help COMMAND' for a command's options and examples.\n"
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
	const char *names[NCMDS + 1];
	size_t i;

	for (i = 0; i < NCMDS; i++)
		names[i] = cmds[i].name;
	names[NCMDS] = "help";
	return suggest(word, strlen(word), names, NCMDS + 1);
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
		env.cmd = find_cmd(pv[0]);
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
		else if (pn == 2 && strcmp(pv[1], "help") && !find_cmd(pv[1]))
			rc = unknown_command(pv[1]);
		else if (pn == 2 && find_cmd(pv[1]))
			cmd_help(stdout, find_cmd(pv[1]));
		else
			main_help(stdout);
		if (rc == CLI_EXIT_OK)
			rc = finish(CLI_EXIT_OK);
	} else if (pn && !env.cmd) {
		rc = unknown_command(pv[0]);
	} else if (ps.help) {
		if (env.cmd)
			cmd_help(stdout, env.cmd);
		else
			main_help(stdout);
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
		if (rc == CLI_EXIT_OK && ((env.cmd->opts & CLI_O_TID) || env.probe) )
			cli_keeper();
		if (rc == CLI_EXIT_OK)
			rc = finish(env.cmd->fn(&env));
	}
	free(ov);
	free(pv);
	return rc;
}
