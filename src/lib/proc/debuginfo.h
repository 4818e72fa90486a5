/* SPDX-License-Identifier: MIT */
/* Symbols from elsewhere: MiniDebugInfo and debuginfod (debuginfo.c). */
#ifndef HC_DEBUGINFO_H
#define HC_DEBUGINFO_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The ELF image in elf's .gnu_debugdata section, decompressed (malloc'ed,
 * *len bytes), or NULL if there is none or it is damaged.
 */
void *mdi_decompress(Elf *elf, size_t *len);

/*
 * Ask the servers in DEBUGINFOD_URLS for the debug file of build_id_hex.
 * Returns an fd and *path (malloc'ed, in the client's cache), or -1 when
 * DEBUGINFOD_URLS is unset, libdebuginfod.so.1 is missing, nothing is found
 * or deadline_ns (0: none) passes first.  what names the object for messages.
 */
int dbgd_find(const char *build_id_hex, const char *what, uint64_t deadline_ns, char **path);

#endif
