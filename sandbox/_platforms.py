"""The platforms quickjail ships wheels for, and how each is built and tagged.

The guest is one wasm for every platform; what differs is the host library (``_host/*.c``),
native code that the pinned ``zig cc`` cross-compiles for each target from any build machine.
A wheel is tagged ``cp311-abi3-<platform>``: the library calls only CPython's stable-ABI
functions (their addresses handed over through ``ctypes.pythonapi``, nothing linked), so one
wheel serves CPython 3.11 and later, and older or other Pythons refuse it by its tag.

This module is loaded by the build (``sandbox/_build.py``, the hatch hook) without importing the
package: standard library only.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass

__all__ = [
    "ABI_TAG",
    "PLATFORMS",
    "Platform",
    "UnsupportedPlatformError",
    "by_name",
    "native",
]

ABI_TAG = "cp311-abi3"
"""The interpreter and ABI parts of every wheel's tag."""


class UnsupportedPlatformError(RuntimeError):
    """A build for a platform quickjail has no wheel for; the message lists those it has."""


@dataclass(frozen=True)
class Platform:
    """One platform a wheel is built for.

    Attributes:
        name: our name for it (``QUICKJAIL_PLATFORM``, ``make dist``).
        zig_target: the ``zig cc -target`` of the host library (glibc and macOS minimums
            included, so the library needs no newer system than the tag promises).
        tag: the wheel's platform tag (as many as apply, joined by ``.``).
        machine: the ELF ``e_machine`` or Mach-O ``cputype`` the library must have.
        binary: ``"elf"`` or ``"macho"``.
    """

    name: str
    zig_target: str
    tag: str
    machine: int
    binary: str

    @property
    def wheel_tag(self) -> str:
        """The whole wheel tag, e.g. ``cp311-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64``."""
        return f"{ABI_TAG}-{self.tag}"


_EM_X86_64 = 62
_EM_AARCH64 = 183
_CPU_X86_64 = 0x01000007
_CPU_ARM64 = 0x0100000C

PLATFORMS: dict[str, Platform] = {
    p.name: p
    for p in (
        # glibc 2.17 is manylinux2014's floor, the same as the wasmtime wheels' own
        Platform(
            "manylinux_x86_64",
            "x86_64-linux-gnu.2.17",
            "manylinux_2_17_x86_64.manylinux2014_x86_64",
            _EM_X86_64,
            "elf",
        ),
        Platform(
            "manylinux_aarch64",
            "aarch64-linux-gnu.2.17",
            "manylinux_2_17_aarch64.manylinux2014_aarch64",
            _EM_AARCH64,
            "elf",
        ),
        Platform(
            "musllinux_x86_64", "x86_64-linux-musl", "musllinux_1_2_x86_64", _EM_X86_64, "elf"
        ),
        Platform(
            "musllinux_aarch64", "aarch64-linux-musl", "musllinux_1_2_aarch64", _EM_AARCH64, "elf"
        ),
        # macOS 11 is the oldest system both the arm64 wasmtime wheel and zig's libSystem serve
        Platform("macos_arm64", "aarch64-macos.11.0", "macosx_11_0_arm64", _CPU_ARM64, "macho"),
        Platform("macos_x86_64", "x86_64-macos.11.0", "macosx_11_0_x86_64", _CPU_X86_64, "macho"),
    )
}
"""Every platform with a wheel, by name, in the order ``make dist`` builds them."""

_SUPPORTED = ", ".join(PLATFORMS)


def by_name(name: str) -> Platform:
    """The platform called ``name``.

    Raises:
        UnsupportedPlatformError: no wheel is built for ``name``.
    """
    try:
        return PLATFORMS[name]
    except KeyError:
        raise UnsupportedPlatformError(
            f"quickjail has no build for {name!r}; it builds for: {_SUPPORTED}"
        ) from None


def native() -> Platform:
    """The platform of the running interpreter.

    Raises:
        UnsupportedPlatformError: this system or processor has no build (Windows among them:
            README.md "Platforms" says what is missing there).
    """
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}.get(
        machine
    )
    if arch is not None and sys.platform.startswith("linux"):
        libc = "manylinux" if platform.libc_ver()[0] == "glibc" else "musllinux"
        return PLATFORMS[f"{libc}_{arch}"]
    if arch is not None and sys.platform == "darwin":
        return PLATFORMS["macos_arm64" if arch == "aarch64" else "macos_x86_64"]
    raise UnsupportedPlatformError(
        f"quickjail has no build for {sys.platform} on {platform.machine() or 'this processor'};"
        f" it builds for: {_SUPPORTED}"
    )
