// SPDX-License-Identifier: MIT
/* tcmalloc_torture: jemalloc_torture linked with -ltcmalloc (gperftools), for its driver. */
#define TORTURE_OTHER_ALLOC
#include "jemalloc_torture.c"
