// SPDX-License-Identifier: MIT
/*
 * demangle.c: C++ and Rust symbol names, shown the way jeprof and pprof
 * show them: without the parameter list.
 *
 * C++ (and Rust's legacy mangling, which is Itanium-shaped) goes through
 * libstdc++'s __cxa_demangle, looked up with dlopen so that heapctl stays a
 * C program with no C++ runtime dependency; without libstdc++ names stay
 * mangled.  Rust legacy names then lose their "::h<16 hex>" hash and get
 * their "$LT$"-style escapes decoded.  Rust v0 names ("_R...") are decoded
 * here (rust-lang RFC 2603).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "prof_int.h"

typedef char *(*cxa_demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

static cxa_demangle_fn cxa_demangle;
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void cxa_load(void)
{
	static const char *const libs[] = { "libstdc++.so.6", "libc++abi.so.1", "libc++.so.1" };
	size_t i;
	void *h;

	/* Already in the process (heapctl embedded in a C++ program)? */
	cxa_demangle = (cxa_demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
	for (i = 0; !cxa_demangle && i < sizeof(libs) / sizeof(libs[0]); i++) {
		h = dlopen(libs[i], RTLD_LAZY | RTLD_LOCAL);
		if (h)
			cxa_demangle = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
	}
	if (!cxa_demangle)
		pr_debug("no __cxa_demangle (libstdc++ not found): C++ names stay mangled");
}

static bool ends_with(const char *s, size_t n, const char *suf)
{
	size_t m = strlen(suf);

	return n >= m && !memcmp(s + n - m, suf, m);
}

/*
 * Drop the top-level parameter list (and what trails it: " const", "&&",
 * " [clone .cold]") from a demangled C++ name, in place.
 */
static void strip_params(char *s)
{
	size_t n = strlen(s);
	int depth = 0;
	size_t i;

	for (;;) {
		char *clone = strstr(s, " [clone ");

		if (!clone)
			break;
		*clone = '\0';
		n = (size_t)(clone - s);
	}
	for (;;) {
		if (ends_with(s, n, " const"))
			n -= 6;
		else if (ends_with(s, n, " volatile"))
			n -= 9;
		else if (ends_with(s, n, " &&"))
			n -= 3;
		else if (ends_with(s, n, " &"))
			n -= 2;
		else if (n && (s[n - 1] == '&' || s[n - 1] == ' '))
			n--;
		else
			break;
	}
	if (!n || s[n - 1] != ')')
		return;
	for (i = n; i-- > 0;) {
		if (s[i] == ')')
			depth++;
		else if (s[i] == '(' && --depth == 0)
			break;
	}
	if (depth || i == 0 || i == (size_t)-1)
		return;
	s[i] = '\0';
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Rust legacy: "a::b::h0123456789abcdef" with $..$ escapes. */
static char *rust_legacy(char *d)
{
	size_t n = strlen(d), i, o;
	static const struct {
		const char *esc, *out;
	} esc[] = {
		{ "$SP$", "@" }, { "$BP$", "*" }, { "$RF$", "&" }, { "$LT$", "<" },
		{ "$GT$", ">" }, { "$LP$", "(" }, { "$RP$", ")" }, { "$C$", "," },
	};

	if (n < 20 || memcmp(d + n - 19, "::h", 3))
		return d;
	for (i = n - 16; i < n; i++)
		if (!is_hex(d[i]))
			return d;
	n -= 19;
	d[n] = '\0';
	for (i = 0, o = 0; i < n;) {
		size_t k;
		bool done = false;

		if (d[i] == '.' && d[i + 1] == '.') {
			d[o++] = ':';
			d[o++] = ':';
			i += 2;
			continue;
		}
		if (d[i] == '$') {
			for (k = 0; k < sizeof(esc) / sizeof(esc[0]); k++) {
				size_t l = strlen(esc[k].esc);

				if (!strncmp(d + i, esc[k].esc, l)) {
					d[o++] = esc[k].out[0];
					i += l;
					done = true;
					break;
				}
			}
			if (!done && d[i + 1] == 'u') {
				char *e = strchr(d + i + 2, '$');
				unsigned long c;

				if (e && e - (d + i + 2) <= 6) {
					c = strtoul(d + i + 2, NULL, 16);
					if (c > 0 && c < 0x80) {
						d[o++] = (char)c;
						i = (size_t)(e - d) + 1;
						done = true;
					}
				}
			}
			if (done)
				continue;
		}
		d[o++] = d[i++];
	}
	d[o] = '\0';
	/* "_$LT$" at a segment start: the underscore only guards the '$'. */
	for (i = 0; d[i]; i++)
		if (d[i] == '_' && d[i + 1] == '<' && (i == 0 || d[i - 1] == ':'))
			memmove(d + i, d + i + 1, strlen(d + i));
	return d;
}

/* GCC clone suffixes on plain C names: "foo.part.0", "foo.cold", "foo.constprop.0". */
static char *strip_clone(const char *name)
{
	const char *dot = strchr(name, '.');
	char *r;

	if (!dot || dot == name)
		return NULL;
	if (strncmp(dot, ".part.", 6) && strncmp(dot, ".cold", 5) &&
	    strncmp(dot, ".constprop.", 11) && strncmp(dot, ".isra.", 6) &&
	    strncmp(dot, ".lto_priv.", 10) && strncmp(dot, ".localalias", 11))
		return NULL;
	r = strndup(name, (size_t)(dot - name));
	return r;
}

char *prof_demangle(const char *name)
{
	char *d = NULL, *base;
	int status = -1;

	if (!name)
		return NULL;
	if (!strncmp(name, "_R", 2)) {
		d = prof_demangle_rust_v0(name);
		if (d)
			return d;
	}
	if (strncmp(name, "_Z", 2))
		return strip_clone(name);
	pthread_once(&cxa_once, cxa_load);
	if (!cxa_demangle)
		return NULL;
	/* "_Z3foov.cold": demangle the part before a GCC clone suffix. */
	base = strdup(name);
	if (!base)
		return NULL;
	d = cxa_demangle(base, NULL, NULL, &status);
	if (status != 0 || !d) {
		char *dot = strchr(base, '.');

		free(d);
		d = NULL;
		if (dot) {
			*dot = '\0';
			d = cxa_demangle(base, NULL, NULL, &status);
			if (status != 0) {
				free(d);
				d = NULL;
			}
		}
	}
	free(base);
	if (!d)
		return NULL;
	if (!strncmp(name, "_ZN", 3))
		rust_legacy(d);
	strip_params(d);
	return d;
}
