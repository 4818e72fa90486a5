// SPDX-License-Identifier: MIT
/*
 * A shared object that reaches the allocator the ways real ones do: calls
 * through the PLT (JUMP_SLOT relocations), function addresses taken
 * through the GOT (GLOB_DAT), C++ operators by their mangled names, and a
 * function and a variable the sampler does not hook.  Built by gen.sh.
 */
#include <stddef.h>

void *malloc(size_t n);
void free(void *p);
void *calloc(size_t n, size_t size);
void *realloc(void *p, size_t n);
int posix_memalign(void **p, size_t align, size_t n);
void *_Znwm(size_t n);
void _ZdlPvm(void *p, size_t n);
size_t strlen(const char *s);
extern int some_flag;

void *grow(void *p, size_t n)
{
	void *q = realloc(p, n);

	if (!q)
		free(p);
	return q;
}

void *zeroed(size_t n)
{
	void *q;

	if (posix_memalign(&q, 64, n))
		return NULL;
	return some_flag ? calloc(1, n) : malloc(n);
}

void *obj_new(const char *s)
{
	void *o = _Znwm(strlen(s));

	_ZdlPvm(o, strlen(s));
	return o;
}

/* addresses of functions: GLOB_DAT */
void *alloc_fn(void)
{
	return (void *)malloc;
}

void *free_fn(void)
{
	return (void *)free;
}
