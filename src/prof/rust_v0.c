// SPDX-License-Identifier: MIT
/*
 * rust_v0.c: Rust "v0" symbol names (_R...), per rust-lang RFC 2603 and the
 * Rust reference's "v0 Symbol Format" chapter, printed like rustc-demangle's
 * alternate form (no crate hashes), e.g.
 *   _RNvNtCs1234_5mycrate3foo3bar  ->  mycrate::foo::bar
 *
 * The whole name must parse: anything the grammar does not allow, or leaves
 * unread, makes the result NULL and the caller shows the raw name, since a
 * half-decoded name would be worse than the mangled one.  Const generic
 * values are printed by their type: integers in decimal (up to 128 bits),
 * bool as true/false, char quoted with Rust's escapes (non-ASCII as
 * \u{...}, as c++filt does).  Punycode identifiers are decoded to UTF-8.
 * Recursion, back-references and the output size are bounded, so hostile
 * input can neither loop, overflow the stack, nor make a back-reference
 * chain expand exponentially.
 */
#include <stdlib.h>
#include <string.h>

#include "prof_int.h"

#define MAX_DEPTH 64
/* Real names stay under a few KiB; back-references could double per level. */
#define MAX_OUT (64 * 1024)
/* Code points in one punycode identifier. */
#define PUNY_MAX 256

struct v0 {
	const char *s; /* after "_R" */
	size_t n, pos;
	struct pbuf out;
	int depth;
	int skip;           /* > 0: parse without printing */
	uint64_t lifetimes; /* bound lifetimes in scope (for<'a, ...>) */
	bool bad;
	char ubuf[4 * PUNY_MAX]; /* the last punycode identifier, as UTF-8 */
};

static bool eat(struct v0 *d, char c)
{
	if (!d->bad && d->pos < d->n && d->s[d->pos] == c) {
		d->pos++;
		return true;
	}
	return false;
}

static char peek(const struct v0 *d)
{
	return !d->bad && d->pos < d->n ? d->s[d->pos] : '\0';
}

static char next(struct v0 *d)
{
	if (d->bad || d->pos >= d->n) {
		d->bad = true;
		return '\0';
	}
	return d->s[d->pos++];
}

static void put_n(struct v0 *d, const char *s, size_t len)
{
	if (d->skip || d->bad)
		return;
	if (d->out.len + len > MAX_OUT) {
		d->bad = true;
		return;
	}
	pbuf_add(&d->out, s, len);
}

static void put(struct v0 *d, const char *s)
{
	put_n(d, s, strlen(s));
}

static bool enter(struct v0 *d)
{
	if (d->bad || d->depth >= MAX_DEPTH) {
		d->bad = true;
		return false;
	}
	d->depth++;
	return true;
}

static void leave(struct v0 *d)
{
	d->depth--;
}

/* c's value as a digit of radix (62: 0-9 a-z A-Z; 16: 0-9 a-f), or -1. */
static int digit(char c, unsigned radix)
{
	int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? 10 + (c - 'a') :
		c >= 'A' && c <= 'Z' ? 36 + (c - 'A') : -1;

	return x >= 0 && (unsigned)x < radix ? x : -1;
}

/* <base-62-number>: "_" is 0, else digits then "_", value + 1. */
static uint64_t b62(struct v0 *d)
{
	uint64_t v = 0;

	if (eat(d, '_'))
		return 0;
	for (;;) {
		char c = next(d);
		int x;

		if (c == '_')
			break;
		if ((x = digit(c, 62)) < 0) {
			d->bad = true;
			return 0;
		}
		if (v > (UINT64_MAX - (unsigned)x) / 62 || v * 62 + (unsigned)x == UINT64_MAX) {
			d->bad = true;
			return 0;
		}
		v = v * 62 + (unsigned)x;
	}
	return v + 1;
}

static uint64_t opt_disambiguator(struct v0 *d)
{
	uint64_t v;

	if (!eat(d, 's'))
		return 0;
	v = b62(d);
	if (v == UINT64_MAX)
		d->bad = true;
	return v + 1;
}

/*
 * Punycode (RFC 3492) with '_' for '-', as v0 writes non-ASCII identifiers:
 * decoded to UTF-8 in d->ubuf.  False if it is not valid punycode.
 */
static bool punycode(struct v0 *d, const char *in, size_t len, size_t *outlen)
{
	enum { BASE = 36, TMIN = 1, TMAX = 26, SKEW = 38, DAMP = 700 };
	uint32_t cp[PUNY_MAX];
	size_t ncp = 0, basic = 0, i, o = 0;
	uint32_t n = 128, bias = 72, pos = 0;
	bool first = true;

	/* The basic (ASCII) part ends at the last '_', if there is one. */
	for (i = len; i-- > 0;) {
		if (in[i] == '_') {
			basic = i;
			break;
		}
	}
	if (basic > PUNY_MAX)
		return false;
	for (i = 0; i < basic; i++) {
		if ((unsigned char)in[i] >= 0x80)
			return false;
		cp[ncp++] = (unsigned char)in[i];
	}
	i = basic ? basic + 1 : 0;
	if (i >= len)
		return false; /* nothing encoded: not how v0 writes an identifier */
	while (i < len) {
		uint32_t old = pos, w = 1, k, t, delta;

		for (k = BASE;; k += BASE) {
			char c;
			uint32_t digit;

			if (i >= len)
				return false;
			c = in[i++];
			if (c >= 'a' && c <= 'z')
				digit = (uint32_t)(c - 'a');
			else if (c >= '0' && c <= '9')
				digit = 26u + (uint32_t)(c - '0');
			else
				return false;
			if (digit > (UINT32_MAX - pos) / w)
				return false;
			pos += digit * w;
			t = k <= bias ? TMIN : k >= bias + TMAX ? TMAX : k - bias;
			if (digit < t)
				break;
			if (w > UINT32_MAX / (BASE - t))
				return false;
			w *= BASE - t;
		}
		if (ncp >= PUNY_MAX)
			return false;
		/* Adapt the bias. */
		delta = first ? (pos - old) / DAMP : (pos - old) / 2;
		first = false;
		delta += delta / (uint32_t)(ncp + 1);
		for (k = 0; delta > ((BASE - TMIN) * TMAX) / 2; k += BASE)
			delta /= BASE - TMIN;
		bias = k + (BASE - TMIN + 1) * delta / (delta + SKEW);
		if (pos / (uint32_t)(ncp + 1) > 0x10ffff - n)
			return false;
		n += pos / (uint32_t)(ncp + 1);
		pos %= (uint32_t)(ncp + 1);
		if (n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff))
			return false;
		memmove(cp + pos + 1, cp + pos, (ncp - pos) * sizeof(cp[0]));
		cp[pos++] = n;
		ncp++;
	}
	for (i = 0; i < ncp; i++) {
		uint32_t c = cp[i];

		if (c < 0x80) {
			d->ubuf[o++] = (char)c;
		} else if (c < 0x800) {
			d->ubuf[o++] = (char)(0xc0 | (c >> 6));
			d->ubuf[o++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			d->ubuf[o++] = (char)(0xe0 | (c >> 12));
			d->ubuf[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			d->ubuf[o++] = (char)(0x80 | (c & 0x3f));
		} else {
			d->ubuf[o++] = (char)(0xf0 | (c >> 18));
			d->ubuf[o++] = (char)(0x80 | ((c >> 12) & 0x3f));
			d->ubuf[o++] = (char)(0x80 | ((c >> 6) & 0x3f));
			d->ubuf[o++] = (char)(0x80 | (c & 0x3f));
		}
	}
	*outlen = o;
	return true;
}

/* <undisambiguated-identifier>: ["u"] <decimal> ["_"] <bytes>. */
static void ident(struct v0 *d, const char **p, size_t *plen)
{
	size_t len = 0;
	bool puny;

	*p = "";
	*plen = 0;
	puny = eat(d, 'u');
	if (!(peek(d) >= '0' && peek(d) <= '9')) {
		d->bad = true;
		return;
	}
	if (!eat(d, '0')) {
		while (peek(d) >= '0' && peek(d) <= '9') {
			len = len * 10 + (size_t)(next(d) - '0');
			if (len > d->n) {
				d->bad = true;
				return;
			}
		}
	}
	eat(d, '_');
	if (d->bad || len > d->n - d->pos) {
		d->bad = true;
		return;
	}
	*p = d->s + d->pos;
	*plen = len;
	d->pos += len;
	if (puny) {
		if (!punycode(d, *p, len, plen)) {
			d->bad = true;
			*plen = 0;
			return;
		}
		*p = d->ubuf;
	}
}

static void path(struct v0 *d, bool in_value);
static void type(struct v0 *d);
static void constant(struct v0 *d);

/* B<base-62>: run fn at the earlier position, then come back. */
static void backref(struct v0 *d, void (*fn)(struct v0 *, bool), bool arg)
{
	size_t here, b = d->pos - 1; /* every caller has just read the "B" */
	uint64_t v = b62(d);

	/* Must point strictly before that "B", so the walk always goes back. */
	if (d->bad || v >= b || !enter(d)) {
		d->bad = true;
		return;
	}
	here = d->pos;
	d->pos = (size_t)v;
	fn(d, arg);
	d->pos = here;
	leave(d);
}

static void type_wrap(struct v0 *d, bool unused)
{
	(void)unused;
	type(d);
}

static void const_wrap(struct v0 *d, bool unused)
{
	(void)unused;
	constant(d);
}

/* 'a, 'b, ... for bound lifetimes (de Bruijn index from the innermost binder); '_ if erased. */
static void lifetime_name(struct v0 *d, uint64_t lt)
{
	uint64_t depth;
	char buf[32];

	if (lt == 0) {
		put(d, "'_");
		return;
	}
	if (lt > d->lifetimes) {
		d->bad = true;
		return;
	}
	depth = d->lifetimes - lt;
	if (depth < 26) {
		buf[0] = '\'';
		buf[1] = (char)('a' + depth);
		buf[2] = '\0';
	} else {
		snprintf(buf, sizeof(buf), "'_%llu", (unsigned long long)depth);
	}
	put(d, buf);
}

/* [G <base-62>]: a binder; prints "for<'a, 'b> " and returns how many it bound. */
static uint64_t binder(struct v0 *d)
{
	uint64_t n, i;

	if (!eat(d, 'G'))
		return 0;
	n = b62(d) + 1;
	if (d->bad || n > 1000 || d->lifetimes + n < d->lifetimes) {
		d->bad = true;
		return 0;
	}
	put(d, "for<");
	for (i = 0; i < n && !d->bad; i++) {
		if (i)
			put(d, ", ");
		d->lifetimes++;
		lifetime_name(d, 1);
	}
	put(d, "> ");
	return n;
}

/* A char the way Rust's Debug prints it, but with every non-ASCII one escaped. */
static void put_char(struct v0 *d, uint32_t c)
{
	char buf[16];

	switch (c) {
	case '\t': put(d, "'\\t'"); return;
	case '\r': put(d, "'\\r'"); return;
	case '\n': put(d, "'\\n'"); return;
	case '\\': put(d, "'\\\\'"); return;
	case '\'': put(d, "'\\''"); return;
	case '\0': put(d, "'\\0'"); return;
	default: break;
	}
	if (c >= 0x20 && c < 0x7f)
		snprintf(buf, sizeof(buf), "'%c'", (char)c);
	else
		snprintf(buf, sizeof(buf), "'\\u{%x}'", (unsigned)c);
	put(d, buf);
}

/* Decimal of a 128-bit magnitude. */
static void put_u128(struct v0 *d, unsigned __int128 v)
{
	char buf[48];
	size_t i = sizeof(buf);

	buf[--i] = '\0';
	do {
		buf[--i] = (char)('0' + (unsigned)(v % 10));
		v /= 10;
	} while (v);
	put(d, buf + i);
}

/*
 * <const> = <type> <const-data> | "p" | <backref>
 * <const-data> = ["n"] {<hex-digit>} "_"
 * Only the types a stable const generic can have: integers, bool, char.
 */
static void constant(struct v0 *d)
{
	unsigned __int128 v = 0;
	unsigned nibbles = 0;
	bool neg = false, is_signed = false;
	char t;

	if (!enter(d))
		return;
	if (eat(d, 'p')) {
		put(d, "_");
		goto out;
	}
	if (eat(d, 'B')) {
		backref(d, const_wrap, false);
		goto out;
	}
	t = next(d);
	switch (t) {
	case 'a': case 's': case 'l': case 'x': case 'n': case 'i':
		is_signed = true;
		break;
	case 'h': case 't': case 'm': case 'y': case 'o': case 'j':
	case 'b': case 'c':
		break;
	default:
		d->bad = true; /* str, references, ADTs: not decoded, so not guessed at */
		goto out;
	}
	if (is_signed && eat(d, 'n'))
		neg = true;
	for (;;) {
		char c = next(d);
		int x;

		if (c == '_')
			break;
		if ((x = digit(c, 16)) < 0) {
			d->bad = true;
			goto out;
		}
		if (v || x)
			nibbles++;
		if (nibbles > 32) {
			d->bad = true;
			goto out;
		}
		v = (v << 4) | (unsigned)x;
	}
	if (d->bad)
		goto out;
	switch (t) {
	case 'b':
		if (v > 1) {
			d->bad = true;
			goto out;
		}
		put(d, v ? "true" : "false");
		break;
	case 'c':
		if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
			d->bad = true;
			goto out;
		}
		put_char(d, (uint32_t)v);
		break;
	default:
		if (neg) {
			/* A negative zero, or a magnitude past i128::MIN, is no real value. */
			if (!v || v > ((unsigned __int128)1 << 127)) {
				d->bad = true;
				goto out;
			}
			put(d, "-");
		}
		put_u128(d, v);
		break;
	}
out:
	leave(d);
}

static void generic_args(struct v0 *d)
{
	bool first = true;

	put(d, "<");
	while (!d->bad && !eat(d, 'E')) {
		if (!first)
			put(d, ", ");
		first = false;
		if (eat(d, 'L'))
			lifetime_name(d, b62(d));
		else if (eat(d, 'K'))
			constant(d);
		else
			type(d);
	}
	put(d, ">");
}

static void fn_sig(struct v0 *d)
{
	uint64_t saved = d->lifetimes;
	bool first = true;

	binder(d);
	if (eat(d, 'U'))
		put(d, "unsafe ");
	if (eat(d, 'K')) {
		put(d, "extern \"");
		if (eat(d, 'C')) {
			put(d, "C");
		} else {
			const char *p;
			size_t len, i;

			ident(d, &p, &len);
			/* "C_unwind" is C-unwind: '-' cannot appear in an identifier. */
			for (i = 0; i < len && !d->bad; i++)
				put_n(d, p[i] == '_' ? "-" : p + i, 1);
		}
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
	if (!eat(d, 'u')) {
		put(d, " -> ");
		type(d);
	}
	d->lifetimes = saved;
}

static void dyn_bounds(struct v0 *d)
{
	uint64_t saved = d->lifetimes;
	bool first = true;

	put(d, "dyn ");
	binder(d);
	while (!d->bad && !eat(d, 'E')) {
		bool open = false;

		if (!first)
			put(d, " + ");
		first = false;
		/* <dyn-trait> = <path> {<dyn-trait-assoc-binding>}: bindings go inside its <...>. */
		path(d, false);
		while (!d->bad && eat(d, 'p')) {
			const char *p;
			size_t len;

			if (!open && !d->skip && d->out.len && d->out.p[d->out.len - 1] == '>') {
				d->out.p[--d->out.len] = '\0';
				put(d, ", ");
			} else {
				put(d, open ? ", " : "<");
			}
			open = true;
			ident(d, &p, &len);
			put_n(d, p, len);
			put(d, " = ");
			type(d);
		}
		if (open)
			put(d, ">");
	}
	d->lifetimes = saved;
}

static void type(struct v0 *d)
{
	static const char *const basic[26] = {
		['a' - 'a'] = "i8",    ['b' - 'a'] = "bool", ['c' - 'a'] = "char",
		['d' - 'a'] = "f64",   ['e' - 'a'] = "str",  ['f' - 'a'] = "f32",
		['h' - 'a'] = "u8",    ['i' - 'a'] = "isize", ['j' - 'a'] = "usize",
		['l' - 'a'] = "i32",   ['m' - 'a'] = "u32",  ['n' - 'a'] = "i128",
		['o' - 'a'] = "u128",  ['s' - 'a'] = "i16",  ['t' - 'a'] = "u16",
		['u' - 'a'] = "()",    ['v' - 'a'] = "...",  ['x' - 'a'] = "i64",
		['y' - 'a'] = "u64",   ['z' - 'a'] = "!",    ['p' - 'a'] = "_",
	};
	char c = peek(d);

	if (!enter(d))
		return;
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
		unsigned n = 0;

		next(d);
		put(d, "(");
		while (!d->bad && !eat(d, 'E')) {
			if (n++)
				put(d, ", ");
			type(d);
		}
		put(d, n == 1 ? ",)" : ")");
		break;
	}
	case 'R':
	case 'Q':
		next(d);
		put(d, "&");
		if (eat(d, 'L')) {
			uint64_t lt = b62(d);

			if (lt) {
				lifetime_name(d, lt);
				put(d, " ");
			}
		}
		if (c == 'Q')
			put(d, "mut ");
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
	case 'D': {
		uint64_t lt;

		next(d);
		dyn_bounds(d);
		if (!eat(d, 'L')) {
			d->bad = true;
			break;
		}
		lt = b62(d);
		if (lt) {
			put(d, " + ");
			lifetime_name(d, lt);
		}
		break;
	}
	case 'B':
		next(d);
		backref(d, type_wrap, false);
		break;
	default:
		path(d, false);
		break;
	}
out:
	leave(d);
}

static void path(struct v0 *d, bool in_value)
{
	char c = next(d);

	if (!enter(d))
		return;
	switch (c) {
	case 'C': {
		const char *p;
		size_t len;

		opt_disambiguator(d);
		ident(d, &p, &len);
		put_n(d, p, len);
		break;
	}
	case 'M':
	case 'X':
		/* The impl's own path is not printed: "<Type>", "<Type as Trait>". */
		opt_disambiguator(d);
		d->skip++;
		path(d, false);
		d->skip--;
		put(d, "<");
		type(d);
		if (c == 'X') {
			put(d, " as ");
			path(d, false);
		}
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
		const char *p;
		size_t len;

		if (!((ns >= 'A' && ns <= 'Z') || (ns >= 'a' && ns <= 'z'))) {
			d->bad = true;
			break;
		}
		path(d, in_value);
		dis = opt_disambiguator(d);
		ident(d, &p, &len);
		if (ns >= 'A' && ns <= 'Z') {
			char buf[32];

			/* Special namespaces: {closure#0}, {shim:vtable#0}, {K#0}. */
			put(d, "::{");
			if (ns == 'C')
				put(d, "closure");
			else if (ns == 'S')
				put(d, "shim");
			else
				put_n(d, &ns, 1);
			if (len) {
				put(d, ":");
				put_n(d, p, len);
			}
			snprintf(buf, sizeof(buf), "#%llu}", (unsigned long long)dis);
			put(d, buf);
		} else {
			if (!len) {
				d->bad = true; /* only special namespaces may be unnamed */
				break;
			}
			put(d, "::");
			put_n(d, p, len);
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
	leave(d);
}

char *prof_demangle_rust_v0(const char *name)
{
	struct v0 d;

	if (strncmp(name, "_R", 2))
		return NULL;
	memset(&d, 0, sizeof(d));
	d.s = name + 2;
	d.n = strlen(d.s);
	/* An encoding version would be decimal digits; none is defined yet. */
	if (d.n && d.s[0] >= '0' && d.s[0] <= '9')
		return NULL;
	path(&d, true);
	/* An instantiating crate may follow; it is not shown. */
	if (!d.bad && d.pos < d.n && d.s[d.pos] != '.' && d.s[d.pos] != '$') {
		d.skip++;
		path(&d, false);
		d.skip--;
	}
	/* Then only a vendor suffix (".llvm.123"), also not shown; nothing else. */
	if (!d.bad && d.pos < d.n && d.s[d.pos] != '.' && d.s[d.pos] != '$')
		d.bad = true;
	if (d.bad || d.out.oom || !d.out.p) {
		pbuf_free(&d.out);
		return NULL;
	}
	return d.out.p;
}
