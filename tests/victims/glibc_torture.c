// SPDX-License-Identifier: MIT
/* glibc_torture: jemalloc_torture on glibc malloc, for the glibc driver's torture run. */
#define TORTURE_OTHER_ALLOC
#include "jemalloc_torture.c"
