"""Our patches to the pinned QuickJS-ng sources: the pinned table and how they are applied.

:mod:`sandbox._build` loads this file by path (a build environment cannot import the package),
so it uses the standard library only. A patch is a unified diff in ``_patches/``, pinned by
sha256 here; :func:`patch_sources` applies every one to copies of the sources, exactly (no
fuzz), and refuses a patch that is not the pinned one or does not apply.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["PATCHES", "PatchError", "apply_patch", "patch_hunks", "patch_sources"]

# Our changes to the pinned QuickJS-ng sources, applied in this order, each pinned by sha256
# (a patch that changed without this table changing is refused):
#   0001  the error an allocation failure throws is told to the guest (sandbox/_guest/oom.c),
#         and a preallocated one replaces `null` when not even an error object can be made
#   0002  JSON.stringify refuses values nested deeper than 4096 levels with a RangeError, checked
#         before its cycle check (linear in the depth): a deep value took quadratic time and
#         ended in a native-stack trap
#   0003  a Proxy's methods and a bound function's call reserve 128 bytes of shadow stack per
#         level, so QuickJS's stack checks (which see only the shadow stack on wasm) see the
#         depth of a Proxy or bound-function chain: a 1e5-deep one trapped on the native stack
#         instead of throwing a catchable RangeError
#   0004  Array.prototype.join stops at the first failure to grow its string, as the typed
#         array join does: it walked every remaining hole of a sparse array after running out
#         of memory (seconds for 1e8 holes, hours for 2**32 - 1)
#   0005  a DOMException is an error to JS_IsError (so to Error.isError, as Web IDL says, and to
#         the guest's error descriptions: name, message and stack instead of `{}`)
#   0006  JS_SealArenas: once the snapshot's runtime is built, its small-block arenas take no new
#         blocks and each size class's next arena starts at 256 bytes, doubling to 4 KiB, so a
#         run's small objects are packed in a few pages at the top of the heap instead of one
#         page per size class spread over the snapshot (each a copy-on-write fault)
#   0007  the interpreter dispatches with a switch on wasm: clang lowers its computed gotos to a
#         table load plus one br_table, the switch is the br_table alone (~10 % fewer instructions
#         in the interpreter loop, benchmarks/README.md "Compute: why wasm is slower")
#   0008  JSON.parse reads a number of at most 15 significant digits and a power of ten up to
#         1e22 with one exact multiply or divide (correctly rounded, as strtod is) and leaves the
#         rest to wasi-libc's strtod, which computes in software-emulated 128-bit long double
#   0009  a string builder's fill (String.prototype.repeat of one code unit, padStart/padEnd
#         with one) stores its code units in one pass (a memset for an 8-bit string) instead
#         of one call each: on wasm each call pays a stack and an epoch check
#   0010  JS_NewStringLen's check for a non-ASCII byte (every long string the host sends goes
#         through it) reads 8 bytes a step instead of one (cutils.h): each step of a loop on
#         wasm also pays an epoch check
#   0011  with the v flag a pattern character outside a class is not held to a class's rules
#         (libregexp refused "a-b" and "a::b" as "invalid character in class"): URLPattern
#         compiles fixed text such as "/:a-:b" into v-flag expressions, as the standard says
#   0012  at snapshot time, two lists a run appends to are ordered so that appending writes
#         fewer pages of the snapshot (each a private page of every parked run): the object
#         every run writes first (the Promise prototype) becomes the last GC object, which a
#         run's first object is linked to (JS_MoveToGCListEnd), and the atom array's free slots
#         are listed in order, so a run's new atoms take neighbouring slots (JS_SortFreeAtoms)
PATCHES = {
    "0001-out-of-memory-error.patch": (
        "48d3f7895824519300ad82b4e78063941f935ad4505e24fce847475b07842ba4"
    ),
    "0002-json-stringify-depth.patch": (
        "8756e5c3d051ea9762634cd9b0821deb2c03b95eed3c296a601f220f8da9c23e"
    ),
    "0003-shadow-stack-frames.patch": (
        "edaaec60fadc0bd70a2747aa1110d297a9cea7dc4d09aca236185e98265f5d02"
    ),
    "0004-array-join-stops-at-failure.patch": (
        "3be841df5d4cd33ac5467fc369816c328f4aa4be4f3c0b422198cba31437519a"
    ),
    "0005-domexception-is-an-error.patch": (
        "03fa2614e8334bf796fa092bdbbfa7d03ec6bc38492989e137bdb5b3c750e026"
    ),
    "0006-arenas-sealed-at-snapshot.patch": (
        "b657558d91f0664d95c37da3dc8582b1c7e90dd8a4e08b75d53de6137db29859"
    ),
    "0007-switch-dispatch-on-wasm.patch": (
        "8851eec7a82ee4049c95d2d4f682cac3fbf996907fbb29f382292e3840f7d2cf"
    ),
    "0008-json-parse-number-fast-path.patch": (
        "cbfb53405029b71123596d809b2735131c220e3d94d938036644af601b105cc3"
    ),
    "0009-string-fill-in-one-pass.patch": (
        "30d3bbde3e7d1410cf49de230f10414a27f7f356008b5ae0e0399f451d1310ca"
    ),
    "0010-utf8-scan-by-words.patch": (
        "6b36bdff0c59a869ec93a988e6bcedc77c4f17f1e27e4dfd3f25299a4e568309"
    ),
    "0011-regexp-v-flag-outside-class.patch": (
        "fcb91bbfba22d9879e8f61efeff2a129b7be6a87d2cb20d01fcdbf91e5499609"
    ),
    "0012-snapshot-list-order.patch": (
        "094f66cc978f6dcf971d33d2bcae628f8b121678c154d876c42c4a2e8057165a"
    ),
}


class PatchError(RuntimeError):
    """A patch is not the pinned one, is malformed, or does not apply to the pinned sources."""


def _lines(text: str) -> list[str]:
    """``text`` as lines ending in ``\\n`` (only ``\\n`` ends a line, as for ``diff``)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def patch_hunks(patch: str) -> dict[str, list[tuple[int, list[str]]]]:
    """A unified diff as ``{file: [(first old line, hunk lines), ...]}``."""
    files: dict[str, list[tuple[int, list[str]]]] = {}
    current: list[tuple[int, list[str]]] | None = None
    for line in _lines(patch):
        if line.startswith("--- "):
            current = None
        elif line.startswith("+++ "):
            name = line[4:].strip().split("\t")[0]
            name = name[2:] if name.startswith("b/") else name
            if "/" in name or not name:
                raise PatchError(f"a patch may only touch top-level source files, not {name!r}")
            current = files.setdefault(name, [])
        elif line.startswith("@@ "):
            if current is None:
                raise PatchError("a hunk before its file header")
            old = line.split()[1]  # -start,count
            start = int(old[1:].split(",")[0])
            current.append((start, []))
        elif line[:1] in (" ", "-", "+") and current:
            current[-1][1].append(line)
        elif line.startswith("\\") or not line.strip():
            continue
        else:
            raise PatchError(f"unexpected line in a patch: {line[:60]!r}")
    return files


def apply_patch(text: str, hunks: list[tuple[int, list[str]]], name: str) -> str:
    """Apply one file's hunks exactly (context lines must match where the hunk says)."""
    orig = _lines(text)
    out: list[str] = []
    pos = 0
    for start, lines in hunks:
        has_old = any(line[0] in " -" for line in lines)
        at = start - 1 if has_old else start
        if at < pos or at > len(orig):
            raise PatchError(f"{name}: a hunk at line {start} is out of order or range")
        out += orig[pos:at]
        pos = at
        for line in lines:
            if line[0] == "+":
                out.append(line[1:])
                continue
            if pos >= len(orig) or orig[pos] != line[1:]:
                raise PatchError(f"{name}: the hunk at line {start} does not match the sources")
            if line[0] == " ":
                out.append(orig[pos])
            pos += 1
    out += orig[pos:]
    return "".join(out)


def patch_sources(
    src_dir: Path, out_dir: Path, patches_dir: Path, pinned: dict[str, str] = PATCHES
) -> Path:
    """Copy the QuickJS sources into ``out_dir``, the ones the ``pinned`` patches change patched.

    Returns ``out_dir``: every QuickJS file is compiled and included from there, never from
    ``src_dir``, so a header a patch changes is the one every file sees. (With the pristine
    directory on the include path too, zig's compile cache kept an object built against the
    pristine header: a file's recorded dependencies did not include the patched copy that now
    shadowed it, and a header patch was silently left out.) The pristine sources are never
    modified.
    """
    present = {p.name for p in patches_dir.glob("*.patch")} if patches_dir.exists() else set()
    if present != set(pinned):
        raise PatchError(f"_patches/ holds {sorted(present)}, the build pins {sorted(pinned)}")
    hunks_of: list[tuple[str, dict[str, list[tuple[int, list[str]]]]]] = []
    for name in sorted(pinned):
        data = (patches_dir / name).read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != pinned[name]:
            raise PatchError(f"{name}: sha256 {digest} does not match the pinned hash")
        hunks_of.append((name, patch_hunks(data.decode("utf-8"))))
    files = {p.name: p.read_bytes() for p in src_dir.iterdir() if p.is_file() and p.name[0] != "."}
    patched: dict[str, str] = {}
    for name, targets in hunks_of:
        for target, hunks in targets.items():
            if target not in patched:
                if target not in files:
                    raise PatchError(f"{name}: the sources have no {target!r}")
                patched[target] = files[target].decode("utf-8")
            patched[target] = apply_patch(patched[target], hunks, f"{name} ({target})")
    files.update((target, text.encode("utf-8")) for target, text in patched.items())
    out_dir.mkdir(parents=True, exist_ok=True)
    for target, data in files.items():
        path = out_dir / target
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
    return out_dir
