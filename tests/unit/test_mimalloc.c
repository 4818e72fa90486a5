// SPDX-License-Identifier: MIT
/*
 * Unit test: the mimalloc driver's pure parts.  Version numbers in words;
 * the option table against mimalloc 2.0.9's own mimalloc.h where the host
 * has it (libmimalloc-dev); names found with and without "mi_option_", the
 * deprecated and later names refused; any other version refused, naming
 * it and the environment variable; amounts read from the statistics text
 * mimalloc 2.0.9 printed (Debian's build, MI_STAT=0), row, column and unit.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <string.h>

#include <heapctl/heapctl.h>

#include "alloc_mimalloc.h"
#include "unit.h"

#if defined(__has_include)
#if __has_include(<mimalloc.h>)
#include <mimalloc.h>
#endif
#endif

static void versions(void)
{
	static const struct {
		int v;
		const char *s;
	} cases[] = { { 209, "2.0.9" }, { 212, "2.1.2" }, { 176, "1.7.6" }, { 300, "3.0.0" } };
	char buf[16];

	begin("mimalloc.version");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mi_version_str(cases[i].v, buf, sizeof(buf));
		CHECK(!strcmp(buf, cases[i].s), "%d is '%s', want %s", cases[i].v, buf, cases[i].s);
	}
	end();
}

static void options(void)
{
	static const struct {
		const char *name;
		int id; /* -1: refused */
	} cases[] = {
		{ "decommit_delay", 15 },
		{ "mi_option_decommit_delay", 15 },
		{ "MI_OPTION_EAGER_COMMIT", 3 },
		{ "Destroy_On_Exit", 25 },
		{ "show_errors", 0 },
		{ "purge_delay", -1 },           /* mimalloc 2.1's name */
		{ "deprecated_segment_cache", -1 }, /* does nothing in 2.0.9 */
		{ "reset_delay", -1 },           /* 1.x's name */
		{ "mi_option_", -1 },
		{ "", -1 },
	};

	begin("mimalloc.options");
	CHECK(mi_nopts == 22, "%zu options, 2.0.9 has 22 that are not deprecated", mi_nopts);
	for (size_t i = 0; i < mi_nopts; i++)
		for (size_t j = 0; j < i; j++)
			CHECK(mi_opts[i].id != mi_opts[j].id && strcmp(mi_opts[i].name, mi_opts[j].name),
			      "%s and %s are the same option", mi_opts[i].name, mi_opts[j].name);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct mi_opt *o = mi_opt_find(cases[i].name);

		CHECK(cases[i].id < 0 ? !o : o && o->id == cases[i].id, "'%s' found as %d, want %d",
		      cases[i].name, o ? o->id : -1, cases[i].id);
	}
#if defined(MI_MALLOC_VERSION) && MI_MALLOC_VERSION == 209
	/* each number as the header's enum has it */
#define ID(n) { #n, mi_option_##n }
	{
		static const struct {
			const char *name;
			int id;
		} hdr[] = {
			ID(show_errors), ID(show_stats), ID(verbose), ID(eager_commit),
			ID(large_os_pages), ID(reserve_huge_os_pages), ID(reserve_huge_os_pages_at),
			ID(reserve_os_memory), ID(page_reset), ID(abandoned_page_decommit),
			ID(eager_commit_delay), ID(decommit_delay), ID(use_numa_nodes),
			ID(limit_os_alloc), ID(os_tag), ID(max_errors), ID(max_warnings),
			ID(max_segment_reclaim), ID(allow_decommit), ID(segment_decommit_delay),
			ID(decommit_extend_delay), ID(destroy_on_exit),
		};

		CHECK(sizeof(hdr) / sizeof(hdr[0]) == mi_nopts, "the table and the header differ");
		for (size_t i = 0; i < sizeof(hdr) / sizeof(hdr[0]); i++) {
			const struct mi_opt *o = mi_opt_find(hdr[i].name);

			CHECK(o && o->id == hdr[i].id, "%s is %d in mimalloc.h, %d here", hdr[i].name,
			      hdr[i].id, o ? o->id : -1);
		}
	}
#undef ID
#else
	printf("# mimalloc.options: no mimalloc 2.0.9 <mimalloc.h> here, numbers not checked "
	       "against it\n");
#endif
	end();
}

static void version_guard(void)
{
	struct hc_err err = { 0 };

	begin("mimalloc.version_guard");
	CHECK(mi_opts_check(209, 42, "decommit_delay", &err) == 0 && err.code == HC_OK,
	      "2.0.9 refused: %s", err.msg);
	CHECK(mi_opts_check(212, 42, "decommit_delay", &err) == -1, "2.1.2 accepted");
	CHECK(err.code == HC_E_UNSUPPORTED, "code %s", hc_err_name(err.code));
	CHECK(strstr(err.msg, "2.1.2") && strstr(err.msg, "pid 42") && strstr(err.msg, "2.0.9"),
	      "message: %s", err.msg);
	CHECK(strstr(err.hint, "MIMALLOC_DECOMMIT_DELAY=VALUE"), "hint: %s", err.hint);
	memset(&err, 0, sizeof(err));
	CHECK(mi_opts_check(176, 42, NULL, &err) == -1 && strstr(err.hint, "MIMALLOC_NAME=VALUE") &&
		      strstr(err.msg, "1.7.6"),
	      "1.7.6 without a name: %s / %s", err.msg, err.hint);
	/* the first error wins */
	memset(&err, 0, sizeof(err));
	err.code = HC_E_PERM;
	snprintf(err.msg, sizeof(err.msg), "earlier");
	CHECK(mi_opts_check(212, 42, "verbose", &err) == -1 && err.code == HC_E_PERM &&
		      !strcmp(err.msg, "earlier"),
	      "an earlier error was overwritten");
	end();
}

/* What mi_stats_print_out() wrote in mimalloc 2.0.9 as Debian builds it. */
static const char text[] =
	"heap stats:    peak      total      freed    current       unit      count   \n"
	"  reserved:  288.0 MiB  288.0 MiB      0      288.0 MiB                        \n"
	" committed:  288.0 MiB  288.0 MiB   32.5 MiB  255.4 MiB                        \n"
	"     reset:      0          0          0          0                            ok\n"
	"   touched:  578.2 KiB  578.2 KiB  256.0 MiB -255.4 MiB                        ok\n"
	"  segments:      9          9          8          1                            "
	"not all freed!\n"
	"-abandoned:      0          0          0          0                            ok\n"
	" -extended:      0    \n"
	"     mmaps:      0    \n"
	"   threads:      0          0          0          0                            ok\n"
	"  searches:     0.0 avg\n"
	"numa nodes:       1\n"
	"   elapsed:       0.318 s\n"
	"   process: user: 0.024 s, system: 0.292 s, faults: 0, rss: 257.9 MiB, commit: 288.0 "
	"MiB\n";

static void amounts(void)
{
	static const struct {
		const char *row;
		int col;
		bool ok;
		uint64_t want;
	} cases[] = {
		{ "reserved", 3, true, 288ull << 20 },
		{ "reserved", 2, true, 0 }, /* a bare 0: no unit */
		{ "committed", 0, true, 288ull << 20 },
		{ "committed", 2, true, (uint64_t)(32.5 * 1048576) },
		{ "committed", 3, true, (uint64_t)(255.4 * 1048576) },
		{ "touched", 1, true, (uint64_t)(578.2 * 1024) },
		{ "touched", 3, false, 0 },  /* negative */
		{ "segments", 0, true, 9 },  /* a count */
		{ "reset", 3, true, 0 },
		{ "reserved", 4, false, 0 }, /* no fifth amount */
		{ "mmaps", 1, false, 0 },    /* the row ends first, the next one is not read */
		{ "abandoned", 0, false, 0 }, /* "-abandoned" is another label */
		{ "heap", 0, false, 0 },
		{ "total", 0, false, 0 },    /* no such row without MI_STAT */
	};

	begin("mimalloc.stats_amount");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		bool ok = mi_stats_amount(text, cases[i].row, cases[i].col, &v);

		CHECK(ok == cases[i].ok && (!ok || v == cases[i].want),
		      "%s column %d: %s %llu, want %s %llu", cases[i].row, cases[i].col,
		      ok ? "found" : "not found", (unsigned long long)v,
		      cases[i].ok ? "found" : "not found", (unsigned long long)cases[i].want);
	}
	CHECK(!mi_stats_amount("", "reserved", 0, &(uint64_t){ 0 }), "empty text");
	CHECK(!mi_stats_amount("  reserved:", "reserved", 0, &(uint64_t){ 0 }), "a label alone");
	end();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	versions();
	options();
	version_guard();
	amounts();
	return nfailed != 0;
}
