// SPDX-License-Identifier: MIT
/*
 * cmds.c: heapctl's commands as the user sees them: each one's help, its
 * options and examples, the table main.c dispatches on, and the help
 * pages printed from it.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define CLI_O_COMMON (CLI_O_TID | CLI_O_TIMEOUT | CLI_O_DEBUGFILE)

/*
 * Help texts, kept out of the table so they can be read as they print:
 * each ends with '\n', options are aligned on column 22, lines stay under 80.
 */
static const char list_help[] =
	"Walk /proc and show every process heapctl can drive: those that use\n"
	"jemalloc, tcmalloc, mimalloc, glibc malloc or musl's, with their user and RSS.\n"
	"Only /proc and the processes' ELF files are read: nothing is stopped or\n"
	"called.  PROF, the heap profiling state, needs a call into the process,\n"
	"so it shows '-' unless --probe is given ('n/a' where the allocator has\n"
	"no profiler of its own: glibc, tcmalloc_minimal, mimalloc, musl; 'heapctl\n"
	"prof on' loads heapctl's sampler there).\n"
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
	"allocation functions in every loaded library's GOT (in a static executable\n"
	"at their entries, every other thread stopped for the instant of the patch;\n"
	"in musl and static processes heapctl maps the sampler itself) and samples one\n"
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
	"and remove the process-side file; where heapctl's sampler profiles, read\n"
	"its tables from the process's memory instead (no file is made there).\n"
	"Allocations are sampled only while profiling is active ('heapctl prof\n"
	"on'); dumping while it is off warns.\n"
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
	"RSS before and after.  musl's malloc returns freed memory itself and has\n"
	"nothing to trim: purge calls nothing, says so and exits 0.\n";
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

static const char serve_help[] =
	"Serve the heap figures of every process heapctl can drive (or those\n"
	"--select picks) over HTTP, for Prometheus and pprof clients to pull:\n"
	"  /metrics                  Prometheus text: allocated, active, resident,\n"
	"                            dirty, mapped, retained (where the allocator\n"
	"                            has them), RSS, arenas, doctor's causes, the\n"
	"                            profiler's state, heapctl_up, the borrow pause,\n"
	"                            failures by error code\n"
	"  /debug/pprof/heap?pid=N   the heap profile, gzipped pprof laid out as Go's\n"
	"     or ?name=COMM          (add &seconds=N for the growth over N seconds);\n"
	"                            needs profiling on: --profile, or 'heapctl prof on'\n"
	"  /debug/pprof/allocs?...   the same, alloc_space its default sample type,\n"
	"                            as Go's (the path Parca and Alloy ask by default)\n"
	"  /                         an HTML index of the processes\n"
	"Each process lends a thread at most once per --min-interval, however\n"
	"often it is scraped; one that fails is left alone for longer each time.\n"
	"Requests are read-only (GET, HEAD): nothing over HTTP changes a process;\n"
	"--allow-control is accepted for deployments that name it, and no control\n"
	"page exists.  SIGTERM or SIGINT: profiling goes off where serve turned it\n"
	"on (heapctl's sampler taken out, its hooks removed), then serve exits 0.\n";
static const char serve_opts[] =
	"  --listen ADDR:PORT  where to listen (default 127.0.0.1:6061; [::1]:PORT);\n"
	"                      beyond loopback --token-file is required\n"
	"  --select SEL        only these processes: NAME (as ps -o comm shows it),\n"
	"                      uid=N or cgroup=SUBSTR; repeat for more (any matches)\n"
	"  --profile NAME|PID  keep heap profiling on in these processes (heapctl's\n"
	"                      sampler or the allocator's own profiler), in a\n"
	"                      restarted process of that name too; repeatable\n"
	"  --sample-bytes N    the sampler's mean bytes between samples (512K)\n"
	"  --min-interval SEC  borrow each process at most this often (default 10)\n"
	"  --token-file F      requests must carry 'Authorization: Bearer TOKEN',\n"
	"                      TOKEN the first line of F (16 bytes at least)\n"
	"  --allow-control     accepted; serve has no control page yet, so it\n"
	"                      changes nothing\n";
static const char serve_examples[] =
	"    heapctl serve\n"
	"    heapctl serve --select redis-server --profile redis-server\n"
	"    curl -s localhost:6061/metrics | grep heapctl_allocated_bytes\n"
	"    go tool pprof -top 'http://localhost:6061/debug/pprof/heap?name=redis-server'\n"
	"    heapctl serve --listen 0.0.0.0:6061 --token-file /etc/heapctl/token \\\n"
	"        --select cgroup=kubepods --min-interval 30\n";

#define CMD(n, o, lo, hi, use, sum, opts_text)                                              \
	{                                                                                   \
		.name = #n, .fn = cmd_##n, .opts = (o), .min_args = (lo), .max_args = (hi), \
		.usage = (use), .summary = (sum), .help = n##_help, .options = (opts_text), \
		.examples = n##_examples,                                                   \
	}

const struct cli_cmd cli_cmds[] = {
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
	CMD(serve, CLI_O_TIMEOUT | CLI_O_SERVE | CLI_O_SAMPLER, 0, 0,
	    "heapctl serve [--listen ADDR:PORT] [--select NAME|uid=N|cgroup=SUBSTR ...]\n"
	    "      [--profile NAME|PID ... [--sample-bytes N]] [--min-interval SEC]\n"
	    "      [--token-file F] [--allow-control]",
	    "serve /metrics and /debug/pprof/heap over HTTP for Prometheus, pprof", serve_opts),
};

const size_t cli_ncmds = sizeof(cli_cmds) / sizeof(cli_cmds[0]);

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

void cli_main_help(FILE *f)
{
	size_t i;

	fputs("Usage: heapctl [-v...] <command> [options]\n"
	      "\n"
	      "Drive the allocator of a running process from outside.  heapctl borrows one\n"
	      "thread at a safe point, makes it call the process's own allocator control\n"
	      "functions (jemalloc's mallctl, glibc malloc's mallinfo2/malloc_trim,\n"
	      "tcmalloc's MallocExtension and heap profiler, mimalloc's mi_collect and\n"
	      "mi_option_*), restores it bit for bit and detaches; other threads keep\n"
	      "running.  musl's malloc, which has no such functions, is named and\n"
	      "measured from /proc.  'list' (without --probe), 'maps' and 'report' stop\n"
	      "nothing.\n"
	      "\n"
	      "Commands:\n", f);
	for (i = 0; i < cli_ncmds; i++)
		fprintf(f, "  %-8s  %s\n", cli_cmds[i].name, cli_cmds[i].summary);
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

void cli_cmd_help(FILE *f, const struct cli_cmd *c)
{
	fprintf(f, "Usage: %s\n\n%s\nOptions:\n", c->usage, c->help);
	if ((c->opts & CLI_O_PID) && !(c->opts & CLI_O_PIDOPT))
		fputs("  -p, --pid PID|NAME  the target process, or its name as pidof finds it\n", f);
	if (c->options)
		fputs(c->options, f);
	print_common(f, c->opts, c->fn == cmd_list);
	fprintf(f, "\nEXAMPLES:\n%s", c->examples);
}

const struct cli_cmd *cli_find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < cli_ncmds; i++)
		if (!strcmp(cli_cmds[i].name, name))
			return &cli_cmds[i];
	return NULL;
}
