// SPDX-License-Identifier: MIT
/* tcmalloc_victim: alloc_victim linked with -ltcmalloc (gperftools, heap profiler included). */
#include "alloc_victim.c"
