// SPDX-License-Identifier: MIT
/*
 * Unit test: heap profile parsing and un-biasing, the protobuf encoder,
 * demangling, symbolization of this very program through a profile it
 * writes about itself, and the folded/SVG/pprof/text writers.  Replays
 * tests/data/prof/ (the fuzz seed corpus) through the whole pipeline.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <heapctl/heapctl.h>
#include <heapctl/prof.h>

#include "prof_int.h"
#include "unit.h"

static bool near(double a, double b, double rel)
{
	double d = a > b ? a - b : b - a;

	return d <= rel * (a > b ? a : b) + 1e-9;
}

static struct hc_prof *parse(const char *text, struct hc_err *err)
{
	memset(err, 0, sizeof(*err));
	return hc_prof_parse(text, strlen(text), "t.heap", err);
}

/* Render r as fmt into a malloc'ed string. */
static char *render(struct hc_report *r, enum hc_report_format fmt, const struct hc_write_opts *w,
		    size_t *len)
{
	struct hc_err err = { 0 };
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		return NULL;
	if (hc_report_write(r, fmt, w, f, &err)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	if (len)
		*len = n;
	return buf;
}

/* The gzip stream gz, inflated into out; its length, 0 if it does not inflate whole. */
static size_t gunzip(const char *gz, size_t len, unsigned char *out, size_t cap)
{
	z_stream z;
	size_t n;

	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return 0;
	z.next_in = (unsigned char *)gz;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	n = inflate(&z, Z_FINISH) == Z_STREAM_END ? z.total_out : 0;
	inflateEnd(&z);
	return n;
}

static const char v2_text[] =
	"heap_v2/524288\n"
	"  t*: 3: 6144 [0: 0]\n"
	"  t0: 2: 4096 [0: 0] main thread\n"
	"  t1: 1: 2048 [0: 0]\n"
	"@ 0x1000 0x2000 0x3000\n"
	"  t*: 2: 4096 [0: 0]\n"
	"  t0: 2: 4096 [0: 0]\n"
	"@ 0x1000 0x2100\n"
	"  t*: 1: 2048 [0: 0]\n"
	"  t1: 1: 2048 [0: 0]\n"
	"\n"
	"MAPPED_LIBRARIES:\n"
	"555a7a10b000-555a7a10c000 r-xp 00001000 fe:00 5308791   /nonexistent/app (deleted)\n"
	"7fe0bdc00000-7fe0bdc09000 r--p 00000000 fe:00 14884866  /nonexistent/libx.so\n"
	"7fe0bdc09000-7fe0bdcaf000 r-xp 00009000 fe:00 14884866  /nonexistent/libx.so\n"
	"7fe0b8980000-7fe0b9000000 rw-p 00000000 00:00 0\n"
	"7ffd1c7d1000-7ffd1c7d3000 r-xp 00000000 00:00 0                          [vdso]\n";

static void parser(void)
{
	struct hc_prof_info info;
	struct hc_prof *p;
	struct hc_err err;
	double o, b;

	begin("prof.parse_v2");
	p = parse(v2_text, &err);
	CHECK(p != NULL, "parse failed: %s", err.msg);
	if (p) {
		hc_prof_info(p, &info);
		CHECK(info.period == 524288, "period %llu", (unsigned long long)info.period);
		CHECK(info.nstacks == 2, "nstacks %zu", info.nstacks);
		CHECK(info.nmaps == 3, "nmaps %zu (anon and [vdso] must be left out)", info.nmaps);
		CHECK(info.nthreads == 2, "nthreads %zu", info.nthreads);
		CHECK(info.has_maps && !info.truncated, "maps %d truncated %d", info.has_maps,
		      info.truncated);
		CHECK(p->threads[0].name && !strcmp(p->threads[0].name, "main thread"),
		      "thread name '%s'", p->threads[0].name ? p->threads[0].name : "(null)");
		CHECK(p->samples[0].naddrs == 3 && p->addrs[0] == 0x1000 && p->addrs[2] == 0x3000,
		      "first stack");
		CHECK(p->samples[1].raw_bytes == 2048 && p->samples[1].raw_objs == 1, "counts");
		CHECK(p->maps[0].deleted && !strcmp(p->maps[0].path, "/nonexistent/app"),
		      "deleted map");
		CHECK(prof_map_find(p, 0x555a7a10b123) == &p->maps[0], "map lookup");
		CHECK(prof_map_find(p, 0x555a7a10c000) == NULL, "map end is exclusive");
		/* jeprof: scale = 1 / (1 - exp(-(4096/2)/524288)) */
		prof_unbias(524288, 2, 4096, &o, &b);
		CHECK(near(b, 1050625.333333001, 1e-12), "unbias bytes %.6f", b);
		CHECK(near(p->samples[0].bytes, b, 1e-12) && near(p->samples[0].objs, o, 1e-12),
		      "sample un-biased");
	}
	hc_prof_free(p);
	end();

	begin("prof.unbias");
	/* Values from jeprof's AdjustSamples (perl, 1/(1-exp(-ratio))). */
	prof_unbias(524288, 4, 4096, &o, &b);
	CHECK(near(b, 2099200.666, 1e-9) && near(o, 2050.000651, 1e-8), "4x1KiB: %.3f %.6f", b, o);
	prof_unbias(524288, 1, 1u << 30, &o, &b);
	CHECK(near(b, (double)(1u << 30), 1e-12) && near(o, 1, 1e-12), "huge allocation %.1f", b);
	prof_unbias(4096, 1, 16, &o, &b);
	CHECK(near(b, 4104.0, 1e-3), "16 bytes at 4 KiB period: %.4f", b);
	prof_unbias(524288, 0, 100, &o, &b);
	CHECK(o == 0 && b == 100, "objects 0: left alone like jeprof");
	prof_unbias(524288, 5, 0, &o, &b);
	CHECK(o == 5 && b == 0, "bytes 0");
	CHECK(near(prof_expm1(1e-10), 1e-10, 1e-9), "expm1 tiny");
	CHECK(near(prof_expm1(-1), -0.63212055882855767, 1e-14), "expm1(-1) %.17g",
	      prof_expm1(-1));
	CHECK(near(prof_expm1(10), 22025.465794806718, 1e-14), "expm1(10)");
	CHECK(prof_expm1(-800) == -1.0, "expm1(-800)");
	CHECK(prof_round(2.5) == 3 && prof_round(-2.5) == -3 && prof_round(2.49) == 2, "round");
	end();

	begin("prof.parse_legacy");
	p = parse("heap profile: 2: 4096 [ 2: 4096] @ heap_v2/524288\n"
		  "2: 4096 [2: 4096] @ 0x4005d3 0x400612\n"
		  "\nMAPPED_LIBRARIES:\n",
		  &err);
	CHECK(p && p->nsamples == 1 && p->period == 524288, "legacy v2: %s", err.msg);
	if (p) {
		prof_unbias(524288, 2, 4096, &o, &b);
		CHECK(near(p->samples[0].bytes, b, 1e-12), "legacy un-bias");
	}
	hc_prof_free(p);
	p = parse("heap profile: 1: 100 [ 1: 100] @ heapprofile\n1: 100 [1: 100] @ 0x1\n"
		  "MAPPED_LIBRARIES:\n",
		  &err);
	CHECK(p && p->samples[0].bytes == 100, "heapprofile is exact");
	hc_prof_free(p);
	end();

	begin("prof.parse_errors");
	{
		static const struct {
			const char *text, *want;
		} bad[] = {
			{ "", "empty" },
			{ "hello\n", "not a jemalloc heap profile" },
			{ "heap_v2/0\n", "sample period 0" },
			{ "heap_v2/524288x\n", "unexpected text" },
			{ "heap_v2/524288\n  t*: 18446744073709551616: 1 [0: 0]\n", "too large" },
			{ "heap_v2/524288\n  t*: -1: 1 [0: 0]\n", "negative" },
			{ "heap_v2/524288\n@ 0x10 zz\n  t*: 1: 1 [0: 0]\n", "bad address" },
			{ "heap_v2/524288\n@ 0x10\n@ 0x20\n", "without a 't*:'" },
			{ "heap_v2/524288\n@ 0x10\n  t3: 1: 1 [0: 0]\n", "'t*:' line first" },
			{ "heap_v2/524288\n  t*: 1: 1 [0 0]\n", "expected ':'" },
			{ "heap_v2/524288\n  t*: 1: 1 0: 0]\n", "expected '['" },
			{ "heap_v2/524288\nbogus\n", "unexpected line" },
			{ "heap_v2/524288\n@ 0x12345678901234567\n  t*: 1: 1 [0: 0]\n", "bad address" },
		};
		size_t i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			p = parse(bad[i].text, &err);
			CHECK(!p && err.code == HC_E_FORMAT && strstr(err.msg, bad[i].want),
			      "case %zu: code %s msg '%s', want '%s'", i, hc_err_name(err.code),
			      err.msg, bad[i].want);
			CHECK(!p || err.hint[0], "case %zu: no hint", i);
			hc_prof_free(p);
		}
		memset(&err, 0, sizeof(err));
		p = hc_prof_parse("heap_v2/1\n\0x", 12, "bin", &err);
		CHECK(!p && strstr(err.msg, "binary"), "NUL byte: %s", err.msg);
		hc_prof_free(p);
	}
	end();

	begin("prof.parse_truncated");
	{
		/* Cut v2_text anywhere: never an error past the header, never a crash. */
		size_t len = strlen(v2_text), cut;

		for (cut = 15; cut < len; cut++) {
			memset(&err, 0, sizeof(err));
			p = hc_prof_parse(v2_text, cut, "cut", &err);
			CHECK(p != NULL, "cut at %zu: %s", cut, err.msg);
			/* A cut on a line boundary after MAPPED_LIBRARIES: is a whole file. */
			if (p && cut < len - 1 && !(p->has_maps && v2_text[cut - 1] == '\n'))
				CHECK(p->truncated, "cut at %zu not flagged truncated", cut);
			hc_prof_free(p);
		}
		p = parse("heap_v2/524288\n@ 0x1 0x2\n  t*: 1: 10 [0: 0]\n", &err);
		CHECK(p && !p->has_maps && p->truncated && p->nwarnings == 1,
		      "no MAPPED_LIBRARIES is a warning");
		hc_prof_free(p);
	}
	end();
}

static void pbenc(void)
{
	struct pbuf b = { 0 }, gz = { 0 };
	uint64_t v[3] = { 1, 300, (uint64_t)-1 };
	unsigned char out[256];

	begin("prof.pb_encoder");
	pb_varint(&b, 0);
	pb_varint(&b, 1);
	pb_varint(&b, 300);
	CHECK(b.len == 4 && !memcmp(b.p, "\x00\x01\xac\x02", 4), "varints");
	b.len = 0;
	pb_varint(&b, UINT64_MAX);
	CHECK(b.len == 10 && (unsigned char)b.p[9] == 0x01, "max varint: %zu bytes", b.len);
	b.len = 0;
	pb_int(&b, 2, -1);
	CHECK(b.len == 11 && b.p[0] == 0x10, "int64 -1 is 10-byte two's complement");
	b.len = 0;
	pb_uint(&b, 1, 0);
	CHECK(b.len == 0, "zero is default, not written");
	pb_str(&b, 6, "");
	CHECK(b.len == 2 && !memcmp(b.p, "\x32\x00", 2), "empty string still written");
	b.len = 0;
	pb_str(&b, 6, "ab");
	CHECK(b.len == 4 && !memcmp(b.p, "\x32\x02" "ab", 4), "string");
	b.len = 0;
	pb_packed(&b, 1, v, 3);
	CHECK(b.len == 2 + 1 + 2 + 10 && b.p[0] == 0x0a && b.p[1] == 13, "packed: %zu", b.len);
	b.len = 0;
	pb_key(&b, 100, 2);
	CHECK(b.len == 2 && !memcmp(b.p, "\xa2\x06", 2), "two-byte key");

	/* gzip round trip through zlib's own inflate. */
	CHECK(pb_gzip("hello hello hello", 17, &gz) == 0, "gzip");
	CHECK(gz.len > 18 && (unsigned char)gz.p[0] == 0x1f && (unsigned char)gz.p[1] == 0x8b,
	      "gzip magic");
	CHECK(gunzip(gz.p, gz.len, out, sizeof(out)) == 17 && !memcmp(out, "hello hello hello", 17),
	      "gunzip");
	pbuf_free(&b);
	pbuf_free(&gz);
	end();
}

/*
 * The allocator's frames the report drops: names from both former lists
 * (the report's own, the safe-point check's), now one in allocfn.c.
 */
static void alloc_frames(void)
{
	static const char *const alloc[] = {
		/* the report's list */
		"newImpl<false>", "operator new", "operator new[]", "_rjem_mallocx", "__rust_alloc",
		"__rg_alloc_zeroed", "tc_newarray", "DoSampledAllocation", "je_sdallocx_noflags",
		"__libc_calloc", "alloc::alloc::exchange_malloc",
		"tcmalloc::allocate_full_malloc_oom",
		/* the safe-point check's list */
		"mallctl", "malloc_usable_size", "mallinfo2", "sysmalloc", "arena_get2", "sallocx",
		"_rjem_malloc_stats_print", "_Znwm", "_ZdlPvm",
	};
	/* xmalloc: a program's own wrapper stays, unlike in the safe-point check. */
	static const char *const kept[] = {
		"main", "free_list", "callocate", "make_entry", "cache::put", "xmalloc",
	};
	size_t i;

	begin("prof.alloc_frames");
	for (i = 0; i < sizeof(alloc) / sizeof(alloc[0]); i++)
		CHECK(report_alloc_frame(alloc[i]), "%s kept", alloc[i]);
	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		CHECK(!report_alloc_frame(kept[i]), "%s dropped", kept[i]);
	CHECK(!report_alloc_frame(NULL), "a frame without a name dropped");
	end();
}

static void demangling(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "_ZN3foo3barEv", "foo::bar" },
		{ "_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back" },
		{ "_ZNK3Foo3getEv", "Foo::get" },
		{ "_ZN3FooclEi", "Foo::operator()" },
		{ "_Znwm", "operator new" },
		{ "_Z3bazv.cold", "baz" },
		{ "_ZN4core3ptr13drop_in_place17h0123456789abcdefE", "core::ptr::drop_in_place" },
		{ "_ZN49_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$Drop$GT$4drop17h0123456789abcdefE",
		  "<alloc::vec::Vec<T> as Drop>::drop" },
		{ "_RNvCs1234_7mycrate3foo", "mycrate::foo" },
		{ "_RNvNtCs1234_7mycrate3mod3bar", "mycrate::mod::bar" },
		{ "_RNCNvCs1234_7mycrate4main0B3_", "mycrate::main::{closure#0}" },
		{ "_RINvCs1234_7mycrate4sizeINtB2_3VecmEEB2_", "mycrate::size::<mycrate::Vec<u32>>" },
		{ "_RNvMNtCs1234_5alloc3vecINtB2_3VechE4push", "<alloc::vec::Vec<u8>>::push" },
		/* Const generics print their value by type (issue: "0x4", "0x1, 0x1, 0x61"). */
		{ "_RINvCs1234_7mycrate3arrAhj4_E", "mycrate::arr::<[u8; 4]>" },
		{ "_RINvCs1234_7mycrate3triKl1_Kb1_Kc61_E", "mycrate::tri::<1, true, 'a'>" },
		{ "_RINvCs1234_7mycrate3negKxn2a_Kan80_Kb0_E", "mycrate::neg::<-42, -128, false>" },
		{ "_RINvCs1234_7mycrate2chKca_Kc27_Kc5c_Kce9_E", "mycrate::ch::<'\\n', '\\'', '\\\\', '\\u{e9}'>" },
		{ "_RINvCs1234_7mycrate1pKpE", "mycrate::p::<_>" },
		{ "_RINvCs1234_7mycrate1fFG_KCRL0_hEuE", "mycrate::f::<for<'a> extern \"C\" fn(&'a u8)>" },
		{ "_RINvCs1234_7mycrate1fFK8C_unwindEuE", "mycrate::f::<extern \"C-unwind\" fn()>" },
		{ "_RINvCs1234_7mycrate1tThEE", "mycrate::t::<(u8,)>" },
		{ "_RNvCs1234_7mycrate3foo.llvm.1234", "mycrate::foo" },
		{ "_RNvNtC1au6wgv71au9gre_6ka8l", "a::\xe6\x97\xa5\xe6\x9c\xac::gr\xc3\xbc\xc3\x9f" "e" },
		{ "session_cache_leak.part.0", "session_cache_leak" },
	};
	/* Each must fall back to the raw name (NULL), never print a guess. */
	static const char *const malformed[] = {
		"_RB_",                                   /* self back-reference */
		"_RNvC99999999999999999999a1b",           /* length overflow */
		"_RINvCs1234_7mycrate3arrAhj4E",          /* const without its "_" */
		"_RINvCs1234_7mycrate3arrAhjg_E",         /* not a hex digit */
		"_RINvCs1234_7mycrate1bKb2_E",            /* bool 2 */
		"_RINvCs1234_7mycrate1bKbn1_E",           /* negative bool */
		"_RINvCs1234_7mycrate1uKjn1_E",           /* negative usize */
		"_RINvCs1234_7mycrate1iKln0_E",           /* negative zero */
		"_RINvCs1234_7mycrate1cKc110000_E",       /* past U+10FFFF */
		"_RINvCs1234_7mycrate1cKcd800_E",         /* a surrogate */
		"_RINvCs1234_7mycrate1fKf0_E",            /* f32 cannot be a const generic */
		"_RINvCs1234_7mycrate1oKo100000000000000000000000000000000_E", /* 129 bits */
		"_RINvCs1234_7mycrate1nKnn80000000000000000000000000000001_E", /* < i128::MIN */
		"_RNvCs1234_7mycrate3fooXYZ",             /* trailing garbage */
		"_RNvCs1234_7mycrate3fo",                 /* cut short */
		"_RINvCs1234_7mycrate3fooKj4_",           /* generic args never closed */
		"_R0NvCs1234_7mycrate3foo",               /* unknown encoding version */
		"_RNvNvCs1234_7mycrate0",                 /* a plain namespace with no name */
		"_RNvCs1234_7mycrate3foo_RNvC1a1b",       /* two names run together */
		"_RINvC1a1fRL1_hE",                       /* lifetime with no binder */
		"_RINvC1a1fDNtC1a1TE",                    /* dyn without its lifetime */
		"_RNvC1au2a_",                            /* punycode with nothing encoded */
		"_RNvC1au2aA",                            /* not a punycode digit */
		"_RNvC1au9zzzzzzzzz",                     /* past U+10FFFF */
		"_R",
	};
	size_t i;

	begin("prof.demangle");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = prof_demangle(cases[i].in);

		/* No case may go unchecked: a C++ name needs libstdc++ at run time. */
		CHECK(d && !strcmp(d, cases[i].want), "%s -> '%s', want '%s'", cases[i].in,
		      d ? d : "(null: not demangled)", cases[i].want);
		free(d);
	}
	CHECK(prof_demangle("main") == NULL, "plain C name");
	for (i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		char *d = prof_demangle(malformed[i]);

		CHECK(d == NULL, "malformed %s -> '%s', want the raw name", malformed[i], d);
		free(d);
	}
	CHECK(prof_demangle_rust_v0("_RNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNv"
				    "NvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNvNv"
				    "NvNvNvNvNvNvNvNvNvNvNvNvNvNvNvC1a1b") == NULL,
	      "deep nesting is bounded");
	{
		/* Each tuple holds the one before twice: 2^40 bytes if nothing bounded the output. */
		static const char digits[] =
			"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
		char big[1024] = "_RINvC1a1fThhE", ref[16];
		size_t prev = strlen("INvC1a1f"); /* offset of the first "T" after "_R" */
		unsigned k;
		char *d;

		for (k = 1; k < 40; k++) {
			size_t n = strlen(big), v = prev - 1, r = sizeof(ref) - 1;

			ref[r] = '\0';
			do {
				ref[--r] = digits[v % 62];
				v /= 62;
			} while (v);
			snprintf(big + n, sizeof(big) - n, "TB%s_B%s_E", ref + r, ref + r);
			prev = n - 2;
		}
		strcat(big, "E");
		d = prof_demangle_rust_v0(big);
		CHECK(!d || strlen(d) <= 64 * 1024, "back-reference blow-up gave %zu bytes", strlen(d));
		free(d);
	}
	end();
}

/* Read a "MANGLED\tEXPECTED[\tNOTE]" file; every non-comment line must be well-formed. */
struct dm_case {
	char *in, *want;
	bool oracle_wrong;
};

static size_t dm_load(const char *path, struct dm_case **out)
{
	struct dm_case *v = NULL;
	size_t n = 0, cap = 0, lineno = 0;
	char line[8192];
	FILE *f = fopen(path, "r");

	CHECK(f != NULL, "cannot open %s: %s", path, strerror(errno));
	while (f && fgets(line, sizeof(line), f)) {
		char *tab, *tab2;

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		tab = strchr(line, '\t');
		CHECK(tab && tab[1], "%s:%zu: not MANGLED<TAB>EXPECTED", path, lineno);
		if (!tab || !tab[1])
			continue;
		*tab = '\0';
		tab2 = strchr(tab + 1, '\t');
		if (tab2)
			*tab2 = '\0';
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				abort();
		}
		v[n].in = strdup(line);
		v[n].want = strdup(tab + 1);
		v[n].oracle_wrong = tab2 && !strcmp(tab2 + 1, "oracle-wrong");
		n++;
	}
	if (f)
		fclose(f);
	*out = v;
	return n;
}

static void dm_free(struct dm_case *v, size_t n)
{
	while (n--) {
		free(v[n].in);
		free(v[n].want);
	}
	free(v);
}

static const char *dm_corpus(void)
{
	return getenv("DEMANGLE_CORPUS") ? getenv("DEMANGLE_CORPUS")
					 : "tests/data/demangle/rust-v0.txt";
}

/*
 * Real rustc v0 names (tests/data/demangle/gen-rust-v0.sh): each decodes to
 * the expected text, and every prefix of it either decodes to the same text
 * (only the unprinted instantiating crate or suffix was cut) or not at all.
 */
static void demangle_corpus(void)
{
	struct dm_case *v;
	size_t n, i, nconst = 0;

	begin("prof.demangle_rust_v0_corpus");
	n = dm_load(dm_corpus(), &v);
	for (i = 0; i < n; i++) {
		char *d = prof_demangle(v[i].in);
		size_t len = strlen(v[i].in), k;

		CHECK(d && !strcmp(d, v[i].want), "%s -> '%s', want '%s'", v[i].in,
		      d ? d : "(null: not demangled)", v[i].want);
		nconst += strstr(v[i].in, "Kj") || strstr(v[i].in, "Kc") || strstr(v[i].in, "Kb");
		for (k = 2; d && k < len; k++) {
			char *cut = strndup(v[i].in, k), *p = prof_demangle_rust_v0(cut);

			CHECK(!p || !strcmp(p, d), "prefix %s -> '%s', want the raw name", cut, p);
			free(p);
			free(cut);
		}
		free(d);
	}
	CHECK(n >= 100 && nconst >= 10, "%s: only %zu names, %zu with const generics", dm_corpus(), n,
	      nconst);
	dm_free(v, n);
	end();
}

/* c++filt's Rust form, normalised to ours: "core[1a2b]" -> "core", "4: usize" -> "4". */
static void oracle_normalise(char *s)
{
	static const char *const types[] = { "i8",    "i16", "i32", "i64",  "i128", "isize", "u8",
					     "u16",   "u32", "u64", "u128", "usize", "bool",  "char" };
	char *r = s, *w = s;

	while (*r) {
		size_t k, t;

		if (*r == '[') {
			for (k = 1; (r[k] >= '0' && r[k] <= '9') || (r[k] >= 'a' && r[k] <= 'f'); k++)
				;
			if (k > 1 && k <= 17 && r[k] == ']') {
				r += k + 1;
				continue;
			}
		}
		if (r[0] == ':' && r[1] == ' ') {
			for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
				size_t l = strlen(types[t]);

				if (!strncmp(r + 2, types[t], l) && strchr(",>]", r[2 + l]) && r[2 + l])
					break;
			}
			if (t < sizeof(types) / sizeof(types[0])) {
				r += 2 + strlen(types[t]);
				continue;
			}
		}
		*w++ = *r++;
	}
	*w = '\0';
}

/* Run c++filt (FORMAT given) over names; the malloc'ed output lines, or NULL. */
static char **oracle_run(const char *format, char *const *names, size_t n)
{
	char tmpl[] = "/tmp/heapctl-dm-XXXXXX", cmd[256], line[16384];
	char **out;
	size_t i;
	FILE *f, *p;
	int fd = mkstemp(tmpl);

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	for (i = 0; f && i < n; i++)
		fprintf(f, "%s\n", names[i]);
	if (f)
		fclose(f);
	snprintf(cmd, sizeof(cmd), "c++filt %s <%s 2>/dev/null", format, tmpl);
	p = popen(cmd, "r");
	out = calloc(n + 1, sizeof(*out));
	for (i = 0; p && out && i < n && fgets(line, sizeof(line), p); i++) {
		line[strcspn(line, "\n")] = '\0';
		out[i] = strdup(line);
	}
	if (p && pclose(p) != 0)
		i = 0;
	unlink(tmpl);
	if (i != n) {
		while (out && i--)
			free(out[i]);
		free(out);
		return NULL;
	}
	return out;
}

static void oracle_free(char **v, size_t n)
{
	while (v && n--)
		free(v[n]);
	free(v);
}

/*
 * binutils' c++filt (libiberty, written apart from this code) as an
 * independent oracle: the Rust v0 corpus (except lines its 2.40 release
 * gets wrong, marked "oracle-wrong"), and C++ and Rust legacy names, where
 * c++filt's full form must be ours plus the parameter list (or a hash).
 */
static void demangle_oracle(void)
{
	static const char *const cxx[] = {
		"_ZN3foo3barEv",
		"_ZNSt6vectorIiSaIiEE9push_backERKi",
		"_ZNK3Foo3getEv",
		"_ZN3FooclEi",
		"_Znwm",
		"_Z3bazv.cold",
		"_ZN9__gnu_cxx13new_allocatorIcE8allocateEmPKv",
		"_ZNSt8_Rb_treeIiSt4pairIKiiESt10_Select1stIS2_ESt4lessIiESaIS2_EE8_M_eraseEPSt13_Rb_tree_nodeIS2_E",
		"_ZZN3foo3barEvENKUlvE_clEv",
		"_ZN4core3ptr13drop_in_place17h0123456789abcdefE",
		"_ZN49_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$Drop$GT$4drop17h0123456789abcdefE",
	};
	struct dm_case *v;
	char **names, **o;
	size_t n, i, checked = 0;

	begin("prof.demangle_oracle");
	if (system("c++filt --version >/dev/null 2>&1") != 0) {
		const char *ci = getenv("CI");

		if (ci && !strcmp(ci, "true")) {
			CHECK(0, "c++filt (binutils) is missing; make deps installs it");
			end();
		} else {
			printf("SKIP prof.demangle_oracle: c++filt (binutils) not installed\n");
		}
		return;
	}
	n = dm_load(dm_corpus(), &v);
	names = calloc(n + 1, sizeof(*names));
	for (i = 0; names && i < n; i++)
		names[i] = v[i].in;
	o = names ? oracle_run("-s rust", names, n) : NULL;
	CHECK(o != NULL, "c++filt -s rust failed on %s", dm_corpus());
	for (i = 0; o && i < n; i++) {
		if (v[i].oracle_wrong)
			continue;
		oracle_normalise(o[i]);
		CHECK(!strcmp(o[i], v[i].want), "c++filt: %s -> '%s', corpus says '%s'", v[i].in,
		      o[i], v[i].want);
		checked++;
	}
	oracle_free(o, n);
	free(names);
	dm_free(v, n);

	n = sizeof(cxx) / sizeof(cxx[0]);
	o = oracle_run("", (char *const *)cxx, n);
	CHECK(o != NULL, "c++filt failed");
	for (i = 0; o && i < n; i++) {
		char *d = prof_demangle(cxx[i]);
		size_t l = d ? strlen(d) : 0;
		const char *rest = o[i] + l;

		/* "f(int) const", "f() [clone .cold]", or Rust legacy's "f::h0123456789abcdef". */
		CHECK(d && !strncmp(o[i], d, l) &&
			      (!*rest || *rest == '(' || (!strncmp(rest, "::h", 3) && strlen(rest) == 19)),
		      "%s: ours '%s', c++filt '%s'", cxx[i], d ? d : "(null)", o[i]);
		free(d);
		checked++;
	}
	oracle_free(o, n);
	CHECK(checked >= 100, "only %zu names compared", checked);
	end();
}

/* ---- symbolizing this program ----------------------------------------- */

static __attribute__((noinline)) uint64_t grab(void)
{
	return (uint64_t)(uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0));
}

static inline __attribute__((always_inline)) uint64_t inlined_leaf(int x)
{
	uint64_t r = grab();

	/* Work after the call keeps it from being a tail call. */
	return r + (uint64_t)(x & 0);
}

static __attribute__((noinline)) uint64_t test_outer_fn(int x)
{
	uint64_t r = inlined_leaf(x);

	__asm__ volatile("" ::: "memory");
	return r;
}

static __attribute__((noinline)) uint64_t test_caller_fn(int x)
{
	uint64_t r = grab();

	/* Unlike test_outer_fn, so that -fipa-icf does not fold the two. */
	__asm__ volatile("" ::: "memory");
	return r + (uint64_t)(x * 0) + (uint64_t)(x > 7);
}

/* A profile naming addresses of this program, with this process's maps. */
static char *self_profile(uint64_t a_inl, uint64_t a_plain)
{
	struct pbuf b = { 0 };
	char line[4096];
	FILE *maps;

	pbuf_printf(&b, "heap_v2/524288\n  t*: 3: 12288 [0: 0]\n");
	/* Stack 1: leaf in the inlined function; stack 2: a plain caller. */
	pbuf_printf(&b, "@ 0x%llx\n  t*: 2: 8192 [0: 0]\n", (unsigned long long)a_inl);
	pbuf_printf(&b, "@ 0x%llx\n  t*: 1: 4096 [0: 0]\n", (unsigned long long)a_plain);
	pbuf_printf(&b, "@ 0x10\n  t*: 1: 4096 [0: 0]\n");
	pbuf_printf(&b, "\nMAPPED_LIBRARIES:\n");
	maps = fopen("/proc/self/maps", "r");
	while (maps && fgets(line, sizeof(line), maps))
		pbuf_puts(&b, line);
	if (maps)
		fclose(maps);
	return b.oom ? NULL : b.p;
}

static void symbolize_self(void)
{
	uint64_t a_inl = test_outer_fn(1), a_plain = test_caller_fn(1);
	struct hc_report_opts ro = { .lines = true };
	struct hc_write_opts wo = { 0 };
	struct hc_report *r = NULL;
	struct hc_prof *p = NULL;
	struct hc_err err = { 0 };
	char *text = self_profile(a_inl, a_plain), *out = NULL;
	size_t len = 0;

	begin("prof.symbolize_self");
	CHECK(text != NULL, "oom");
	if (text)
		p = hc_prof_parse(text, strlen(text), "self", &err);
	CHECK(p != NULL, "parse: %s", err.msg);
	if (p)
		r = hc_report_build(p, NULL, &ro, &err);
	CHECK(r != NULL, "build: %s", err.msg);
	if (r)
		out = render(r, HC_FMT_FOLDED, &wo, &len);
	CHECK(out != NULL, "render");
	if (out) {
		/* Root first: the inlined frame is the leaf, its caller above it, with lines. */
		CHECK(strstr(out, "test_outer_fn test_prof.c:") &&
			      strstr(out, ";inlined_leaf test_prof.c:"),
		      "inline chain missing in:\n%s", out);
		CHECK(strstr(out, "test_caller_fn test_prof.c:"), "plain frame missing in:\n%s", out);
		CHECK(!strncmp(out, "0x10 ", 5), "unmapped address not shown raw:\n%s", out);
	}
	free(out);
	hc_report_free(r);
	r = NULL;
	if (p) {
		ro.lines = false;
		ro.no_inline = true;
		r = hc_report_build(p, NULL, &ro, &err);
	}
	out = r ? render(r, HC_FMT_FOLDED, &wo, &len) : NULL;
	CHECK(out && strstr(out, "test_outer_fn ") && !strstr(out, "inlined_leaf"),
	      "--no-inline:\n%s", out ? out : "(null)");
	free(out);
	hc_report_free(r);
	hc_prof_free(p);
	free(text);
	end();
}

/* ---- writers ------------------------------------------------------------- */

static void writers(void)
{
	static const char a_text[] = "heap_v2/524288\n"
				     "@ 0x10 0x20\n  t*: 1: 600000 [0: 0]\n"
				     "@ 0x11 0x20\n  t*: 1: 700000 [0: 0]\n"
				     "\nMAPPED_LIBRARIES:\n";
	static const char b_text[] = "heap_v2/524288\n"
				     "@ 0x10 0x20\n  t*: 4: 2400000 [0: 0]\n"
				     "@ 0x30 0x20\n  t*: 1: 600000 [0: 0]\n"
				     "\nMAPPED_LIBRARIES:\n";
	struct hc_report_opts ro = { 0 };
	struct hc_write_opts wo = { 0 };
	struct hc_prof *a, *b;
	struct hc_report *r = NULL, *d = NULL;
	struct hc_err err;
	char *s;
	size_t len;
	double w1, o1;

	begin("prof.write_folded");
	a = parse(a_text, &err);
	b = parse(b_text, &err);
	CHECK(a && b, "parse");
	if (a && b) {
		r = hc_report_build(b, NULL, &ro, &err);
		d = hc_report_build(b, a, &ro, &err);
	}
	CHECK(r && d, "build: %s", err.msg);
	if (!r || !d)
		goto out;
	prof_unbias(524288, 4, 2400000, &o1, &w1);
	s = render(r, HC_FMT_FOLDED, &wo, NULL);
	{
		char want[256];
		double w2, o2;

		prof_unbias(524288, 1, 600000, &o2, &w2);
		snprintf(want, sizeof(want), "0x20;0x10 %lld\n0x20;0x30 %lld\n",
			 (long long)prof_round(w1), (long long)prof_round(w2));
		CHECK(s && !strcmp(s, want), "got:\n%s\nwant:\n%s", s ? s : "", want);
	}
	free(s);
	/* Growth: 0x10 grew, 0x11 went away (never negative), 0x30 is new. */
	s = render(d, HC_FMT_FOLDED, &wo, NULL);
	CHECK(s && strstr(s, "0x20;0x10 ") && strstr(s, "0x20;0x30 ") && !strstr(s, "0x11") &&
		      !strstr(s, " -"),
	      "growth:\n%s", s ? s : "");
	free(s);
	wo.shrink = true;
	s = render(d, HC_FMT_FOLDED, &wo, NULL);
	CHECK(s && strstr(s, "0x20;0x11 ") && !strstr(s, "0x10") && !strstr(s, "0x30"),
	      "shrink:\n%s", s ? s : "");
	free(s);
	wo.shrink = false;
	wo.objects = true;
	s = render(r, HC_FMT_FOLDED, &wo, NULL);
	{
		char want[64];

		snprintf(want, sizeof(want), "0x20;0x10 %lld\n", (long long)prof_round(o1));
		CHECK(s && strstr(s, want), "objects:\n%s", s ? s : "");
	}
	free(s);
	wo.objects = false;
	end();

	begin("prof.write_svg");
	s = render(d, HC_FMT_SVG, &wo, &len);
	CHECK(s && strstr(s, "<svg ") && strstr(s, "</svg>\n") && strstr(s, "<script"),
	      "not an svg");
	CHECK(s && strstr(s, "<title>0x10 (") && strstr(s, "%, ") && strstr(s, " bytes)</title>"),
	      "hover title with size and percentage");
	CHECK(s && strstr(s, "onload=\"init(evt)\"") && strstr(s, "function zoom(") &&
		      strstr(s, "function search("),
	      "zoom and search");
	CHECK(s && !strstr(s, "<title>0x11"), "svg shows growth only");
	free(s);
	end();

	begin("prof.write_text_json");
	s = render(d, HC_FMT_TEXT, &wo, NULL);
	CHECK(s && strstr(s, "Grew: +") && strstr(s, "Shrank: -") && strstr(s, "0x10") &&
		      strstr(s, "Top growing stacks"),
	      "text diff:\n%s", s ? s : "");
	free(s);
	s = render(r, HC_FMT_JSON, &wo, NULL);
	CHECK(s && !strncmp(s, "{\"format\":\"heapctl-report-1\"", 28) &&
		      strstr(s, "\"frames\":[\"0x20\",\"0x10\"]"),
	      "json:\n%s", s ? s : "");
	free(s);
	end();

	/* leak --json's members: what grew only, top first, and --top honoured. */
	begin("prof.write_top_json");
	{
		char *buf = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&buf, &n);

		memset(&err, 0, sizeof(err));
		CHECK(f && !hc_report_write_top_json(d, &wo, f, &err), "write: %s", err.msg);
		if (f)
			fclose(f);
		CHECK(buf && !strncmp(buf, "\"functions\":[{\"name\":\"0x10\",", 28) &&
			      strstr(buf, "],\"stacks\":[{\"frames\":[\"0x20\",\"0x10\"],\"change\":") &&
			      strstr(buf, "{\"frames\":[\"0x20\",\"0x30\"]") && !strstr(buf, "0x11") &&
			      !strstr(buf, ":-"),
		      "top json:\n%s", buf ? buf : "");
		free(buf);
		buf = NULL;
		n = 0;
		wo.top = 1;
		f = open_memstream(&buf, &n);
		CHECK(f && !hc_report_write_top_json(d, &wo, f, &err), "write top 1: %s", err.msg);
		if (f)
			fclose(f);
		CHECK(buf && !strstr(buf, "0x30") && strstr(buf, "0x10"), "top 1:\n%s",
		      buf ? buf : "");
		free(buf);
		wo.top = 0;
	}
	end();

	begin("prof.write_pprof");
	s = render(r, HC_FMT_PPROF, &wo, &len);
	CHECK(s && len > 20 && (unsigned char)s[0] == 0x1f && (unsigned char)s[1] == 0x8b,
	      "not gzip");
	if (s) {
		unsigned char raw[8192];
		size_t n = gunzip(s, len, raw, sizeof(raw));

		CHECK(n > 0, "gunzip");
		/* string_table entries are field 6; the first one is "" (0x32 0x00). */
		CHECK(memmem(raw, n, "\x32\x00\x32\x0d" "inuse_objects", 17),
		      "string_table[0] is not \"\" followed by inuse_objects");
		CHECK(memmem(raw, n, "inuse_space", 11) && memmem(raw, n, "bytes", 5),
		      "sample types");
		CHECK(!memmem(raw, n, "alloc_space", 11),
		      "alloc_space in a profile with no accumulated pair");
	}
	free(s);
	end();

	/* a profile that keeps the accumulated pair: Go's four types, the alloc pair first */
	begin("prof.write_pprof_alloc_pair");
	{
		static const char acc_text[] = "heap_v2/1\n"
					       "  t*: 1: 4096 [3: 12288]\n"
					       "@ 0x1000 0x2000\n"
					       "  t*: 1: 4096 [3: 12288]\n";
		struct hc_prof *p = parse(acc_text, &err);
		struct hc_report_opts aro = { 0 };
		struct hc_report *ar = p ? hc_report_build(p, NULL, &aro, &err) : NULL;
		unsigned char raw[8192];
		char *g;

		CHECK(ar != NULL, "build: %s", err.msg);
		g = ar ? render(ar, HC_FMT_PPROF, &wo, &len) : NULL;
		CHECK(g != NULL, "render");
		if (g) {
			size_t n = gunzip(g, len, raw, sizeof(raw));
			const unsigned char *ao = memmem(raw, n, "alloc_objects", 13),
					    *as = memmem(raw, n, "alloc_space", 11),
					    *io = memmem(raw, n, "inuse_objects", 13);

			CHECK(ao && as && io && ao < as && as < io,
			      "string table: alloc_objects, alloc_space, then inuse_objects");
		}
		free(g);
		hc_report_free(ar);
		hc_prof_free(p);
	}
	end();
out:
	hc_report_free(r);
	hc_report_free(d);
	hc_prof_free(a);
	hc_prof_free(b);
}

/* Every file of the seed corpus goes through the whole pipeline without harm. */
static void corpus(void)
{
	const char *dir = getenv("PROF_CORPUS") ? getenv("PROF_CORPUS") : "tests/data/prof";
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	begin("prof.corpus_replay");
	d = opendir(dir);
	CHECK(d != NULL, "cannot open %s: %s", dir, strerror(errno));
	while (d && (de = readdir(d))) {
		char path[4096];
		struct hc_prof *p;
		struct hc_report *r;
		struct hc_err err = { 0 };
		struct hc_report_opts ro = { 0 };
		struct hc_write_opts wo = { 0 };
		int f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		n++;
		p = hc_prof_load(path, &err);
		if (!p) {
			CHECK(err.code != HC_OK && err.msg[0], "%s: failed without a message", path);
			continue;
		}
		r = hc_report_build(p, p, &ro, &err);
		CHECK(r != NULL, "%s: %s", path, err.msg);
		for (f = 0; r && f <= HC_FMT_JSON; f++) {
			char *s = render(r, (enum hc_report_format)f, &wo, NULL);

			CHECK(s != NULL, "%s: format %d", path, f);
			free(s);
		}
		hc_report_free(r);
		hc_prof_free(p);
	}
	if (d)
		closedir(d);
	CHECK(n >= 5, "only %u corpus files in %s", n, dir);
	end();
}

/*
 * hc_poisson_range() against Garwood's exact 95% bounds (chi-square
 * quantiles, as tabulated): within 1%, and 0 below for no sample; on both
 * sides of k = 100, where it changes method.
 */
static void poisson(void)
{
	static const struct {
		double k, lo, hi;
	} exact[] = {
		{ 0, 0, 3.689 }, { 1, 0.0253, 5.572 }, { 5, 1.623, 11.668 },
		{ 10, 4.795, 18.390 }, { 100, 81.364, 121.627 }, { 101, 82.27, 122.73 },
		{ 10000, 9804.6, 10197.4 },
	};

	begin("report.poisson_range");
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
		double lo, hi;

		hc_poisson_range(exact[i].k, &lo, &hi);
		CHECK(hi > exact[i].hi * 0.99 && hi < exact[i].hi * 1.01 &&
		      (exact[i].lo == 0 ? lo == 0 :
		       lo > exact[i].lo * 0.99 && lo < exact[i].lo * 1.01),
		      "k %.0f: [%.4f, %.4f], exact [%.4f, %.4f]", exact[i].k, lo, hi, exact[i].lo,
		      exact[i].hi);
	}
	end();
}

/* xorshift64*, seeded: the simulation below gives the same figures on every run */
static uint64_t sim_rng = 0x9e3779b97f4a7c15ull;
static double sim_unit(void)
{
	sim_rng ^= sim_rng >> 12;
	sim_rng ^= sim_rng << 25;
	sim_rng ^= sim_rng >> 27;
	return (double)((sim_rng * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

/* exp(-x) for 0 <= x <= 8, by its series (no libm here) */
static double exp_neg(double x)
{
	double term = 1, sum = 1;

	for (int n = 1; n < 60; n++) {
		term *= -x / n;
		sum += term;
	}
	return sum;
}

/*
 * hc_growth_range() against a known truth, as a statistician checks it:
 * a growth of G bytes in blocks of 64 to 8192 bytes, sampled as the
 * samplers do (exponential gaps of mean P bytes: a block of s bytes is
 * sampled with probability 1 - exp(-s/P)) and un-biased as jeprof does.
 * Over 4000 simulated windows the 95% range must hold the truth at least
 * 93% of the time: never narrower than it claims.  Where blocks are small
 * beside P (the Poisson case the range models) it must not be much wider
 * either (at most 98%); where they are not, the samples catch most of the
 * bytes and the range is wider than it needs to be, which is safe.
 */
static void growth_range_coverage(void)
{
	static const struct {
		double growth, period;
		bool poisson;
	} cases[] = { { 40960, 8192, false },  { 512000, 4096, false }, { 512000, 2048, false },
		      { 3145728, 65536, true }, { 10485760, 262144, true } };

	begin("report.growth_range_coverage");
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		unsigned held = 0, runs = 4000;
		double ksum = 0;

		for (unsigned run = 0; run < runs; run++) {
			double left = cases[c].growth, est = 0, k = 0, lo, hi;

			while (left > 0) {
				double size = 64 + (double)(unsigned)(sim_unit() * 8129);
				double p;

				if (size > left)
					size = left;
				p = 1 - exp_neg(size / cases[c].period);
				left -= size;
				if (sim_unit() < p) {
					est += size / p;
					k++;
				}
			}
			hc_growth_range(est, k, (uint64_t)cases[c].period, false, &lo, &hi);
			held += lo <= cases[c].growth && cases[c].growth <= hi;
			ksum += k;
		}
		CHECK(held >= runs * 0.93 && (!cases[c].poisson || held <= runs * 0.98),
		      "growth %.0f at one sample per %.0f (%.1f samples on average): the range held "
		      "the truth %u times in %u", cases[c].growth, cases[c].period, ksum / runs, held,
		      runs);
	}
	end();
}

/*
 * heap_v2's accumulated pair: kept per stack, un-biased on its own, a
 * stack with nothing live kept for it; the report carries it per sample.
 */
static void accum_pair(void)
{
	static const char text[] = "heap_v2/65536\n"
				   "  t*: 1: 65536 [7: 458752]\n"
				   "@ 0x10 0x20\n"
				   "  t*: 1: 65536 [3: 196608]\n"
				   "@ 0x30\n"
				   "  t*: 0: 0 [4: 262144]\n"
				   "\nMAPPED_LIBRARIES:\n";
	struct hc_report_opts ro = { .keep_alloc = true };
	struct hc_err err;
	struct hc_prof *p;
	struct hc_report *r = NULL;
	double o, b;

	begin("prof.accum_pair");
	p = parse(text, &err);
	CHECK(p && p->nsamples == 2 && p->has_accum, "parsed: %s", err.msg);
	if (p) {
		prof_unbias(65536, 3, 196608, &o, &b);
		CHECK(near(p->samples[0].accum_objs, o, 1e-9) &&
			      near(p->samples[0].accum_bytes, b, 1e-9),
		      "accum %g %g, want %g %g", p->samples[0].accum_objs,
		      p->samples[0].accum_bytes, o, b);
		CHECK(near(b, 196608 / (1 - 0.36787944117144233), 1e-6), "un-biased %g", b);
		CHECK(p->samples[1].objs == 0 && p->samples[1].accum_objs > 4,
		      "a stack with none live: %g live, %g accumulated", p->samples[1].objs,
		      p->samples[1].accum_objs);
		r = hc_report_build(p, NULL, &ro, &err);
		CHECK(r && r->nsamples == 2 && near(r->samples[0].accum_bytes, b, 1e-9),
		      "report: %s", err.msg);
	}
	hc_report_free(r);
	hc_prof_free(p);
	p = parse("heap_v2/65536\n  t*: 1: 65536 [0: 0]\n@ 0x10\n  t*: 1: 65536 [0: 0]\n", &err);
	CHECK(p && !p->has_accum && p->samples[0].accum_objs == 0, "no accumulated pair");
	hc_prof_free(p);
	end();
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	poisson();
	growth_range_coverage();
	parser();
	pbenc();
	alloc_frames();
	demangling();
	demangle_corpus();
	demangle_oracle();
	symbolize_self();
	writers();
	accum_pair();
	corpus();
	return nfailed ? EXIT_FAILURE : EXIT_SUCCESS;
}
