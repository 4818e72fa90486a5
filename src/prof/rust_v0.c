// SPDX-License-Identifier: MIT
/*
 * rust_v0.c: Rust "v0" symbol names (_R...), per rust-lang RFC 2603, printed
 * like rustc-demangle's alternate form (no crate hashes), e.g.
 *   _RNvNtCs1234_5mycrate3foo3bar  ->  mycrate::foo::bar
 * Punycode identifiers are printed as their raw ASCII form.  Recursion and
 * back-references are bounded, so hostile input cannot loop or overflow.
 */
#include <stdlib.h>
#include <string.h>

#include "prof_int.h"

#define MAX_DEPTH 64

struct v0 {
	const char *s; /* after "_R" */
	size_t n, pos;
	struct pbuf out;
	int depth;
	bool bad;
};

static bool eat(struct v0 *d, char c)
{
	if (d->pos < d->n && d->s[d->pos] == c) {
		d->pos++;
		return true;
	}
	return false;
}

static char peek(const struct v0 *d)
{
	return d->pos < d->n ? d->s[d->pos] : '\0';
}

static char next(struct v0 *d)
{
	if (d->pos >= d->n) {
		d->bad = true;
		return '\0';
	}
	return d->s[d->pos++];
}

static void put(struct v0 *d, const char *s)
{
	pbuf_puts(&d->out, s);
}

/* <base-62-number>: "_" is 0, else digits then "_", value + 1. */
static uint64_t b62(struct v0 *d)
{
	uint64_t v = 0;
	char c;

	if (eat(d, '_'))
		return 0;
	for (;;) {
		unsigned x;

		c = next(d);
		if (c == '_')
			break;
		if (c >= '0' && c <= '9')
			x = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'z')
			x = 10u + (unsigned)(c - 'a');
		else if (c >= 'A' && c <= 'Z')
			x = 36u + (unsigned)(c - 'A');
		else {
			d->bad = true;
			return 0;
		}
		if (v > (UINT64_MAX - x) / 62) {
			d->bad = true;
			return 0;
		}
		v = v * 62 + x;
	}
	return v + 1;
}

static uint64_t opt_disambiguator(struct v0 *d)
{
	return eat(d, 's') ? b62(d) + 1 : 0;
}

/* <undisambiguated-identifier>, appended to the output if print. */
static void ident(struct v0 *d, bool print)
{
	size_t len = 0;

	eat(d, 'u'); /* punycode: shown raw */
	if (!(peek(d) >= '0' && peek(d) <= '9')) {
		d->bad = true;
		return;
	}
	while (peek(d) >= '0' && peek(d) <= '9') {
		len = len * 10 + (size_t)(next(d) - '0');
		if (len > d->n) {
			d->bad = true;
			return;
		}
	}
	eat(d, '_');
	if (len > d->n - d->pos) {
		d->bad = true;
		return;
	}
	if (print)
		pbuf_add(&d->out, d->s + d->pos, len);
	d->pos += len;
}

static void path(struct v0 *d, bool in_value);
static void type(struct v0 *d);

/* B<base-62>: run fn at the earlier position, then come back. */
static void backref(struct v0 *d, void (*fn)(struct v0 *, bool), bool arg)
{
	size_t here, target;
	uint64_t v = b62(d);

	if (d->bad)
		return;
	target = (size_t)v;
	/* Must point strictly before the "B" just read (RFC 2603). */
	if (v >= d->pos || d->depth >= MAX_DEPTH) {
		d->bad = true;
		return;
	}
	here = d->pos;
	d->pos = target;
	d->depth++;
	fn(d, arg);
	d->depth--;
	d->pos = here;
}

static void type_wrap(struct v0 *d, bool unused)
{
	(void)unused;
	type(d);
}

static void lifetime(struct v0 *d)
{
	b62(d);
	put(d, "'_");
}

static void constant(struct v0 *d)
{
	char c;

	if (eat(d, 'p')) {
		put(d, "_");
		return;
	}
	if (eat(d, 'B')) {
		size_t here;
		uint64_t v = b62(d);

		if (d->bad || v >= d->pos || d->depth >= MAX_DEPTH) {
			d->bad = true;
			return;
		}
		here = d->pos;
		d->pos = (size_t)v;
		d->depth++;
		constant(d);
		d->depth--;
		d->pos = here;
		return;
	}
	/* <type> <const-data>: print the hex value as is, prefixed 0x. */
	c = next(d);
	(void)c;
	if (eat(d, 'n'))
		put(d, "-");
	put(d, "0x");
	while (!d->bad && peek(d) != '_') {
		char h[2] = { next(d), '\0' };

		put(d, h);
	}
	eat(d, '_');
}

static void generic_args(struct v0 *d)
{
	bool first = true;

	put(d, "<");
	while (!d->bad && !eat(d, 'E')) {
		if (!first)
			put(d, ", ");
		first = false;
		if (peek(d) == 'L') {
			next(d);
			lifetime(d);
		} else if (eat(d, 'K')) {
			constant(d);
		} else {
			type(d);
		}
	}
	put(d, ">");
}

static void fn_sig(struct v0 *d)
{
	bool first = true;

	if (eat(d, 'G'))
		b62(d);
	if (eat(d, 'U'))
		put(d, "unsafe ");
	if (eat(d, 'K')) {
		put(d, "extern \"");
		if (eat(d, 'C'))
			put(d, "C");
		else
			ident(d, true);
		put(d, "\" ");
	}
	put(d, "fn(");
	while (!d->bad && !eat(d, 'E')) {
		if (!first)
			put(d, ", ");
		first = false;
		type(d);
	}
	put(d, ")");
	if (peek(d) == 'u') {
		next(d);
	} else {
		put(d, " -> ");
		type(d);
	}
}

static void dyn_bounds(struct v0 *d)
{
	bool first = true;

	if (eat(d, 'G'))
		b62(d);
	put(d, "dyn ");
	while (!d->bad && !eat(d, 'E')) {
		if (!first)
			put(d, " + ");
		first = false;
		path(d, false);
		while (!d->bad && eat(d, 'p')) {
			put(d, "<");
			ident(d, true);
			put(d, " = ");
			type(d);
			put(d, ">");
		}
	}
}

static void type(struct v0 *d)
{
	static const char *const basic[26] = {
		['a' - 'a'] = "i8",   ['b' - 'a'] = "bool", ['c' - 'a'] = "char",
		['d' - 'a'] = "f64",  ['e' - 'a'] = "str",  ['f' - 'a'] = "f32",
		['h' - 'a'] = "u8",   ['i' - 'a'] = "isize", ['j' - 'a'] = "usize",
		['l' - 'a'] = "i32",  ['m' - 'a'] = "u32",  ['n' - 'a'] = "i128",
		['o' - 'a'] = "u128", ['s' - 'a'] = "i16",  ['t' - 'a'] = "u16",
		['u' - 'a'] = "()",   ['v' - 'a'] = "...",  ['x' - 'a'] = "i64",
		['y' - 'a'] = "u64",  ['z' - 'a'] = "!",    ['p' - 'a'] = "_",
	};
	char c = peek(d);

	if (d->bad || ++d->depth > MAX_DEPTH) {
		d->bad = true;
		return;
	}
	if (c >= 'a' && c <= 'z' && basic[c - 'a']) {
		next(d);
		put(d, basic[c - 'a']);
		goto out;
	}
	switch (c) {
	case 'A':
		next(d);
		put(d, "[");
		type(d);
		put(d, "; ");
		constant(d);
		put(d, "]");
		break;
	case 'S':
		next(d);
		put(d, "[");
		type(d);
		put(d, "]");
		break;
	case 'T': {
		bool first = true;

		next(d);
		put(d, "(");
		while (!d->bad && !eat(d, 'E')) {
			if (!first)
				put(d, ", ");
			first = false;
			type(d);
		}
		put(d, ")");
		break;
	}
	case 'R':
	case 'Q':
		next(d);
		put(d, c == 'R' ? "&" : "&mut ");
		if (peek(d) == 'L') {
			next(d);
			b62(d);
		}
		type(d);
		break;
	case 'P':
	case 'O':
		next(d);
		put(d, c == 'P' ? "*const " : "*mut ");
		type(d);
		break;
	case 'F':
		next(d);
		fn_sig(d);
		break;
	case 'D':
		next(d);
		dyn_bounds(d);
		if (peek(d) == 'L') {
			next(d);
			b62(d);
		}
		break;
	case 'B':
		next(d);
		backref(d, type_wrap, false);
		break;
	default:
		path(d, false);
		break;
	}
out:
	d->depth--;
}

static void path(struct v0 *d, bool in_value)
{
	char c = next(d);

	if (d->bad || ++d->depth > MAX_DEPTH) {
		d->bad = true;
		return;
	}
	switch (c) {
	case 'C':
		opt_disambiguator(d);
		ident(d, true);
		break;
	case 'M':
		opt_disambiguator(d);
		{
			/* The impl's own path is not printed: "<Type>". */
			size_t len = d->out.len;

			path(d, false);
			d->out.len = len;
			if (d->out.p)
				d->out.p[len] = '\0';
		}
		put(d, "<");
		type(d);
		put(d, ">");
		break;
	case 'X':
		opt_disambiguator(d);
		{
			size_t len = d->out.len;

			path(d, false);
			d->out.len = len;
			if (d->out.p)
				d->out.p[len] = '\0';
		}
		put(d, "<");
		type(d);
		put(d, " as ");
		path(d, false);
		put(d, ">");
		break;
	case 'Y':
		put(d, "<");
		type(d);
		put(d, " as ");
		path(d, false);
		put(d, ">");
		break;
	case 'N': {
		char ns = next(d);
		uint64_t dis;
		size_t before;

		path(d, in_value);
		dis = opt_disambiguator(d);
		if (ns >= 'A' && ns <= 'Z') {
			put(d, "::{");
			put(d, ns == 'C' ? "closure" : ns == 'S' ? "shim" : "unknown");
			put(d, ":");
			before = d->out.len;
			ident(d, true);
			if (d->out.len == before && d->out.p) {
				d->out.p[--d->out.len] = '\0'; /* no name: drop the ':' */
			}
			pbuf_printf(&d->out, "#%llu}", (unsigned long long)dis);
		} else {
			put(d, "::");
			ident(d, true);
		}
		break;
	}
	case 'I':
		path(d, in_value);
		if (in_value)
			put(d, "::");
		generic_args(d);
		break;
	case 'B':
		backref(d, path, in_value);
		break;
	default:
		d->bad = true;
		break;
	}
	d->depth--;
}

char *prof_demangle_rust_v0(const char *name)
{
	struct v0 d;
	const char *s;

	if (strncmp(name, "_R", 2))
		return NULL;
	memset(&d, 0, sizeof(d));
	s = name + 2;
	/* Optional encoding version: decimal digits. */
	while (*s >= '0' && *s <= '9')
		s++;
	d.s = s;
	d.n = strlen(s);
	path(&d, true);
	/* An instantiating crate and a ".suffix" may follow; neither is shown. */
	if (d.bad || d.out.oom || !d.out.p) {
		pbuf_free(&d.out);
		return NULL;
	}
	return d.out.p;
}
