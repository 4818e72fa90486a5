// SPDX-License-Identifier: MIT
/*
 * Unit test: the allocator signs of src/lib/evidence.c over made-up
 * read-only data.  A stripped program's strings must name its allocator,
 * with the conf variable's real prefix; a program that only quotes the
 * signs (a help text, heapctl itself) must not be taken for one.
 * Prints "PASS group" or "FAIL group: detail" per group; exits 1 on failure.
 */
#include <stdio.h>
#include <string.h>

#include "../../src/lib/evidence.c"
#include "unit.h"

/* Judge a .rodata made of the given strings, each NUL-terminated. */
static int judge_strs(const char *const *strs, struct evidence *ev)
{
	char buf[4096];
	size_t n = 0;
	struct tally ta;

	memset(&ta, 0, sizeof(ta));
	memset(ev, 0, sizeof(*ev));
	/* a string of other text first: the signs are not at the start of the data */
	memcpy(buf, "other", 6);
	n = 6;
	for (size_t i = 0; strs[i]; i++) {
		size_t l = strlen(strs[i]) + 1;

		memcpy(buf + n, strs[i], l);
		n += l;
	}
	scan_buf(buf, n, &ta);
	return judge(&ta, ev);
}

int main(void)
{
	struct evidence ev;

	begin("evidence-rjem");
	{
		static const char *const s[] = { "opt.prof", "_RJEM_MALLOC_CONF",
						 "<jemalloc>: Invalid conf pair: %.*s:%.*s", NULL };

		CHECK(judge_strs(s, &ev) == 1, "no verdict");
		CHECK(ev.alloc && !strcmp(ev.alloc, "jemalloc"), "alloc %s", ev.alloc);
		CHECK(!strcmp(ev.found, "_RJEM_MALLOC_CONF string, \"<jemalloc>: \" messages"),
		      "found '%s'", ev.found);
	}
	end();

	begin("evidence-plain-jemalloc");
	{
		static const char *const s[] = { "MALLOC_CONF", "<jemalloc>: Error in atexit()",
						 NULL };

		CHECK(judge_strs(s, &ev) == 1 && !strcmp(ev.alloc, "jemalloc") &&
			      !strncmp(ev.found, "MALLOC_CONF string", 18),
		      "found '%s'", ev.found);
	}
	end();

	begin("evidence-quoted-only");
	{
		/* heapctl's own kind of strings: hints that quote the signs */
		static const char *const s[] = {
			"restart the process with MALLOC_CONF=prof:true", "MALLOC_CONF",
			"<jemalloc>: ", "TCMALLOC_", "15MallocExtension", "mimalloc: warning: ",
			"tcmalloc: MallocExtension_GetNumericProperty at 0x%lx", NULL
		};

		CHECK(judge_strs(s, &ev) == 0, "taken for %s (%s)", ev.alloc, ev.found);
	}
	end();

	begin("evidence-tcmalloc");
	{
		static const char *const s[] = { "15MallocExtension",
						 "TCMALLOC_SAMPLE_PARAMETER", NULL };
		static const char *const one[] = { "TCMALLOC_SAMPLE_PARAMETER", NULL };

		CHECK(judge_strs(s, &ev) == 1 && !strcmp(ev.alloc, "tcmalloc"), "no tcmalloc");
		CHECK(judge_strs(one, &ev) == 0, "one weak sign is enough for %s", ev.alloc);
	}
	end();

	begin("evidence-mimalloc");
	{
		static const char *const s[] = { "mimalloc: warning: %s", NULL };

		CHECK(judge_strs(s, &ev) == 1 && !strcmp(ev.alloc, "mimalloc"), "no mimalloc");
	}
	end();

	begin("evidence-conf-not-a-string");
	{
		/* "...MALLOC_CONF" inside a longer string is no conf variable */
		static const char *const s[] = { "set JE_MALLOC_CONFIG", "XMALLOC_CONF=1",
						 "<jemalloc>: Conf string ends with key", NULL };

		CHECK(judge_strs(s, &ev) == 1 && !strcmp(ev.found, "\"<jemalloc>: \" messages"),
		      "found '%s'", ev.found);
	}
	end();
	return nfailed != 0;
}
