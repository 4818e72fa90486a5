// SPDX-License-Identifier: MIT
/*
 * Unit test: hc_maps_parse() on synthetic smaps text.  Shared memory of
 * every kind (SysV, POSIX shm, memfd, shared anonymous) is "shm", shared
 * mappings of ordinary files stay "file", and the diagnosis of a process
 * whose RSS is mostly shared memory does not blame code.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdio.h>
#include <string.h>

#include <heapctl/heapctl.h>

#include "unit.h"

/* One mapping of kib KiB resident: header line and its Rss line. */
static size_t add(char *buf, size_t at, size_t sz, unsigned long lo, const char *perms,
		  const char *path, unsigned long kib)
{
	int n = snprintf(buf + at, sz - at,
			 "%012lx-%012lx %s 00000000 00:05 %lu %s\nSize: %lu kB\nRss: %lu kB\n"
			 "Pss: %lu kB\n",
			 lo, lo + kib * 1024, perms, path[0] ? 1234ul : 0ul, path, kib, kib, kib);

	return n > 0 ? at + (size_t)n : at;
}

static void shm_kinds(void)
{
	static const struct {
		const char *perms, *path;
		enum hc_map_cat want;
	} m[] = {
		{ "rw-s", "/dev/zero (deleted)", HC_MAP_SHM },
		{ "rw-s", "/SYSV0052e2c1 (deleted)", HC_MAP_SHM },
		{ "rw-s", "/dev/shm/PostgreSQL.1804289383", HC_MAP_SHM },
		{ "rw-s", "/memfd:varnish (deleted)", HC_MAP_SHM },
		{ "rw-s", "[anon_shmem:pool]", HC_MAP_SHM },
		{ "rw-s", "/var/lib/db/data.mdb", HC_MAP_FILE },
		{ "r-xp", "/usr/lib/libc.so.6", HC_MAP_FILE },
		{ "rw-p", "", HC_MAP_ANON },
	};

	begin("maps.shm_kinds");
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		char text[512];
		struct hc_maps mm;
		struct hc_err err = { 0 };
		size_t len = add(text, 0, sizeof(text), 0x7f0000000000ul, m[i].perms, m[i].path, 64);

		CHECK(hc_maps_parse(text, len, &mm, &err) == 0, "%s: %s", m[i].path, err.msg);
		CHECK(mm.cat[m[i].want].rss == 64 * 1024 && mm.cat[m[i].want].nmaps == 1,
		      "%s %s: not in category %s", m[i].perms, m[i].path,
		      hc_map_cat_key(m[i].want));
	}
	CHECK(!strcmp(hc_map_cat_key(HC_MAP_SHM), "shm"), "key %s", hc_map_cat_key(HC_MAP_SHM));
	CHECK(strstr(hc_map_cat_title(HC_MAP_SHM), "shared memory") != NULL, "title %s",
	      hc_map_cat_title(HC_MAP_SHM));
	end();
}

/* A PostgreSQL backend: big shared buffers, some code, a small heap. */
static void shm_diagnosis(void)
{
	char text[2048], diag[320];
	struct hc_maps mm;
	struct hc_err err = { 0 };
	size_t len = 0;

	begin("maps.shm_diagnosis");
	len = add(text, len, sizeof(text), 0x555500000000ul, "r-xp", "/usr/lib/postgresql/15/bin/postgres", 6000);
	len = add(text, len, sizeof(text), 0x555600000000ul, "rw-p", "[heap]", 900);
	len = add(text, len, sizeof(text), 0x7f0000000000ul, "rw-s", "/dev/zero (deleted)", 120000);
	len = add(text, len, sizeof(text), 0x7f1000000000ul, "rw-s", "/dev/shm/PostgreSQL.1", 2000);
	len = add(text, len, sizeof(text), 0x7f2000000000ul, "r-xp", "/usr/lib/libc.so.6", 1500);
	CHECK(hc_maps_parse(text, len, &mm, &err) == 0, "%s", err.msg);
	CHECK(mm.cat[HC_MAP_SHM].rss == 122000ull * 1024, "shm rss %llu",
	      (unsigned long long)mm.cat[HC_MAP_SHM].rss);
	CHECK(mm.cat[HC_MAP_FILE].rss == 7500ull * 1024, "file rss %llu",
	      (unsigned long long)mm.cat[HC_MAP_FILE].rss);
	CHECK(mm.rss_sum == 130400ull * 1024, "sum %llu", (unsigned long long)mm.rss_sum);
	hc_maps_diagnose(&mm, diag, sizeof(diag));
	CHECK(strstr(diag, "shared memory") && !strstr(diag, "code"), "diagnosis: %s", diag);
	end();
}

int main(void)
{
	shm_kinds();
	shm_diagnosis();
	return nfailed != 0;
}
