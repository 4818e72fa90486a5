// SPDX-License-Identifier: MIT
/*
 * The freestanding sampler (heapctl-sampler-ff.so), mapped into a target
 * by heapctl itself: for a process with no dlopen (a static binary) or
 * whose loader is not glibc's (musl), where the glibc-built sampler could
 * not be loaded anyway.
 *
 * In one borrow: a memfd made in the target, mapped read-only over the
 * whole span to reserve it, the object's image written from here into the
 * memfd, relocated for that address (the object has R_*_RELATIVE
 * relocations only, checked at build time and again here), and each
 * PT_LOAD mapped from the memfd over the reservation with its own
 * protection, the one holding the state last; .bss beyond the file is
 * anonymous, as ld.so maps it.  A heapctl killed on the way leaves
 * mappings under the sampler's name with no state: the next one takes
 * them out.  Code is mapped from a file read-and-execute
 * at once: nothing writable is ever made executable (PR_SET_MDWE holds).
 * The memfd is closed again; the mappings keep its name, so find.c finds
 * the sampler as it finds a dlopen()ed one.  Nothing runs in the target
 * until heapctl calls the sampler's init.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../sampler/hcs.h"
#include "call.h"
#include "engine.h"
#include "image.h"
#include "inject_int.h"
#include "log.h"

/* the freestanding sampler, built into heapctl (the Makefile's sampler_ff_blob.o) */
extern const unsigned char hc_sampler_ff_so[], hc_sampler_ff_so_end[];

#define R_RELATIVE(m) ((m) == EM_AARCH64 ? 1027u /* R_AARCH64_RELATIVE */ : 8u /* R_X86_64_RELATIVE */)

/* The object's layout: its PT_LOADs, and its RELA table as file offsets. */
struct layout {
	const Elf64_Phdr *load[8];
	unsigned nload;
	uint64_t span;      /* from 0 to the end of the last segment, in pages */
	uint64_t file_span; /* the same, for what the file holds */
	uint64_t rela, relasz;
	uint64_t eh_frame_hdr; /* PT_GNU_EH_FRAME's vaddr, 0 none */
};

static uint64_t up(uint64_t v, uint64_t pg)
{
	return (v + pg - 1) & ~(pg - 1);
}

/* The vaddr range [va, va+len) as a file offset, or UINT64_MAX. */
static uint64_t file_off(const struct layout *l, uint64_t va, uint64_t len)
{
	for (unsigned i = 0; i < l->nload; i++) {
		const Elf64_Phdr *p = l->load[i];

		if (va >= p->p_vaddr && va + len <= p->p_vaddr + p->p_filesz && va + len >= va)
			return p->p_offset + (va - p->p_vaddr);
	}
	return UINT64_MAX;
}

/*
 * Read heapctl's own object; it was checked at build time, so a failure
 * here is heapctl's bug, said as such.
 */
static int parse(const uint8_t *img, size_t len, uint16_t machine, uint64_t pg, struct layout *l,
		 struct hc_err *err)
{
	const Elf64_Ehdr *eh = (const void *)img;
	const Elf64_Phdr *ph;
	const Elf64_Dyn *dyn = NULL;
	size_t ndyn = 0;

	memset(l, 0, sizeof(*l));
	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_machine != machine ||
	    eh->e_phentsize != sizeof(*ph) || eh->e_phoff > len ||
	    (len - eh->e_phoff) / sizeof(*ph) < eh->e_phnum)
		goto bad;
	ph = (const void *)(img + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *p = &ph[i];

		if (p->p_type == PT_LOAD) {
			if (l->nload == 8 || p->p_offset > len || p->p_filesz > len - p->p_offset ||
			    p->p_filesz > p->p_memsz || (p->p_vaddr % pg) != (p->p_offset % pg) ||
			    (l->nload && (p->p_vaddr & ~(pg - 1)) <
						 up(l->load[l->nload - 1]->p_vaddr + l->load[l->nload - 1]->p_memsz, pg)))
				goto bad; /* segments in order, none sharing a page */
			l->load[l->nload++] = p;
			l->span = up(p->p_vaddr + p->p_memsz, pg);
			l->file_span = up(p->p_vaddr + p->p_filesz, pg);
		} else if (p->p_type == PT_DYNAMIC) {
			if (p->p_offset > len || p->p_filesz > len - p->p_offset)
				goto bad;
			dyn = (const void *)(img + p->p_offset);
			ndyn = p->p_filesz / sizeof(*dyn);
		} else if (p->p_type == PT_GNU_EH_FRAME) {
			l->eh_frame_hdr = p->p_vaddr;
		} else if (p->p_type == PT_INTERP || p->p_type == PT_TLS) {
			goto bad;
		}
	}
	if (!l->nload || l->load[0]->p_vaddr != 0 || l->load[0]->p_offset != 0)
		goto bad;
	for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
		switch (dyn[i].d_tag) {
		case DT_RELA:
			l->rela = file_off(l, dyn[i].d_un.d_ptr, 0);
			break;
		case DT_RELASZ:
			l->relasz = dyn[i].d_un.d_val;
			break;
		case DT_NEEDED:
		case DT_JMPREL:
		case DT_REL:
			goto bad;
		}
	}
	if (l->relasz && (l->rela == UINT64_MAX || l->rela > len || l->relasz > len - l->rela))
		goto bad;
	return 0;
bad:
	return err_set(err, HC_E_INTERNAL, 0, "heapctl's freestanding sampler is not an object it can map");
}

/* The image as the memfd holds it: each segment's bytes at its vaddr, relocated for base. */
static uint8_t *image_for(const uint8_t *img, const struct layout *l, uint16_t machine,
			  uint64_t base, struct hc_err *err)
{
	uint8_t *out = calloc(1, l->file_span);

	if (!out)
		return err_set(err, HC_E_NOMEM, ENOMEM, "out of memory"), NULL;
	for (unsigned i = 0; i < l->nload; i++)
		memcpy(out + l->load[i]->p_vaddr, img + l->load[i]->p_offset, l->load[i]->p_filesz);
	for (uint64_t off = 0; off + sizeof(Elf64_Rela) <= l->relasz; off += sizeof(Elf64_Rela)) {
		const Elf64_Rela *r = (const void *)(img + l->rela + off);
		uint64_t v = base + (uint64_t)r->r_addend;

		if (ELF64_R_TYPE(r->r_info) != R_RELATIVE(machine) ||
		    file_off(l, r->r_offset, 8) == UINT64_MAX) {
			free(out);
			return err_set(err, HC_E_INTERNAL, 0, "heapctl's freestanding sampler has a "
				       "relocation it cannot apply (type %u)",
				       (unsigned)ELF64_R_TYPE(r->r_info)), NULL;
		}
		memcpy(out + r->r_offset, &v, 8);
	}
	return out;
}

static int remote_mmap(struct engine *t, uint64_t addr, uint64_t len, int prot, int flags, int64_t fd,
		       uint64_t off, uint64_t *at, struct hc_err *err)
{
	uint64_t a[6] = { addr, len, (uint64_t)prot, (uint64_t)flags, (uint64_t)fd, off };
	int64_t ret;

	if (call_syscall(t, t->img->arch->nr_mmap, a, 6, &ret, err) < 0)
		return -1;
	if (ret < 0 && ret > -4096)
		return err_set(err, HC_E_UNSUPPORTED, (int)-ret, "pid %d refused to map heapctl's sampler "
			       "(mmap: %s)", t->img->pid, strerror((int)-ret));
	if (addr && (flags & MAP_FIXED) && (uint64_t)ret != addr)
		return err_set(err, HC_E_INTERNAL, 0, "mmap in pid %d placed the sampler elsewhere",
			       t->img->pid);
	*at = (uint64_t)ret;
	return 0;
}

void remote_munmap(struct engine *t, uint64_t addr, uint64_t len)
{
	uint64_t a[2] = { addr, len };
	int64_t ret;

	t->cancel_hold++;
	call_syscall(t, t->img->arch->nr_munmap, a, 2, &ret, &(struct hc_err){ 0 });
	t->cancel_hold--;
}

static int prot_of(uint32_t f)
{
	return (f & PF_R ? PROT_READ : 0) | (f & PF_W ? PROT_WRITE : 0) | (f & PF_X ? PROT_EXEC : 0);
}

/* Write the image into heapctl's descriptor of the memfd; it is closed. */
static int fill(struct engine *t, int lfd, const uint8_t *buf, uint64_t len, struct hc_err *err)
{
	uint64_t done = 0;
	int e = 0;

	while (done < len) {
		ssize_t w = pwrite(lfd, buf + done, len - done, (off_t)done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : EIO;
			break;
		}
		done += (uint64_t)w;
	}
	close(lfd);
	return e ? err_set(err, HC_E_IO, e, "cannot write the sampler for pid %d: %s", t->img->pid,
			   strerror(e)) :
		   0;
}

/* Map segment p (its file part, then its .bss beyond the file) over the reservation at base. */
static int map_seg(struct engine *t, const Elf64_Phdr *p, uint64_t base, uint64_t pg, int64_t rfd,
		   struct hc_err *err)
{
	uint64_t lo = p->p_vaddr & ~(pg - 1), fend = up(p->p_vaddr + p->p_filesz, pg);
	uint64_t mend = up(p->p_vaddr + p->p_memsz, pg), at;

	if (fend > lo && remote_mmap(t, base + lo, fend - lo, prot_of(p->p_flags), MAP_PRIVATE | MAP_FIXED,
				     rfd, lo, &at, err) < 0)
		return -1;
	if (mend > fend && remote_mmap(t, base + fend, mend - fend, prot_of(p->p_flags),
				       MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0, &at, err) < 0)
		return -1;
	return 0;
}

/*
 * A sampler a heapctl killed while mapping it left: its mappings, with no
 * state in a writable one (the state's segment is mapped last).  Nothing
 * ever ran in it or pointed at it: taken out, under the per-target lock.
 */
static int take_out_leftover(struct engine *t, const struct layout *l, struct hc_err *err)
{
	struct inj old = { 0 };
	size_t n;
	struct range *r = read_maps(t, &n, &old, err);

	if (!r)
		return -1;
	free_maps(r, n);
	if (!old.base)
		return 0;
	if (find_state(t, &old, err) < 0)
		return -1;
	if (old.state)
		return err_set(err, HC_E_INTERNAL, 0, "pid %d holds heapctl's sampler already",
			       t->img->pid);
	remote_munmap(t, old.base, l->span);
	pr_info("sampler: took out what a heapctl killed while mapping it left at 0x%" PRIx64, old.base);
	return 0;
}

int map_sampler(struct engine *t, struct inj *in, struct hc_err *err)
{
	const uint8_t *img = hc_sampler_ff_so;
	size_t len = (size_t)(hc_sampler_ff_so_end - hc_sampler_ff_so);
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), base = 0, prev = 0;
	uint16_t machine = t->img->arch->e_machine;
	const Elf64_Phdr *state_seg = NULL;
	char why[160] = "";
	struct layout l;
	uint8_t *buf;
	int64_t rfd;
	int lfd, rc;

	if (parse(img, len, machine, pg, &l, err) < 0 || take_out_leftover(t, &l, err) < 0)
		return -1;
	rc = make_memfd(t, HCS_NAME, &rfd, &lfd, why, sizeof(why), err);
	if (rc <= 0)
		return rc < 0 ? -1 : err_sethint(err, HC_E_UNSUPPORTED, 0,
						 "a process that may not create a memfd cannot take "
						 "heapctl's sampler",
						 "pid %d could not map heapctl's sampler: %s", t->img->pid, why);
	/*
	 * The place first, the relocations need it: the whole span mapped
	 * read-only from the memfd (nothing reads it before it is written),
	 * so that whatever a killed heapctl leaves is named as the sampler's,
	 * and found and taken out by the next one.
	 */
	rc = remote_mmap(t, 0, l.span, PROT_READ, MAP_PRIVATE, rfd, 0, &base, err);
	buf = rc < 0 ? NULL : image_for(img, &l, machine, base, err);
	rc = buf ? fill(t, lfd, buf, l.file_span, err) : (close(lfd), -1);
	free(buf);
	/* the segment with the state (found by its magic, in a writable mapping) goes last */
	for (unsigned i = 0; i < l.nload; i++)
		if ((l.load[i]->p_flags & PF_W) && l.load[i]->p_filesz)
			state_seg = l.load[i];
	for (unsigned i = 0; i < l.nload && rc == 0; i++)
		if (l.load[i] != state_seg)
			rc = map_seg(t, l.load[i], base, pg, rfd, err);
	if (rc == 0 && state_seg)
		rc = map_seg(t, state_seg, base, pg, rfd, err);
	/* and what lies between the segments goes back */
	for (unsigned i = 0; i < l.nload && rc == 0; i++) {
		uint64_t lo = l.load[i]->p_vaddr & ~(pg - 1);

		if (lo > prev)
			remote_munmap(t, base + prev, lo - prev);
		prev = up(l.load[i]->p_vaddr + l.load[i]->p_memsz, pg);
	}
	if (close_memfd(t, rfd, err) < 0)
		rc = -1;
	if (rc < 0) {
		if (base)
			remote_munmap(t, base, l.span);
		return -1;
	}
	pr_info("sampler: mapped the freestanding sampler at 0x%" PRIx64 " (%" PRIu64 " KiB)", base,
		l.span / 1024);
	in->loaded_now = true;
	return 0;
}

uint64_t map_eh_frame_hdr(uint16_t machine)
{
	struct layout l;

	return parse(hc_sampler_ff_so, (size_t)(hc_sampler_ff_so_end - hc_sampler_ff_so), machine,
		     (uint64_t)sysconf(_SC_PAGESIZE), &l, &(struct hc_err){ 0 }) < 0 ? 0 : l.eh_frame_hdr;
}
