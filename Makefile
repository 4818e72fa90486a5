# heapctl: one non-recursive Makefile.  Output goes to build/.
#   make            build/heapctl and build/libheapctl.a
#   make deps       install the Debian packages the build and tests need
#   make test       layers, unit + integration suites (ends with "N passed, N failed")
#   make check-layers  only the check that src/lib's layers hold (tests/layers.sh)
#   make install    bin, man page, bash completion (PREFIX=/usr/local, DESTDIR); make uninstall
#   make demo       narrated end-to-end demo on a leaking service
#   make bench      heapctl against gdb, side by side
#   make SAN=1 ...  ASan+UBSan on heapctl itself (victims stay unsanitized)
#   V=1 shows commands; WERROR=0 drops -Werror.

ARCH ?= $(shell uname -m)
ifeq ($(wildcard arch/$(ARCH)/arch.c),)
$(error unsupported ARCH '$(ARCH)': no arch/$(ARCH)/arch.c)
endif

HOST_ARCH := $(shell uname -m)
# Cross builds (make ARCH=aarch64 CROSS_COMPILE=aarch64-linux-gnu-) link
# against a sysroot of Debian's own arm64 packages: make deps-aarch64.
ifneq ($(ARCH),$(HOST_ARCH))
CROSS_COMPILE ?= $(ARCH)-linux-gnu-
# clang, not Debian's gcc-$(ARCH)-linux-gnu: that one conflicts with
# gcc-multilib, which the native lane needs.  Binutils are the cross ones.
CROSS_CC := clang --target=$(ARCH)-linux-gnu
B ?= build-$(ARCH)
SYSROOT ?= $(B)/sysroot
MULTIARCH := $(ARCH)-linux-gnu
ifeq ($(wildcard $(SYSROOT)/usr/lib/$(MULTIARCH)/pkgconfig),)
ifeq ($(filter deps-% clean,$(MAKECMDGOALS)),)
$(error no $(ARCH) sysroot in $(SYSROOT): run 'make deps-$(ARCH)' first)
endif
endif
PKG_CONFIG := PKG_CONFIG_SYSROOT_DIR=$(SYSROOT) \
	PKG_CONFIG_LIBDIR=$(SYSROOT)/usr/lib/$(MULTIARCH)/pkgconfig:$(SYSROOT)/usr/share/pkgconfig \
	pkg-config
# The native gcc build is the warning gate; clang-only diagnostics stay off
# (gcc's own -W flags, -L at compile time, vsnprintf wrappers).  clang emits
# no .debug_aranges unless asked, and the report symbolizer finds CUs by them.
CROSS_FLAGS := -Wno-unknown-warning-option -Wno-unused-command-line-argument -Wno-format-nonliteral \
	-gdwarf-aranges \
	-isystem $(SYSROOT)/usr/include/$(MULTIARCH) -isystem $(SYSROOT)/usr/include \
	-L$(SYSROOT)/usr/lib/$(MULTIARCH) -L$(SYSROOT)/lib/$(MULTIARCH) \
	-Wl,-rpath-link,$(SYSROOT)/usr/lib/$(MULTIARCH):$(SYSROOT)/lib/$(MULTIARCH)
endif
CROSS_COMPILE ?=
CC := $(CROSS_COMPILE)gcc
ifdef CROSS_CC
CC := $(CROSS_CC)
endif
AR := $(CROSS_COMPILE)ar
PKG_CONFIG ?= pkg-config
# Sanitized builds live apart so they never mix with normal objects.
ifeq ($(SAN),1)
B ?= build-san
else
B ?= build
endif

ifeq ($(V),1)
Q :=
msg := @true
else
Q := @
msg := @printf '  %-7s %s\n'
endif

PKGS := libelf libdw libunwind-ptrace libunwind-generic capstone expat
PKG_CFLAGS = $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)
# libmicrohttpd (heapctl serve): its header at build time, the library dlopen()ed
# by serve alone (src/cli/serve_http.c says why it is not linked)
PKGS_DLOPEN := libmicrohttpd
PKG_CFLAGS += $(shell $(PKG_CONFIG) --cflags $(PKGS_DLOPEN) 2>/dev/null)
JE_CFLAGS = $(shell $(PKG_CONFIG) --cflags jemalloc 2>/dev/null)
JE_LIBS = $(shell $(PKG_CONFIG) --libs jemalloc 2>/dev/null)
# tcmalloc victims: linked even though they only reach it through dlsym
TC_LIBS := -Wl,--no-as-needed -ltcmalloc

# src/lib in layers, each of which may include only those below it
# (src/lib/README.md; tests/layers.sh checks it): api.c, alloc, sampler, borrow, proc, base.
LIB_DIRS := src/lib src/lib/alloc src/lib/sampler src/lib/borrow src/lib/proc src/lib/base
LIB_IQUOTE := $(addprefix -iquote ,$(LIB_DIRS))

WARN := -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes \
	-Wold-style-definition -Wimplicit-fallthrough -Wnull-dereference -Wundef -Wvla \
	-Wwrite-strings -Wpointer-arith -Wlogical-op -Wduplicated-cond -Wduplicated-branches
CFLAGS ?= -O2 -g
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARN) -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIC \
	-fvisibility=hidden -MMD -MP -Iinclude $(LIB_IQUOTE) -iquote arch -iquote src/prof
ifneq ($(WERROR),0)
BASE_CFLAGS += -Werror
endif
ifeq ($(SAN),1)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif
ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS) $(SAN_FLAGS) $(PKG_CFLAGS) $(CROSS_FLAGS)
# liblzma: MiniDebugInfo (.gnu_debugdata).  libdebuginfod is dlopen()ed at run
# time (src/lib/proc/debuginfo.c), so heapctl runs without it.
LDLIBS_ALL = $(PKG_LIBS) -llzma -lz -pthread
# The heapctl binary links its libraries statically: a cold start then costs
# ~2 ms of CPU instead of ~4 (no relocation of ten shared objects), which is
# most of a round trip.  libunwind's archives are not PIC, hence -no-pie.
# STATIC=0, or a cross build, links them dynamically.
STATIC ?= $(if $(CROSS_COMPILE),0,1)
ifeq ($(STATIC),1)
HEAPCTL_LIBS = -no-pie -Wl,-Bstatic -ldw -lelf -lunwind-ptrace -lunwind-generic \
	-lunwind-$(ARCH) -lunwind -lcapstone -lexpat -lz -llzma -lbz2 -Wl,-Bdynamic -pthread \
	-Wl,--wrap=sigprocmask
else
HEAPCTL_LIBS = $(LDLIBS_ALL)
endif

LIB_SRCS := $(wildcard $(addsuffix /*.c,$(LIB_DIRS))) $(wildcard src/prof/*.c) arch/x86_64/arch.c arch/x86_64/hook.c \
	arch/aarch64/arch.c arch/aarch64/hook.c
CLI_SRCS := $(wildcard src/cli/*.c)
LIB_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS))
CLI_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(CLI_SRCS))
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRCS))
VICTIM_SRCS := $(wildcard tests/victims/*.c)
VICTIMS := $(patsubst tests/victims/%.c,$(B)/victims/%,$(VICTIM_SRCS))
# LD_AUDIT modules (tests/victims/lib/X.c -> victims/X.so)
VICTIMS += $(patsubst tests/victims/lib/%.c,$(B)/victims/%.so,$(wildcard tests/victims/lib/*.c))
ITEST_SRCS := $(wildcard tests/integration/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(B)/bench/%,$(wildcard bench/*.c))
# demo/leaky.c three ways: plain glibc malloc, jemalloc linked in, static glibc.  Their
# rules name the Makefile too: an older build/demo/leaky was linked with jemalloc.
DEMO_BINS := $(B)/demo/leaky $(B)/demo/leaky-jemalloc $(B)/demo/leaky-static
# Victims, demo and bench targets: plain programs, never sanitized.
VICTIM_CFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -pthread
VICTIM_CFLAGS += $(CROSS_FLAGS)

.PHONY: all deps test check-layers check-unit check-integration demo bench clean format-check
.PHONY: deps-aarch64 check-aarch64 a64-image
all: $(B)/heapctl $(B)/libheapctl.a

$(B)/obj/%.o: %.c
	$(msg) CC $<
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# heapctl's injected sampler (src/sampler): a shared object of its own, never
# sanitized (it runs inside the target), carried inside heapctl as bytes.
SAMPLER := $(B)/sampler/heapctl-sampler.so
SAMPLER_CFLAGS := -std=gnu11 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC -fvisibility=hidden \
	-fasynchronous-unwind-tables -fno-omit-frame-pointer -shared -Wl,-z,nodelete -Wl,-z,now \
	-Wl,-z,relro -Wl,-z,noexecstack $(CROSS_FLAGS)
$(SAMPLER): src/sampler/sampler.c src/sampler/hcs.h
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(SAMPLER_CFLAGS) -o $@ $<
# The freestanding flavour, for musl and static processes: heapctl maps it
# itself and applies its relative relocations, so it may need nothing else
# (sampler.c, sys.h).  The check after the link keeps it so.
SAMPLER_FF := $(B)/sampler/heapctl-sampler-ff.so
SAMPLER_FF_CFLAGS := -std=gnu11 -O2 -DHCS_FREESTANDING -Wall -Wextra -Werror -nostdlib -ffreestanding \
	-fno-builtin -shared -fPIC -fvisibility=hidden -fno-stack-protector -Wl,-z,norelro \
	-Wl,-z,noexecstack -Wl,--no-undefined -fasynchronous-unwind-tables -fno-omit-frame-pointer \
	$(CROSS_FLAGS)
# atomics inline: the outline ones are libgcc's (__aarch64_cas8_acq_rel and kin)
SAMPLER_FF_CFLAGS += $(if $(filter aarch64,$(ARCH)),-mno-outline-atomics)
$(SAMPLER_FF): src/sampler/sampler.c src/sampler/hcs.h src/sampler/sys.h src/sampler/unwind.c
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(SAMPLER_FF_CFLAGS) -o $@.tmp $<
	$(Q)tools/check-ff-sampler.sh '$(READELF)' $@.tmp && mv $@.tmp $@
SAMPLER_SECT := $(if $(filter aarch64,$(ARCH)),%progbits,@progbits)
# name, file: the bytes of file between name and name_end, in .rodata
sampler_blob = printf '\t.section .rodata\n\t.balign 16\n\t.globl %s\n\t.hidden %s\n%s:\n\t.incbin "%s"\n\t.globl %s_end\n\t.hidden %s_end\n%s_end:\n\t.section .note.GNU-stack,"",%s\n' \
	$(1) $(1) $(1) '$(2)' $(1) $(1) $(1) '$(SAMPLER_SECT)' | $(CC) $(CROSS_FLAGS) -c -x assembler -o $@ -
$(B)/obj/sampler_blob.o: $(SAMPLER)
	$(msg) AS $@
	@mkdir -p $(dir $@)
	$(Q)$(call sampler_blob,hc_sampler_so,$(SAMPLER))
$(B)/obj/sampler_ff_blob.o: $(SAMPLER_FF)
	$(msg) AS $@
	@mkdir -p $(dir $@)
	$(Q)$(call sampler_blob,hc_sampler_ff_so,$(SAMPLER_FF))
LIB_OBJS += $(B)/obj/sampler_blob.o $(B)/obj/sampler_ff_blob.o

$(B)/libheapctl.a: $(LIB_OBJS)
	$(msg) AR $@
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# heapctl --version names the git revision it was built from (tools/gen-version.sh):
# checked on every make, rewritten only when it changes; "unknown" from a tarball.
.PHONY: FORCE
$(B)/gen/hc_version.h: FORCE
	$(Q)tools/gen-version.sh . $@
$(B)/obj/src/cli/main.o: $(B)/gen/hc_version.h
$(B)/obj/src/cli/main.o: ALL_CFLAGS += -iquote $(B)/gen

$(B)/heapctl: $(CLI_OBJS) $(B)/libheapctl.a
	$(msg) LD $@
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(CLI_OBJS) $(B)/libheapctl.a $(HEAPCTL_LIBS)

$(B)/tests/%: tests/unit/%.c $(B)/libheapctl.a
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libheapctl.a $(LDLIBS_ALL)

# test_arch: what both backends are asked alike, and each backend's own file (tests/unit/arch)
$(B)/tests/test_arch: tests/unit/test_arch.c $(wildcard tests/unit/arch/*.[ch]) $(B)/libheapctl.a
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^) $(B)/libheapctl.a $(LDLIBS_ALL)

# test_unwind: the freestanding sampler's unwinder against libgcc's, test_ffsampler: that
# sampler mapped as heapctl maps it; both from callers built without frame pointers (their
# object apart, so its flags hold whatever CFLAGS say)
$(B)/tests/unwind-chain.o: tests/unit/unwind/chain.c tests/unit/unwind/chain.h
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -O2 -fomit-frame-pointer $(UNWIND_CHAIN_FLAGS) -c -o $@ $<
# arm64: signed return addresses too, as distributions build (DW_CFA_AARCH64_negate_ra_state)
UNWIND_CHAIN_FLAGS := $(if $(filter aarch64,$(ARCH)),-mbranch-protection=standard)
$(B)/tests/test_unwind: tests/unit/test_unwind.c $(B)/tests/unwind-chain.o src/sampler/unwind.c \
		src/sampler/hcs.h
	$(msg) CC $@
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/tests/unwind-chain.o $(LDLIBS_ALL)
$(B)/tests/test_ffsampler: tests/unit/test_ffsampler.c $(B)/tests/unwind-chain.o $(B)/libheapctl.a
	$(msg) CC $@
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/tests/unwind-chain.o $(B)/libheapctl.a $(LDLIBS_ALL)

# the same, as a static musl program, with the .eh_frame_hdr gcc leaves out of static links
# (x86_64, where musl-gcc is installed; without it the test is not built)
ifeq ($(ARCH)$(shell command -v musl-gcc >/dev/null 2>&1 && echo y),x86_64y)
UNIT_BINS += $(B)/tests/test_ffsampler_musl
$(B)/tests/test_ffsampler_musl: tests/unit/test_ffsampler.c tests/unit/unwind/chain.c \
		tests/unit/unwind/chain.h tests/unit/unit.h src/sampler/hcs.h $(B)/obj/sampler_ff_blob.o
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)musl-gcc -static -Wl,--eh-frame-hdr -std=gnu11 -O2 -fomit-frame-pointer -Wall -Wextra \
		-Werror -pthread -iquote tests/unit -o $@ tests/unit/test_ffsampler.c \
		tests/unit/unwind/chain.c $(B)/obj/sampler_ff_blob.o
endif

# callers.c unwinds heapctl from outside, as heapctl unwinds its targets
ITEST_UNW_CFLAGS = $(shell $(PKG_CONFIG) --cflags libunwind-ptrace libunwind-generic 2>/dev/null)
ITEST_UNW_LIBS = $(shell $(PKG_CONFIG) --libs libunwind-ptrace libunwind-generic 2>/dev/null)
$(B)/tests/itest: $(ITEST_SRCS)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) $(ITEST_UNW_CFLAGS) -Werror -o $@ $(ITEST_SRCS) $(ITEST_UNW_LIBS)

# victims share headers, and some include another's source (plain_victim.c)
$(filter-out %.so,$(VICTIMS)): $(wildcard tests/victims/*.h) $(VICTIM_SRCS)

$(B)/victims/%: tests/victims/%.c
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -Werror -o $@ $< $(if $(findstring jemalloc,$*),$(JE_CFLAGS) $(JE_LIBS)) \
		$(if $(findstring tcmalloc,$*),$(TC_LIBS))

$(B)/victims/%.so: tests/victims/lib/%.c
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -Werror -shared -fPIC -o $@ $<

# Victims that #include another victim's source, or the shared headers.
# jemalloc_victim and the torture victims share their parked threads (vthreads.h).
JE_VICTIM_SRCS := tests/victims/jemalloc_victim.c tests/victims/vthreads.h tests/victims/vcommon.h \
	tests/victims/vregs.h
TORTURE_SRCS := tests/victims/jemalloc_torture.c tests/victims/vthreads.h tests/victims/vcommon.h \
	tests/victims/vregs.h
$(B)/victims/tcmalloc_victim $(B)/victims/alloc_victim $(B)/victims/mimalloc_victim: \
	tests/victims/alloc_victim.c tests/victims/plain_victim.c tests/victims/vcommon.h
# mimalloc_victim linked with mimalloc (DT_NEEDED) instead of preloaded; the library's own
# file, so that the runtime package (libmimalloc2.0) is all it needs
VICTIMS += $(B)/victims/mimalloc_linked
$(B)/victims/mimalloc_linked: tests/victims/mimalloc_victim.c tests/victims/alloc_victim.c \
		tests/victims/plain_victim.c tests/victims/vcommon.h
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -Werror -o $@ $< -Wl,--no-as-needed -l:libmimalloc.so.2
$(B)/victims/jemalloc_victim: $(JE_VICTIM_SRCS)
# attack_victim stripped, with a debug link to attack.debug, a file it does not ship (t_attack.c)
VICTIMS += $(B)/victims/attack_victim_dl
# and a sign of jemalloc in it, so that heapctl looks for its symbols there
$(B)/victims/attack_victim_dl: tests/victims/attack_victim.c tests/victims/vcommon.h
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)d=$$(mktemp -d) && : > $$d/attack.debug && \
	$(CC) $(VICTIM_CFLAGS) -DATTACK_SIGN -Werror -o $$d/full $< && \
	$(OBJCOPY) --strip-all --add-gnu-debuglink=$$d/attack.debug $$d/full $@; rc=$$?; \
	rm -rf $$d; exit $$rc
$(B)/victims/jemalloc_torture $(B)/victims/glibc_torture $(B)/victims/tcmalloc_torture: \
	$(TORTURE_SRCS)
# glibc_torture linked -static: heapctl hooks its malloc inline (t_torture.c)
VICTIMS += $(B)/victims/glibc_torture_static
$(B)/victims/glibc_torture_static: tests/victims/glibc_torture.c $(TORTURE_SRCS)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -Werror -static -o $@ $<

# libc_leak.c against each C library heapctl must name (tests/integration/t_musl.c):
# glibc -static and -static-pie, and musl, dynamic and -static.  The musl ones need
# musl-gcc (musl-tools) natively, or the sysroot's musl and musl-dev in a cross build
# (tools/aarch64-sysroot.sh); without them they are not built, and their tests skip,
# saying why.  The cross musl build is what musl-gcc.specs does by hand: musl's headers
# instead of glibc's, its crt files and libc, and its loader as the interpreter; -lc, so
# that DT_NEEDED is the bare "libc.so" musl's loader takes for itself (it has no SONAME).
LIBC_LEAK_SRCS := tests/victims/libc_leak.c tests/victims/vcommon.h
GLIBC_STATIC_VICTIMS := $(B)/victims/glibc_leak_static $(B)/victims/glibc_leak_static_pie \
	$(B)/victims/glibc_leak_static_stripped
MUSL_VICTIMS := $(B)/victims/musl_leak $(B)/victims/musl_leak_static
MUSL_CFLAGS := -std=gnu11 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -pthread
ifdef CROSS_CC
MUSL_LIB := $(SYSROOT)/usr/lib/$(ARCH)-linux-musl
MUSL_SO := $(SYSROOT)/lib/$(ARCH)-linux-musl/libc.so
HAVE_MUSL := $(wildcard $(MUSL_LIB)/libc.a)
# no outline atomics: their helpers are libgcc's glibc build
MUSL_CROSS := $(CROSS_CC) $(MUSL_CFLAGS) -Wno-unused-command-line-argument -gdwarf-aranges \
	-mno-outline-atomics -nostdinc -isystem $(SYSROOT)/usr/include/$(ARCH)-linux-musl \
	-isystem $(shell $(CROSS_CC) -print-resource-dir 2>/dev/null)/include -nostdlib
MUSL_LIBGCC := $(shell $(CROSS_CC) -print-libgcc-file-name 2>/dev/null)
else
MUSL_CC ?= musl-gcc
HAVE_MUSL := $(shell command -v $(MUSL_CC) 2>/dev/null)
endif
VICTIMS += $(GLIBC_STATIC_VICTIMS) $(if $(HAVE_MUSL),$(MUSL_VICTIMS))

# -O2 without frame pointers: the sampler's stacks come from the CFI alone
$(B)/victims/glibc_leak_static: $(LIBC_LEAK_SRCS)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -O2 -fomit-frame-pointer -Werror -static -o $@ $<
# no symbols at all: heapctl must refuse to hook it, never guess
$(B)/victims/glibc_leak_static_stripped: $(B)/victims/glibc_leak_static
	$(msg) STRIP $@
	$(Q)$(CROSS_COMPILE)strip --strip-all -o $@ $<
$(B)/victims/glibc_leak_static_pie: $(LIBC_LEAK_SRCS)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -Werror -static-pie -o $@ $<
ifdef CROSS_CC
$(B)/victims/musl_leak: $(LIBC_LEAK_SRCS)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(MUSL_CROSS) -fPIE -pie -Wl,-dynamic-linker,/lib/ld-musl-$(ARCH).so.1 -o $@ \
		$(MUSL_LIB)/Scrt1.o $(MUSL_LIB)/crti.o $< -L$(dir $(MUSL_SO)) -lc $(MUSL_LIBGCC) \
		$(MUSL_LIB)/crtn.o
$(B)/victims/musl_leak_static: $(LIBC_LEAK_SRCS)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(MUSL_CROSS) -static -o $@ $(MUSL_LIB)/crt1.o $(MUSL_LIB)/crti.o $< \
		$(MUSL_LIB)/libc.a $(MUSL_LIBGCC) $(MUSL_LIB)/crtn.o
else
$(B)/victims/musl_leak: $(LIBC_LEAK_SRCS)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(MUSL_CC) $(MUSL_CFLAGS) -o $@ $<
$(B)/victims/musl_leak_static: $(LIBC_LEAK_SRCS)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(MUSL_CC) $(MUSL_CFLAGS) -O2 -fomit-frame-pointer -static -o $@ $<
endif

# the floor, and with --paired heapctl's own borrow beside it (the library)
$(B)/bench/floor: bench/floor.c $(B)/libheapctl.a
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libheapctl.a $(HEAPCTL_LIBS)

$(B)/bench/%: bench/%.c
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -o $@ $< $(JE_CFLAGS) $(JE_LIBS)

# glibc malloc, hooked or not by heapctl's sampler (mtloop: jemalloc by LD_PRELOAD);
# restart: the launcher that times a start until the program says it is ready
$(B)/bench/mallocloop $(B)/bench/mtloop $(B)/bench/restart: $(B)/bench/%: bench/%.c
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -O2 -o $@ $<

# The same two loops as static glibc programs and as musl ones, dynamic and static,
# for the inline hooks and the freestanding sampler (bench/libc.sh).  Without
# musl-gcc the musl ones are not built, and bench/libc.sh says so.
BENCH_LIBC_SRCS := bench/mallocloop.c bench/mtloop.c
BENCH_GLIBC_STATIC := $(patsubst bench/%.c,$(B)/bench/%_static,$(BENCH_LIBC_SRCS))
BENCH_MUSL := $(patsubst bench/%.c,$(B)/bench/%_musl,$(BENCH_LIBC_SRCS)) \
	$(patsubst bench/%.c,$(B)/bench/%_musl_static,$(BENCH_LIBC_SRCS))
BENCH_BINS += $(BENCH_GLIBC_STATIC)
$(BENCH_GLIBC_STATIC): $(B)/bench/%_static: bench/%.c
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -O2 -static -o $@ $<
ifeq ($(CROSS_CC),)
ifneq ($(HAVE_MUSL),)
BENCH_BINS += $(BENCH_MUSL)
$(filter %_musl,$(BENCH_MUSL)): $(B)/bench/%_musl: bench/%.c
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(MUSL_CC) $(MUSL_CFLAGS) -O2 -o $@ $<
$(filter %_musl_static,$(BENCH_MUSL)): $(B)/bench/%_musl_static: bench/%.c
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(MUSL_CC) $(MUSL_CFLAGS) -O2 -static -o $@ $<
else
BENCH_MUSL_WHY := $(MUSL_CC) not found (musl-tools)
endif
else
BENCH_MUSL_WHY := cross build ($(ARCH)): no musl bench programs
endif

$(B)/demo/leaky: demo/leaky.c Makefile
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -o $@ $<

$(B)/demo/leaky-jemalloc: demo/leaky.c Makefile
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -o $@ $< $(JE_CFLAGS) $(JE_LIBS)

$(B)/demo/leaky-static: demo/leaky.c Makefile
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -static -o $@ $<

# Debian packages; apt runs only when something is missing.
DEB_PKGS := gcc libc6-dev make pkg-config libelf-dev libdw-dev libunwind-dev libcapstone-dev zlib1g-dev libbz2-dev liblzma-dev \
	libdebuginfod-dev libdebuginfod1 debuginfod xz-utils \
	libjemalloc-dev libseccomp-dev redis-server redis-tools gdb strace prometheus-node-exporter \
	libexpat1-dev libgoogle-perftools-dev libtcmalloc-minimal4 libmimalloc2.0 libmimalloc-dev \
	memcached mariadb-server mariadb-client \
	libdevel-nytprof-perl chromium golang-go golang-github-google-pprof-dev python3 musl-tools \
	libmicrohttpd-dev libmicrohttpd12 prometheus
deps:
	@missing=$$(for p in $(DEB_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
		grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "  DEPS    installing:" $$missing; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

# arm64: the suite inside Debian's arm64 cloud kernel under qemu-system-aarch64
# (docs/aarch64.md).  A64_ARGS go to the guest, e.g. A64_ARGS=ITEST_FILTER=tid.
A64_B := build-aarch64
# The fixtures (static, prefixed, stripped, MiniDebugInfo) go into the guest too, made from
# the sysroot's archives and the lane's own --enable-prof jemalloc; A64_FIXTURES= leaves them
# out (their tests then skip, saying so), which saves about three minutes under TCG.
A64_FIXTURES ?= 1
deps-aarch64:
	@tools/aarch64-deps.sh $(A64_B)

check-aarch64: deps-aarch64
	@$(MAKE) --no-print-directory ARCH=aarch64 B=$(A64_B) A64_FIXTURES=$(A64_FIXTURES) a64-image
	@tests/aarch64/run-qemu.sh $(A64_B)/Image $(A64_B)/initramfs.cpio.gz $(A64_B)/console.log \
		$(A64_ARGS)

ifeq ($(ARCH),aarch64)
# arm64-only victims: built like distribution code (-mbranch-protection=standard).
A64_VICTIMS := $(patsubst tests/aarch64/%.c,$(B)/victims/%,$(wildcard tests/aarch64/*_victim.c))

$(B)/victims/%: tests/aarch64/%.c tests/victims/vcommon.h
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -mbranch-protection=standard -fno-optimize-sibling-calls \
		-Werror -o $@ $< $(JE_CFLAGS) $(JE_LIBS)

$(B)/victims/jemalloc_victim: tests/aarch64/regs_a64.h

$(B)/a64/a64-exit: tests/aarch64/a64-exit.c
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) -std=gnu11 -O2 -Wall -Wextra -Werror -static -o $@ $<

a64-image: all $(UNIT_BINS) $(VICTIMS) $(A64_VICTIMS) $(B)/tests/itest $(B)/a64/a64-exit
	$(msg) CPIO $(B)/initramfs.cpio.gz
	$(Q)CROSS_COMPILE=$(CROSS_COMPILE) tests/aarch64/mkinitramfs.sh $(B) $(B)/initramfs.cpio.gz
endif

# src/lib's layers: no include or call from a layer above, no include cycle (also in make test)
check-layers: $(B)/libheapctl.a
	@tests/layers.sh . $(B)

check-unit: $(B)/heapctl $(UNIT_BINS)
	@tests/run-unit.sh $(B) $(UNIT_BINS)

check-integration: $(B)/heapctl $(VICTIMS) $(B)/tests/itest
	@HEAPCTL=$(B)/heapctl VICTIM_DIR=$(B)/victims $(B)/tests/itest

test: deps
	@$(MAKE) --no-print-directory all $(UNIT_BINS) $(REPLAY_BINS) $(VICTIMS) $(B)/tests/itest
	@tests/run-all.sh $(B) $(UNIT_BINS) $(REPLAY_BINS)

# Installation: the binary, its man page and its bash completion.
#   make install [PREFIX=/usr/local] [DESTDIR=/staging]    make uninstall (same vars)
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
INSTALL ?= install
.PHONY: install uninstall check-install
install: $(B)/heapctl
	$(msg) INSTALL $(DESTDIR)$(PREFIX)
	$(Q)$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR)
	$(Q)$(INSTALL) -m 755 $(B)/heapctl $(DESTDIR)$(BINDIR)/heapctl
	$(Q)$(INSTALL) -m 644 docs/heapctl.1 $(DESTDIR)$(MANDIR)/man1/heapctl.1
	$(Q)$(INSTALL) -m 644 completions/heapctl.bash $(DESTDIR)$(BASHCOMPDIR)/heapctl

uninstall:
	$(msg) RM $(DESTDIR)$(PREFIX)
	$(Q)rm -f $(DESTDIR)$(BINDIR)/heapctl $(DESTDIR)$(MANDIR)/man1/heapctl.1 \
		$(DESTDIR)$(BASHCOMPDIR)/heapctl

# Real programs written elsewhere, profiled while they serve (tests/real/):
# redis-server linked with musl (dynamic and static), busybox httpd and
# bash, static and unstripped, all from Debian's source packages (apt-get
# source), built into $(B)/real/ (a few minutes: never by 'make test').
# check-real skips what is not built, saying how to build it.
.PHONY: real-redis-musl real-programs check-real
real-redis-musl:
	REAL_DIR=$(abspath $(B))/real tests/real/build.sh redis
real-programs:
	REAL_DIR=$(abspath $(B))/real tests/real/build.sh redis busybox bash
check-real: $(B)/heapctl
	HEAPCTL=$(abspath $(B))/heapctl REAL_DIR=$(abspath $(B))/real tests/real/static-programs.sh

# Man page and completion against --help, --version, install/uninstall (tests/install/).
check-install: $(B)/heapctl
	@tests/install/run.sh $(B)

demo: deps
	@$(MAKE) --no-print-directory all $(DEMO_BINS)
	@demo/run.sh $(B)

# heapctl against gdb (attach, pauses, stalls, scaling), then report against jeprof, the
# sampler against the others and per C library (bench/libc.sh), leak accuracy, and
# a serve scrape against stats --format prometheus per target (bench/serve.sh).
bench: deps
	@$(MAKE) --no-print-directory all $(BENCH_BINS) $(B)/victims/leak_rate
	@bench/run.sh $(B)
	@bench/report.sh $(B)
	@bench/sampler.sh $(B)
	@BENCH_MUSL_WHY='$(BENCH_MUSL_WHY)' bench/libc.sh $(B)
	@bench/accuracy.sh $(B)
	@bench/serve.sh $(B)

format-check:
	@git diff -U0 --no-color origin/main -- '*.c' '*.h' 2>/dev/null | \
		clang-format-diff -p1 | (! grep -q .) || \
		{ echo "format-check: run clang-format on the changed lines"; exit 1; }

clean:
	rm -rf $(B)

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

# heapctl report against jeprof --collapse on a redis profile and a
# synthetic 100k-stack one: time and peak memory of both (bench/report.sh).
.PHONY: report-bench
report-bench: deps
	@$(MAKE) --no-print-directory all
	@bench/report.sh $(B)
	@bench/sampler.sh $(B)

# ---- Hardening suites: fixtures, torture, fuzzing --------------------------------
# tests/integration/t_hostile.c, t_kill.c, t_torture.c run in `make test` at a
# bounded size; `make torture` runs the big kill suite and torture.
DEB_PKGS += gcc-multilib clang libclang-rt-14-dev binutils util-linux groff-base
# The archives the fixtures link in: Debian's, of the host or of the arm64 sysroot.
ifdef CROSS_CC
FX_LIBDIR := $(SYSROOT)/usr/lib/$(MULTIARCH)
else
FX_LIBDIR := /usr/lib/$(HOST_ARCH)-linux-gnu
endif
# arm64: the lane's own --enable-prof build (tools/aarch64-jemalloc-prof.sh); Debian's has no prof
JE_PIC ?= $(if $(CROSS_CC),$(B)/jemalloc-prof/libjemalloc_pic.a,$(FX_LIBDIR)/libjemalloc_pic.a)
JE_STATIC ?= $(FX_LIBDIR)/libjemalloc.a
NM := $(CROSS_COMPILE)nm
OBJCOPY := $(CROSS_COMPILE)objcopy
STRIP := $(CROSS_COMPILE)strip
READELF := $(CROSS_COMPILE)readelf
# the arm64 sysroot has Debian's libstdc++6 (the runtime), not its -dev
FX_CXXLIB := $(if $(CROSS_CC),-l:libstdc++.so.6,-lstdc++)
# fx_idle32, a 32-bit program, is x86_64's alone
FIXTURES := $(if $(filter x86_64,$(ARCH)),$(B)/victims/fx_idle32) $(B)/victims/fx_jemalloc_static \
	$(B)/victims/fx_jemalloc_je $(B)/victims/fx_jemalloc_rjem $(B)/victims/fx_jemalloc_dbg \
	$(B)/victims/fx_jemalloc_mdi $(B)/victims/fx_jemalloc_nodbg \
	$(B)/victims/fx_jemalloc_plain $(B)/victims/fx_jemalloc_rjem_stripped \
	$(B)/victims/fx_jemalloc_static_stripped $(B)/victims/fx_jemalloc_plain_stripped \
	$(B)/victims/fx_tcmalloc_static $(B)/victims/fx_tcmalloc_static_stripped \
	$(B)/victims/fx_tcmalloc_prof_stripped $(B)/victims/fx_jemalloc_rjem_noshdr
# `make torture` knobs: TORTURE_OPS operations per allocator driver (jemalloc, glibc,
# tcmalloc), KILLS random kills of heapctl (TORTURE_KILL_RUNS is the old name).
# The per-test watchdog grows with them (about a second per operation or kill, at least).
# SERVE_ABUSE_SECS: how long serve-abuse-rate scrapes at 1,000 a second (make test: 8).
TORTURE_KILL_RUNS ?= 10000
KILLS ?= $(TORTURE_KILL_RUNS)
TORTURE_OPS ?= 100000
SERVE_ABUSE_SECS ?= 30
.PHONY: fixtures torture
test check-integration: fixtures
fixtures: $(FIXTURES)
ifeq ($(ARCH),aarch64)
ifdef A64_FIXTURES
a64-image: $(FIXTURES)
endif
endif

$(B)/victims/fx_idle32: tests/fixtures/idle32.c
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) -m32 -O1 -Wall -o $@ $<

# .symtab only: a static binary with jemalloc linked in (glibc's dlopen warning is moot here)
$(B)/victims/fx_jemalloc_static: $(JE_VICTIM_SRCS)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -static -o $@ $< $(JE_STATIC) -lm -ldl 2>&1 | \
		grep -v "statically linked applications requires" | grep -v "in function" || true
	@test -x $@

# Debian's PIC archive with every symbol it defines renamed PREFIX+name; references to libc stay.
$(B)/fixtures/libjemalloc_%.a: $(JE_PIC)
	$(msg) OBJCOPY $@
	@mkdir -p $(dir $@)
	$(Q)$(NM) -g --defined-only $< | awk 'NF == 3 && $$2 ~ /^[TDBRVWiu]$$/ { print $$3 " $*" $$3 }' | \
		sort -u >$@.map
	$(Q)$(OBJCOPY) --redefine-syms=$@.map $< $@

$(B)/victims/fx_jemalloc_%: $(JE_VICTIM_SRCS) tests/fixtures/prefix.h \
		$(B)/fixtures/libjemalloc_%.a
	$(msg) CC $@
	$(Q)$(CC) $(VICTIM_CFLAGS) -include tests/fixtures/prefix.h -DJE_PFX=$* -o $@ $< \
		$(B)/fixtures/libjemalloc_$*.a -lm -ldl

$(B)/victims/fx_jemalloc_je: $(B)/victims/fx_jemalloc_je_
	$(Q)cp $< $@
$(B)/victims/fx_jemalloc_rjem: $(B)/victims/fx_jemalloc__rjem_
	$(Q)cp $< $@

# Symbols only in a separate file named by .gnu_debuglink, next to the binary.
$(B)/victims/fx_jemalloc_dbg: $(B)/victims/fx_jemalloc_rjem
	$(msg) STRIP $@
	$(Q)$(OBJCOPY) --only-keep-debug $< $@.debug
	$(Q)$(OBJCOPY) --strip-all --add-gnu-debuglink=$@.debug $< $@

# Symbols only in .gnu_debugdata, as Fedora's find-debuginfo makes MiniDebugInfo:
# the function symbols .dynsym lacks, in an xz-compressed ELF added to the stripped binary.
$(B)/victims/fx_jemalloc_mdi: $(B)/victims/fx_jemalloc_rjem
	$(msg) MINIDBG $@
	$(Q)$(NM) -D --format=posix --defined-only $< | awk '{ print $$1 }' | sort >$@.dynsyms
	$(Q)$(NM) --format=posix --defined-only $< | awk '$$2 ~ /^[Tt]$$/ { print $$1 }' | sort >$@.funcsyms
	$(Q)comm -13 $@.dynsyms $@.funcsyms >$@.keep
	$(Q)$(OBJCOPY) --only-keep-debug $< $@.full
	$(Q)$(OBJCOPY) -S --remove-section .gdb_index --remove-section .comment \
		--keep-symbols=$@.keep $@.full $@.mini
	$(Q)rm -f $@.mini.xz && xz $@.mini
	$(Q)$(OBJCOPY) --strip-all $< $@.tmp
	$(Q)$(OBJCOPY) --add-section .gnu_debugdata=$@.mini.xz $@.tmp $@
	$(Q)rm -f $@.dynsyms $@.funcsyms $@.keep $@.full $@.mini.xz $@.tmp

# Stripped, no link to its symbols: its debug file sits in a build-id tree
# (fixtures/debugroot, mounted over /usr/lib/debug by t_syms) and alone in
# fixtures/debuginfod (what t_syms's debuginfod serves).
$(B)/victims/fx_jemalloc_nodbg: $(B)/victims/fx_jemalloc_rjem
	$(msg) STRIP $@
	$(Q)rm -rf $(B)/fixtures/debugroot $(B)/fixtures/debuginfod
	$(Q)mkdir -p $(B)/fixtures/debuginfod
	$(Q)$(OBJCOPY) --only-keep-debug $< $(B)/fixtures/debuginfod/fx_jemalloc_nodbg.debug
	$(Q)id=$$($(READELF) -n $< | awk '/Build ID:/ { print $$3 }'); test -n "$$id" && \
		mkdir -p $(B)/fixtures/debugroot/.build-id/$${id%"$${id#??}"} && \
		cp $(B)/fixtures/debuginfod/fx_jemalloc_nodbg.debug \
			$(B)/fixtures/debugroot/.build-id/$${id%"$${id#??}"}/$${id#??}.debug
	$(Q)$(OBJCOPY) --strip-all $< $@

# A dynamic executable with Debian's jemalloc linked in unprefixed: it serves malloc itself.
$(B)/victims/fx_jemalloc_plain: $(JE_VICTIM_SRCS) $(JE_PIC)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -o $@ $< $(JE_PIC) -lm -ldl

# Stripped as Cargo's strip = "symbols" or packaging does, with no debug file anywhere:
# only the allocator's strings in .rodata are left (tests/integration/t_evidence.c).
$(B)/victims/fx_%_stripped: $(B)/victims/fx_%
	$(msg) STRIP $@
	$(Q)$(STRIP) --strip-all -o $@ $<

# Stripped, and without section headers as sstrip leaves it: e_shoff, e_shnum, e_shstrndx zeroed.
$(B)/victims/fx_jemalloc_rjem_noshdr: $(B)/victims/fx_jemalloc_rjem_stripped
	$(msg) NOSHDR $@
	$(Q)cp $< $@.tmp
	$(Q)dd if=/dev/zero of=$@.tmp bs=1 seek=40 count=8 conv=notrunc status=none
	$(Q)dd if=/dev/zero of=$@.tmp bs=1 seek=60 count=4 conv=notrunc status=none
	$(Q)mv $@.tmp $@

# gperftools' tcmalloc_minimal linked in from its archive: the executable serves malloc.
TC_MIN_STATIC ?= $(FX_LIBDIR)/libtcmalloc_minimal.a
$(B)/victims/fx_tcmalloc_static: tests/victims/tcmalloc_victim.c tests/victims/alloc_victim.c \
		tests/victims/plain_victim.c tests/victims/vcommon.h $(TC_MIN_STATIC)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -o $@ $< $(TC_MIN_STATIC) $(FX_CXXLIB) -lm -ldl

# The full tcmalloc (heap profiler kept with -u) linked in, stripped: its symbols, the
# profiler's FLAGS_* variables among them, only in fx_tcmalloc_prof_stripped.debug.
TC_STATIC ?= $(FX_LIBDIR)/libtcmalloc.a
TC_PROF_FNS := -Wl,-u,HeapProfilerStart,-u,HeapProfilerStop,-u,IsHeapProfilerRunning,-u,GetHeapProfile
$(B)/victims/fx_tcmalloc_prof_stripped: tests/victims/tcmalloc_victim.c tests/victims/alloc_victim.c \
		tests/victims/plain_victim.c tests/victims/vcommon.h $(TC_STATIC)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(VICTIM_CFLAGS) -o $@.full $< $(TC_PROF_FNS) $(TC_STATIC) -lunwind $(FX_CXXLIB) -lm -ldl
	$(Q)$(OBJCOPY) --only-keep-debug $@.full $@.debug
	$(Q)$(OBJCOPY) --strip-all $@.full $@
	$(Q)rm -f $@.full

torture: deps
	@$(MAKE) --no-print-directory all $(VICTIMS) $(FIXTURES) $(B)/tests/itest
	@HEAPCTL=$(B)/heapctl VICTIM_DIR=$(B)/victims ITEST_FILTER=kill-suite \
		ITEST_KILL_RUNS=$(KILLS) ITEST_TEST_TIMEOUT=$$(( $(KILLS) * 2 + 900 )) \
		$(B)/tests/itest; k=$$?; \
	HEAPCTL=$(B)/heapctl VICTIM_DIR=$(B)/victims ITEST_FILTER=torture \
		ITEST_TORTURE_OPS=$(TORTURE_OPS) ITEST_TEST_TIMEOUT=$$(( $(TORTURE_OPS) + 900 )) \
		$(B)/tests/itest; t=$$?; \
	HEAPCTL=$(B)/heapctl VICTIM_DIR=$(B)/victims ITEST_FILTER=serve-abuse-rate \
		ITEST_SERVE_ABUSE_SECS=$(SERVE_ABUSE_SECS) \
		$(B)/tests/itest && [ $$k = 0 ] && [ $$t = 0 ]

# libFuzzer targets (tests/fuzz/fuzz_NAME.c): every parser of what a target
# controls (its memory, files, /proc text, profiles, symbol names) and the
# report pipeline; docs/security.md lists them.
#   make fuzz [FUZZ_SECONDS=30] [FUZZ_TARGETS="seccomp elf"]     needs clang
#   nice -n 19 make fuzz FUZZ_RUNS=10000000 [FUZZ_FRESH=1]      the long run
# Each target first replays tests/fuzz/regress/NAME (inputs that once failed),
# then runs FUZZ_SECONDS (or FUZZ_RUNS inputs) over its seeds
# (tests/fuzz/corpus/NAME) and the corpus it grew before ($(B)/fuzz/corpus-NAME;
# FUZZ_FRESH=1 starts it over), one target at a time, and the first crash,
# leak, hang or sanitizer report fails the run.  Each PASS line says how many
# inputs ran, in how long.  Inputs are at most 64 KiB, but FUZZ_MAXLEN's: maps'
# 8 KiB (its parsers work line by line, with no limit above PATH_MAX),
# glxml's 16 KiB (element by element; 1,025 heaps, past GL_MAX_ARENAS, fit in
# 15 KiB, as its seed many-arenas shows); longer inputs only make each run
# slower, covering nothing more.  The code under
# test is built apart, in $(B)/fuzzobj, with coverage and ASan/UBSan; only the
# target itself links libFuzzer's main.  Targets reach the library through its
# own (internal) headers, never by #including a .c file.
#
# `make test` replays the same regression inputs and seeds through each
# target without clang: $(B)/fuzz-replay/NAME is the target built with gcc,
# ASan and UBSan, around tests/fuzz/replay.c (prints PASS/FAIL fuzz-replay-NAME).
FUZZ_TARGETS ?= seccomp elf maps status text prof demangle got tcprof glxml evidence linkmap sampler \
	hook ehhdr query
FUZZ_SECONDS ?= $(or $(ENGINE_FUZZ_SECONDS),30)
FUZZ_RUNS ?=
FUZZ_MAXLEN ?= maps=8192 glxml=16384
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS = -std=gnu11 -g -O1 -D_GNU_SOURCE -MMD -MP -Iinclude $(LIB_IQUOTE) -iquote arch \
	-iquote src/prof $(PKG_CFLAGS)
# the sampler's bytes (data only) go into every libheapctl.a: inject.c names them
FUZZ_LIB_OBJS := $(patsubst %.c,$(B)/fuzzobj/%.o,$(LIB_SRCS)) $(B)/obj/sampler_blob.o \
	$(B)/obj/sampler_ff_blob.o
FUZZ_BINS := $(patsubst %,$(B)/fuzz/fuzz_%,$(FUZZ_TARGETS))
# targets whose code is the CLI's, not the library's: its sources, built in
FUZZ_EXTRA_query := src/cli/serve_query.c
FUZZ_EXTRA_CFLAGS_query := -iquote src/cli
# seeds: tests/fuzz/corpus/NAME, but the profile parser's are the report tests' own
fuzz_seeds = $(if $(filter prof,$(1)),tests/data/prof,tests/fuzz/corpus/$(1))
REPLAY_LIB_OBJS := $(patsubst %.c,$(B)/replayobj/%.o,$(LIB_SRCS)) $(B)/obj/sampler_blob.o \
	$(B)/obj/sampler_ff_blob.o
REPLAY_BINS := $(patsubst tests/fuzz/fuzz_%.c,$(B)/fuzz-replay/%,$(wildcard tests/fuzz/fuzz_*.c))
.PHONY: fuzz fuzz-engine fuzz-replay

$(B)/fuzzobj/%.o: %.c
	$(msg) FUZZCC $<
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -c $< -o $@

$(B)/fuzzobj/libheapctl.a: $(FUZZ_LIB_OBJS)
	$(msg) AR $@
	$(Q)rm -f $@ && $(AR) rcs $@ $^

.SECONDEXPANSION:
$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(B)/fuzzobj/libheapctl.a $$(FUZZ_EXTRA_$$*)
	$(msg) FUZZ $@
	@mkdir -p $(dir $@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_EXTRA_CFLAGS_$*) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< \
		$(FUZZ_EXTRA_$*) $(B)/fuzzobj/libheapctl.a $(LDLIBS_ALL)

$(B)/replayobj/%.o: %.c
	$(msg) SANCC $<
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BASE_CFLAGS) -O1 -g $(FUZZ_SAN) $(PKG_CFLAGS) -c $< -o $@

$(B)/replayobj/libheapctl.a: $(REPLAY_LIB_OBJS)
	$(msg) AR $@
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# two sources in one command leave a .d for the last only: list the headers
$(B)/fuzz-replay/%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(B)/replayobj/libheapctl.a \
		$(wildcard tests/fuzz/*.h $(addsuffix /*.h,$(LIB_DIRS)) src/prof/*.h include/heapctl/*.h) \
		$$(FUZZ_EXTRA_$$*)
	$(msg) CC $@
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(BASE_CFLAGS) -O1 -g $(FUZZ_SAN) $(PKG_CFLAGS) $(FUZZ_EXTRA_CFLAGS_$*) -DFUZZ_NAME='"$*"' \
		-DFUZZ_DIRS='"$(CURDIR)/tests/fuzz/regress/$*:$(CURDIR)/$(call fuzz_seeds,$*)"' \
		-o $@ $< tests/fuzz/replay.c $(FUZZ_EXTRA_$*) $(B)/replayobj/libheapctl.a $(LDLIBS_ALL)

fuzz-replay: $(REPLAY_BINS)
	@tests/run-unit.sh $(B) $(REPLAY_BINS)

fuzz: fuzz-engine
fuzz-engine: $(FUZZ_BINS)
	@for f in $(FUZZ_TARGETS); do \
		case $$f in prof) seeds=$(call fuzz_seeds,prof) ;; *) seeds=tests/fuzz/corpus/$$f ;; esac; \
		maxlen=65536; \
		for m in $(FUZZ_MAXLEN); do [ "$${m%%=*}" != "$$f" ] || maxlen=$${m#*=}; done; \
		$(if $(FUZZ_FRESH),rm -rf $(B)/fuzz/corpus-$$f;) \
		mkdir -p $(B)/fuzz/corpus-$$f; \
		if ls tests/fuzz/regress/$$f/* >/dev/null 2>&1; then \
			$(B)/fuzz/fuzz_$$f tests/fuzz/regress/$$f/* >$(B)/fuzz/regress-$$f.log 2>&1 || \
			{ echo "FAIL fuzz-$$f: a regression input fails again, see $(B)/fuzz/regress-$$f.log"; \
			  tail -30 $(B)/fuzz/regress-$$f.log; exit 1; }; \
		fi; \
		start=$$(date +%s); \
		$(B)/fuzz/fuzz_$$f $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS)) \
			-timeout=10 -rss_limit_mb=2048 -max_len=$$maxlen -print_final_stats=1 \
			-artifact_prefix=$(B)/fuzz/crash-$$f- $(B)/fuzz/corpus-$$f \
			$$seeds >$(B)/fuzz/fuzz-$$f.log 2>&1 || \
		{ echo "FAIL fuzz-$$f: see $(B)/fuzz/fuzz-$$f.log and $(B)/fuzz/crash-$$f-*"; \
		  tail -30 $(B)/fuzz/fuzz-$$f.log; exit 1; }; \
		secs=$$(( $$(date +%s) - start )); \
		runs=$$(awk '/stat::number_of_executed_units/ { print $$2 }' $(B)/fuzz/fuzz-$$f.log); \
		echo "PASS fuzz-$$f: $$runs runs in $$secs s ($$(( runs / (secs ? secs : 1) ))/s), no finding"; \
	done

-include $(shell find $(B)/fuzzobj $(B)/replayobj $(B)/fuzz $(B)/fuzz-replay -name '*.d' 2>/dev/null)
