#!/usr/bin/env python3
"""Writes src/idna/tables.txt, the Unicode data `src/idna.rs` maps host names with: UTS #46's IDNA mapping table
and the few character properties its processing needs (NFC's canonical combining classes and compositions). Run with the Python packages `idna` (its copy of the IDNA mapping table) and `unicodedata2` (the
character database) of one Unicode version, both from PyPI:

    python3 -m venv /tmp/idna && /tmp/idna/bin/pip install idna unicodedata2
    /tmp/idna/bin/python src/idna/tables.py > src/idna/tables.txt

The file is text, one range per line (build.rs deflates it into the binary, about 13 KB): a line starts with the
distance in hex from the previous line's first code point (the first from 0), then what the range is.
"""
import sys

import idna.uts46data as uts46
import unicodedata2 as ucd

if uts46.__version__ != ucd.unidata_version:
    sys.exit(f"idna's table is Unicode {uts46.__version__}, unicodedata2 is {ucd.unidata_version}: take one version")

N = 0x110000
HANGUL = range(0xAC00, 0xD7A4)  # Hangul syllables: composed and decomposed by arithmetic, not by table.

# The status of every code point: V valid (deviations too: kept, as nontransitional processing does), M mapped,
# I ignored, X disallowed; and what a mapped one becomes.
status = bytearray(b"X" * N)
mapping = [None] * N
starts, statuses, replacements = uts46.uts46_starts, uts46.uts46_statuses, uts46.uts46_replacements
for i, start in enumerate(starts):
    end = starts[i + 1] if i + 1 < len(starts) else N
    s = b"V" if statuses[i] == ord("D") else bytes([statuses[i]])
    for c in range(start, end):
        status[c] = s[0]
        mapping[c] = replacements[i]
valid = lambda c: status[c] == ord("V")


def single(c):
    m = mapping[c]
    return ord(m) if status[c] == ord("M") and m is not None and len(m) == 1 else None


out = [f"# UTS #46 {uts46.__version__} and the Unicode Character Database {ucd.unidata_version}: written by"]
out.append("# src/idna/tables.py, not by hand.")


def section(name, rows):
    """Rows of (first code point, what): each line the distance from the previous row, then what."""
    out.append(f"@{name}")
    previous = 0
    for first, what in rows:
        out.append(f"{first - previous:x}{what}")
        previous = first


# @map: `v` valid, `x` disallowed, `i` ignored; `s<n>`: each maps to itself shifted by n; `p`: alternately mapped to
# the next code point and valid (upper and lower case pairs); `m<hex> ...`: the one code point maps to these, the
# first written as its distance from the first of the previous `m` line (signed hex: a third smaller deflated). (No
# kind is a letter of a hex digit.)
rows, c, previous_first = [], 0, 0
while c < N:
    s = chr(status[c])
    if s in "VXI":
        e = c + 1
        while e < N and status[e] == status[c]:
            e += 1
        rows.append((c, s.lower()))
        c = e
        continue
    t = single(c)
    if t is not None:
        d, e = t - c, c + 1
        while e < N and single(e) == e + d:
            e += 1
        alt = c
        while alt + 1 < N and single(alt) == alt + 1 and valid(alt + 1):
            alt += 2
        if alt - c >= 4 and alt - c > e - c:
            rows.append((c, "p"))
            c = alt
            continue
        if e - c > 1:
            rows.append((c, f"s{d}"))
            c = e
            continue
    first = ord(mapping[c][0])
    rows.append((c, "m" + " ".join([f"{first - previous_first:x}"] + [f"{ord(ch):x}" for ch in mapping[c][1:]])))
    previous_first = first
    c += 1
section("map", rows)

# @ccc: the canonical combining class of the valid code points, by range (other code points never reach NFC's
# reordering: mapping leaves only valid ones, and a decoded label holding another is refused anyway).
rows, previous = [], None
for c in range(N):
    k = ucd.combining(chr(c)) if valid(c) else 0
    if k != previous:
        rows.append((c, f" {k}"))
        previous = k
section("ccc", rows)

# @compose: the primary composites of two valid code points (NFC's pairs, composition exclusions left out); the
# same pairs decompose a composite. Hangul syllables are arithmetic.
rows = []
for c in range(N):
    d = ucd.decomposition(chr(c))
    if c in HANGUL or not d or d.startswith("<"):
        continue
    parts = [int(x, 16) for x in d.split()]
    if len(parts) == 2 and ucd.normalize("NFC", chr(c)) == chr(c) and all(valid(p) for p in parts):
        rows.append((c, f" {parts[0]:x} {parts[1]:x}"))
section("compose", rows)

# Checks of what src/idna.rs relies on: every code point a mapping gives, and every code point with a canonical
# decomposition that is valid, is valid and a primary composite (so the pairs above decompose it whole).
for m in replacements:
    assert m is None or all(valid(ord(ch)) for ch in m), m
for c in range(N):
    d = ucd.decomposition(chr(c))
    if valid(c) and d and not d.startswith("<") and c not in HANGUL:
        parts = [int(x, 16) for x in d.split()]
        assert len(parts) == 2 and ucd.normalize("NFC", chr(c)) == chr(c) and all(map(valid, parts)), hex(c)

print("\n".join(out))
