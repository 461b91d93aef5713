"""What a host library binary is: its architecture, the symbols it imports and the system it
needs, read from the file itself (ELF with pyelftools, Mach-O parsed here), so a wheel built for
another platform is checked on this machine without running it."""

from __future__ import annotations

import io
import re
import struct
from dataclasses import dataclass

from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection
from elftools.elf.sections import SymbolTableSection

__all__ = ["ALLOWED_IMPORTS", "BinaryFacts", "inspect"]

ALLOWED_IMPORTS = frozenset(
    {
        "__errno_location",
        "__error",  # macOS's errno
        "dyld_stub_binder",  # macOS's lazy binding
        "clock_gettime",
        "madvise",
        "memcpy",
        "mincore",
        "mmap",
        "mprotect",
        "munmap",
        "sigaction",
        "sigemptyset",
        "sysconf",
    }
)
"""Every C library function the host library may import (its own C: ``sandbox/_host/*.c``).
wasmtime's and CPython's functions are handed over at load time, never linked."""


@dataclass(frozen=True)
class BinaryFacts:
    """Facts of one shared library.

    Attributes:
        format: ``"elf"`` or ``"macho"``.
        machine: ELF ``e_machine`` or Mach-O ``cputype``.
        imports: the undefined symbols it needs from other libraries (no leading ``_``).
        needed: the libraries it links (ELF ``DT_NEEDED``, Mach-O ``LC_LOAD_DYLIB``).
        glibc: the newest ``GLIBC_x.y`` symbol version it needs, ``None`` when none.
        macos_min: the minimum macOS version (``LC_BUILD_VERSION``), ``None`` on ELF.
    """

    format: str
    machine: int
    imports: frozenset[str]
    needed: tuple[str, ...]
    glibc: tuple[int, ...] | None
    macos_min: tuple[int, ...] | None


def inspect(data: bytes) -> BinaryFacts:
    """The facts of the shared library ``data``.

    Raises:
        ValueError: neither a 64-bit little-endian ELF nor a 64-bit Mach-O.
    """
    if data[:4] == b"\x7fELF":
        return _elf(data)
    if data[:4] == struct.pack("<I", 0xFEEDFACF):
        return _macho(data)
    raise ValueError(f"not a 64-bit ELF or Mach-O shared library (starts {data[:4]!r})")


def _elf(data: bytes) -> BinaryFacts:
    elf = ELFFile(io.BytesIO(data))
    dynsym = elf.get_section_by_name(".dynsym")
    symbols = dynsym.iter_symbols() if isinstance(dynsym, SymbolTableSection) else iter(())
    imports = frozenset(s.name for s in symbols if s.name and s["st_shndx"] == "SHN_UNDEF")
    needed: list[str] = []
    newest: tuple[int, ...] | None = None
    for section in elf.iter_sections():
        if isinstance(section, DynamicSection):
            tags = section.iter_tags("DT_NEEDED")
            needed += [str(t.needed) for t in tags]  # type: ignore[attr-defined]
        if isinstance(section, GNUVerNeedSection):
            for _, auxiliaries in section.iter_versions():
                for aux in auxiliaries:
                    m = re.fullmatch(r"GLIBC_(\d+(?:\.\d+)*)", aux.name)
                    if m:
                        version = tuple(int(x) for x in m[1].split("."))
                        newest = max(newest or version, version)
    return BinaryFacts("elf", _elf_machine(elf["e_machine"]), imports, tuple(needed), newest, None)


def _elf_machine(name: str | int) -> int:
    return {"EM_X86_64": 62, "EM_AARCH64": 183}.get(name, -1) if isinstance(name, str) else name


_LC_SYMTAB = 0x2
_LC_LOAD_DYLIB = 0xC
_LC_BUILD_VERSION = 0x32
_N_TYPE = 0x0E
_N_EXT = 0x01


def _macho(data: bytes) -> BinaryFacts:
    _, cputype, _, _, ncmds, _, _, _ = struct.unpack_from("<IiiIIIII", data, 0)
    offset = 32
    imports: set[str] = set()
    needed: list[str] = []
    minos: tuple[int, ...] | None = None
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, offset)
        if cmd == _LC_SYMTAB:
            symoff, nsyms, stroff, _ = struct.unpack_from("<IIII", data, offset + 8)
            for i in range(nsyms):
                strx, n_type, _, _, _ = struct.unpack_from("<IBBHQ", data, symoff + 16 * i)
                if n_type & _N_TYPE == 0 and n_type & _N_EXT:
                    end = data.index(b"\0", stroff + strx)
                    imports.add(data[stroff + strx : end].decode().removeprefix("_"))
        elif cmd == _LC_LOAD_DYLIB:
            (name_at,) = struct.unpack_from("<I", data, offset + 8)
            end = data.index(b"\0", offset + name_at)
            needed.append(data[offset + name_at : end].decode())
        elif cmd == _LC_BUILD_VERSION:
            (packed,) = struct.unpack_from("<I", data, offset + 12)
            minos = (packed >> 16, (packed >> 8) & 0xFF)
        offset += size
    return BinaryFacts("macho", cputype, frozenset(imports), tuple(needed), None, minos)
