"""The guest's own heap (sandbox/_guest/heap.c) under stress, through the public API: values stay
intact through many mixed-size allocations and frees, memory freed at one size serves another,
blocks grow in place, and running out of memory is catchable whatever filled the heap."""

from __future__ import annotations

import pytest

from quickjail.bridge import run_code_sync

pytestmark = pytest.mark.timeout(300)

MiB = 2**20

# A deterministic mix of objects, strings, arrays, typed arrays and Maps in 4096 slots, each
# overwritten (so freed) many times; every live value is checked against the seed that made it.
MIXED = """
let seed = 12345;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) >>> 0; return seed % n };
const make = (k, s) => {
  switch (k) {
    case 0: return { s, a: s + 1, b: [s, s * 2], c: 'o' + s };
    case 1: return String.fromCharCode(97 + s % 26).repeat(1 + s % 3000) + s;
    case 2: return Array.from({ length: 1 + s % 700 }, (_, i) => i ^ s);
    case 3: { const t = new Uint32Array(1 + s % 20000); t.fill(s); return t }
    default: { const m = new Map(); for (let i = 0; i < s % 300; i++) m.set('k' + i, i * s);
               return m }
  }
};
const check = (k, s, v) => {
  switch (k) {
    case 0: return v.s === s && v.a === s + 1 && v.b[1] === s * 2 && v.c === 'o' + s;
    case 1: return v.length === 1 + s % 3000 + String(s).length && v.endsWith(String(s))
                   && v.charCodeAt(0) === 97 + s % 26;
    case 2: return v.length === 1 + s % 700 && v.every((x, i) => x === (i ^ s));
    case 3: return v.length === 1 + s % 20000 && v[0] === s >>> 0 && v[v.length - 1] === s >>> 0;
    default: { if (v.size !== s % 300) return false;
               for (const [key, x] of v) if (x !== Number(key.slice(1)) * s) return false;
               return true }
  }
};
const N = 4096, slots = new Array(N).fill(null), kinds = new Array(N), seeds = new Array(N);
let bad = 0;
for (let round = 0; round < 60000; round++) {
  const i = rnd(N);
  if (slots[i] !== null && !check(kinds[i], seeds[i], slots[i])) bad++;
  if (rnd(4) === 0) { slots[i] = null; continue }
  kinds[i] = rnd(5); seeds[i] = rnd(1 << 20);
  slots[i] = make(kinds[i], seeds[i]);
}
for (let i = 0; i < N; i++) if (slots[i] !== null && !check(kinds[i], seeds[i], slots[i])) bad++;
export default bad
"""


def test_mixed_allocations_and_frees_keep_every_value_intact() -> None:
    r = run_code_sync(MIXED, memory_limit_bytes=48 * MiB, timeout=240)
    assert r.status == "success", r.error
    assert r.result == 0


def test_memory_freed_at_one_size_serves_another() -> None:
    # each round fills about half the heap with small strings, then with 1 MiB buffers: freed
    # small blocks must coalesce into big ones, or a later round runs out of memory
    src = """
    let total = 0;
    for (let round = 0; round < 8; round++) {
      let keep = [];
      for (let i = 0; i < 12000; i++) keep.push('s'.repeat(700) + i);
      total += keep.length; keep = null;
      let big = [];
      for (let i = 0; i < 12; i++) big.push(new Uint8Array(1 << 20).fill(i));
      total += big.reduce((a, b) => a + b[5], 0); big = null;
    }
    export default total
    """
    r = run_code_sync(src, memory_limit_bytes=32 * MiB, timeout=240)
    assert r.status == "success", r.error
    assert r.result == 8 * (12000 + sum(range(12)))


def test_a_steadily_growing_array_and_string_fit_a_small_cap() -> None:
    # grown by realloc: in place while the next block is free, without doubling the footprint
    src = """
    const a = []; for (let i = 0; i < 1500000; i++) a.push(i);
    let s = '';
    for (let i = 0; i < 200000; i++) { s += 'abcdefgh'; if (i % 1000 === 0) s.charCodeAt(0) }
    export default [a.length, a[a.length - 1], s.length]
    """
    r = run_code_sync(src, memory_limit_bytes=32 * MiB, timeout=240)
    assert r.status == "success", r.error
    assert r.result == [1500000, 1499999, 1600000]


FILLERS = {
    "small-objects": "keep.push({ a: keep.length })",
    "short-strings": "keep.push('s' + keep.length)",
    "strings": "keep.push('x'.repeat(1 << 16) + keep.length)",
    "arrays": "keep.push([keep.length, 1, 2])",
    "typed-arrays": "keep.push(new Float64Array(33))",
    "maps": "keep.push(new Map([[keep.length, 'v' + keep.length]]))",
}


@pytest.mark.parametrize("kind", sorted(FILLERS))
def test_filling_the_heap_is_catchable_and_the_program_goes_on(kind: str) -> None:
    src = (
        "let keep = [], c = 'no';\n"
        f"try {{ for (;;) {FILLERS[kind]} }} catch (e) {{ keep = null; c = e.message }}\n"
        "const again = []; for (let i = 0; i < 20000; i++) again.push({ i, s: 'v' + i });\n"
        "export default [c, again.length, again[19999].s]"
    )
    r = run_code_sync(src, memory_limit_bytes=16 * MiB, timeout=240)
    assert r.status == "success", r.error
    assert r.result == ["out of memory", 20000, "v19999"]


def test_a_run_after_a_full_heap_starts_from_the_snapshot_heap() -> None:
    full = run_code_sync("const a = []; for (;;) a.push({ a })", memory_limit_bytes=16 * MiB)
    assert full.status == "memory"
    fresh = run_code_sync("export default 1 + 1", memory_limit_bytes=16 * MiB)
    again = run_code_sync("export default 1 + 1", memory_limit_bytes=16 * MiB)
    assert fresh.result == 2 and fresh.metrics.peak_memory_bytes < 8 * MiB
    assert fresh.metrics.peak_memory_bytes == again.metrics.peak_memory_bytes
