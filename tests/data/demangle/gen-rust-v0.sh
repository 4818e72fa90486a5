#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Regenerate rust-v0.txt: real Rust v0 symbol names, from rustc, with the
# names binutils' c++filt gives them as the expected column.  Run by hand
# when the corpus should grow (needs rustc and c++filt); the test reads the
# checked-in file and never builds Rust.
#
# c++filt's form is normalised to heapctl's: crate hashes ("core[1a2b]")
# and const generic type suffixes ("4: usize") dropped.  Where c++filt 2.40
# is itself wrong (128-bit values, the chars '\'' and '\\'), the expected
# text is written by hand in FIXUPS and the line is marked "oracle-wrong",
# so the test's live c++filt comparison skips just that line.

set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rustc -C symbol-mangling-version=v0 -C opt-level=0 "$here/rust_v0_corpus.rs" -o "$tmp/corpus"
nm "$tmp/corpus" | awk '$NF ~ /^_R/ { print $NF }' | sort -u >"$tmp/all"
c++filt -s rust <"$tmp/all" >"$tmp/filt"

python3 - "$tmp/all" "$tmp/filt" >"$here/rust-v0.txt" <<'PY'
import re, sys
T = 'i8|i16|i32|i64|i128|isize|u8|u16|u32|u64|u128|usize|bool|char'
FIXUPS = {
    'Kn7fffffffffffffffffffffffffffffff_': ('0xfffffffffffffffffffffffffffffff_', '170141183460469231731687303715884105727'),
    'Knn80000000000000000000000000000000_': ('-0x0000000000000000000000000000000_', '-170141183460469231731687303715884105728'),
    'Kc5c_': ("'\\'", "'\\\\'"),
    'Kc27_': ("'''", "'\\''"),
}
syms = open(sys.argv[1]).read().split()
filt = open(sys.argv[2]).read().split('\n')
print('# Rust v0 symbols from rustc (tests/data/demangle/gen-rust-v0.sh) and their')
print('# expected demangling: MANGLED <TAB> EXPECTED [<TAB> oracle-wrong].')
for i, (s, o) in enumerate(zip(syms, filt)):
    n = re.sub(r'\[[0-9a-f]{1,16}\]', '', o)
    n = re.sub(r': (%s)(?=[,>\]])' % T, '', n)
    note = ''
    for k, (bad, good) in FIXUPS.items():
        if k in s:
            n = n.replace(bad, good)
            note = '\toracle-wrong'
    # All the interesting ones, and a sample of the rest to keep the file small.
    if note or re.search(r"K[a-z]|fn\(|dyn |for<|\{|'|\[|[^ -~]", n) or i % 4 == 0:
        print('%s\t%s%s' % (s, n, note))
PY
wc -l "$here/rust-v0.txt"
