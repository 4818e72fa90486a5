// SPDX-License-Identifier: MIT
/*
 * util.c: buffers, string interning, hash maps and the bits of libm the
 * profile code needs (heapctl links no libm).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "prof_int.h"

/* ---- buffers --------------------------------------------------------- */

int prof_grow(void *arr, size_t *cap, size_t n, size_t elem)
{
	void **pp = arr;
	size_t ncap;
	void *p;

	if (n <= *cap)
		return 0;
	ncap = *cap ? *cap : 16;
	while (ncap < n) {
		if (ncap > SIZE_MAX / 2)
			return -1;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem)
		return -1;
	p = realloc(*pp, ncap * elem);
	if (!p)
		return -1;
	*pp = p;
	*cap = ncap;
	return 0;
}

void pbuf_add(struct pbuf *b, const void *data, size_t len)
{
	if (b->oom)
		return;
	if (len > SIZE_MAX - b->len - 1 || prof_grow(&b->p, &b->cap, b->len + len + 1, 1)) {
		b->oom = true;
		return;
	}
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
	b->p[b->len] = '\0';
}

void pbuf_puts(struct pbuf *b, const char *s)
{
	pbuf_add(b, s, strlen(s));
}

void pbuf_printf(struct pbuf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if ((size_t)n < sizeof(small)) {
		pbuf_add(b, small, (size_t)n);
		return;
	}
	if (b->oom || prof_grow(&b->p, &b->cap, b->len + (size_t)n + 1, 1)) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void pbuf_free(struct pbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- hashing --------------------------------------------------------- */

/* FNV-1a with a final avalanche (murmur3 fmix32): fast, good enough for tables. */
uint32_t prof_hash(const void *data, size_t len, uint32_t seed)
{
	const unsigned char *p = data;
	uint32_t h = 2166136261u ^ seed;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static uint64_t mix64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ull;
	k ^= k >> 33;
	return k;
}

/* ---- string table ------------------------------------------------------ */

static int strtab_rehash(struct strtab *t, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	size_t i;

	if (!slots)
		return -1;
	for (i = 0; i < t->n; i++) {
		size_t j = t->hash[i] & (nslots - 1);

		while (slots[j])
			j = (j + 1) & (nslots - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

static size_t strtab_lookup(const struct strtab *t, const char *s, size_t len, uint32_t h)
{
	size_t j = h & (t->nslots - 1);

	for (;; j = (j + 1) & (t->nslots - 1)) {
		uint32_t id = t->slots[j];

		if (!id)
			return j;
		id--;
		if (t->hash[id] == h && !strncmp(t->str[id], s, len) && t->str[id][len] == '\0')
			return j;
	}
}

uint32_t strtab_find(const struct strtab *t, const char *s, size_t len)
{
	uint32_t h;
	size_t j;

	if (!t->nslots)
		return UINT32_MAX;
	h = prof_hash(s, len, 0);
	j = strtab_lookup(t, s, len, h);
	return t->slots[j] ? t->slots[j] - 1 : UINT32_MAX;
}

uint32_t strtab_intern(struct strtab *t, const char *s, size_t len)
{
	uint32_t h;
	char *copy;
	size_t j;

	if (t->oom)
		return UINT32_MAX;
	if ((t->n + 1) * 2 > t->nslots && strtab_rehash(t, t->nslots ? t->nslots * 2 : 256))
		goto oom;
	h = prof_hash(s, len, 0);
	j = strtab_lookup(t, s, len, h);
	if (t->slots[j])
		return t->slots[j] - 1;
	if (t->n >= UINT32_MAX - 1)
		goto oom;
	if (prof_grow(&t->str, &t->cap, t->n + 1, sizeof(*t->str)) ||
	    prof_grow(&t->hash, &t->hcap, t->n + 1, sizeof(*t->hash)))
		goto oom;
	copy = malloc(len + 1);
	if (!copy)
		goto oom;
	memcpy(copy, s, len);
	copy[len] = '\0';
	t->str[t->n] = copy;
	t->hash[t->n] = h;
	t->slots[j] = (uint32_t)t->n + 1;
	return (uint32_t)t->n++;
oom:
	t->oom = true;
	return UINT32_MAX;
}

void strtab_free(struct strtab *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->str[i]);
	free(t->str);
	free(t->hash);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* ---- u64 map --------------------------------------------------------- */

static int u64map_rehash(struct u64map *m, size_t nslots)
{
	uint64_t *keys = calloc(nslots, sizeof(*keys));
	uint32_t *vals = calloc(nslots, sizeof(*vals));
	size_t i;

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -1;
	}
	for (i = 0; i < m->nslots; i++) {
		size_t j;

		if (!m->vals[i])
			continue;
		j = mix64(m->keys[i]) & (nslots - 1);
		while (vals[j])
			j = (j + 1) & (nslots - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->nslots = nslots;
	return 0;
}

int u64map_put(struct u64map *m, uint64_t key, uint32_t val)
{
	size_t j;

	if (val == UINT32_MAX)
		return -1;
	if ((m->n + 1) * 2 > m->nslots && u64map_rehash(m, m->nslots ? m->nslots * 2 : 256))
		return -1;
	j = mix64(key) & (m->nslots - 1);
	while (m->vals[j] && m->keys[j] != key)
		j = (j + 1) & (m->nslots - 1);
	if (!m->vals[j])
		m->n++;
	m->keys[j] = key;
	m->vals[j] = val + 1;
	return 0;
}

bool u64map_get(const struct u64map *m, uint64_t key, uint32_t *val)
{
	size_t j;

	if (!m->nslots)
		return false;
	j = mix64(key) & (m->nslots - 1);
	while (m->vals[j]) {
		if (m->keys[j] == key) {
			*val = m->vals[j] - 1;
			return true;
		}
		j = (j + 1) & (m->nslots - 1);
	}
	return false;
}

void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* ---- numbers --------------------------------------------------------- */

/* Square root by Newton's method from above: no libm for the library's users. */
double prof_sqrt(double x)
{
	double r = x > 1 ? x : 1, n;

	if (!(x > 0))
		return 0;
	for (int i = 0; i < 200; i++) {
		n = 0.5 * (r + x / r);
		if (n >= r)
			break;
		r = n;
	}
	return r;
}

/*
 * expm1 by range reduction: x = k ln2 + r with |r| <= ln2/2, then
 * e^x - 1 = 2^k (e^r - 1) + (2^k - 1), where e^r - 1 comes from its Taylor
 * series (no cancellation for small r, which is the case that matters:
 * bytes/objects is tiny against the sample period).
 */
double prof_expm1(double x)
{
	static const double ln2 = 0.69314718055994530942;
	double r, term, sum, p2;
	int k, i;

	if (x != x)
		return x;
	if (x < -745.0)
		return -1.0;
	if (x > 709.0)
		return 1.0e308 * 10.0; /* inf */
	k = (int)(x / ln2 + (x < 0 ? -0.5 : 0.5));
	r = x - k * ln2;
	term = r;
	sum = r;
	for (i = 2; i < 30; i++) {
		term *= r / i;
		sum += term;
		if (term < 1e-18 * (sum < 0 ? -sum : sum) && term > -1e-18 * (sum < 0 ? -sum : sum))
			break;
	}
	if (k == 0)
		return sum;
	p2 = 1.0;
	if (k > 0)
		for (i = 0; i < k; i++)
			p2 *= 2.0;
	else
		for (i = 0; i < -k; i++)
			p2 *= 0.5;
	return p2 * sum + (p2 - 1.0);
}

int64_t prof_round(double v)
{
	if (v != v)
		return 0;
	if (v >= 9.2e18)
		return INT64_MAX;
	if (v <= -9.2e18)
		return INT64_MIN;
	return v < 0 ? -(int64_t)(-v + 0.5) : (int64_t)(v + 0.5);
}
