"""Hatchling build hook: put the design's top-level floors inside the one import root, and build
the guest and the host library so every install ships a working sandbox.

The repository keeps ``sandbox/``, ``bridge/`` and ``runtime/`` beside ``quickjail/``; users
import them as ``quickjail.sandbox`` and so on. No symlink is involved (build tools and Windows
checkouts do not all follow them):

- the **wheel** maps each floor's files to ``quickjail/<floor>/`` one by one, and adds the built
  guest (``_guest/quickjail.wasm``, one for every platform), the host library compiled for the
  wheel's platform and its ``build.json``. ``QUICKJAIL_PLATFORM`` names the platform (one of
  ``sandbox/_platforms.py``; ``make dist`` builds each), this machine's by default; the tag is
  ``cp311-abi3-<platform>``;
- the **editable** install maps ``quickjail`` (hatch's exact mode) and the three floors
  (``hatch_editable.py``) to the checkout, nothing else;
- the **sdist** holds the tree as it is (``[tool.hatch.build.targets.sdist]``), and a wheel built
  from it is built the same way.

``make`` installs editable with ``QUICKJAIL_SKIP_GUEST_BUILD=1`` and then builds the guest as a
step of its own, so a newcomer sees what each step is doing; a wheel is always built whole.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

FLOORS = ("sandbox", "bridge", "runtime")
"""The top-level folders that are subpackages of ``quickjail`` in every install."""

_NOT_SHIPPED_DIRS = frozenset({"__pycache__"})
# build outputs in sandbox/_guest/ (gitignored): each wheel adds the ones of its platform
_BUILD_OUTPUTS = frozenset({".wasm", ".json", ".so", ".dylib", ".dll", ".tmp"})


def floor_files(root: Path) -> dict[str, str]:
    """``{file in the tree: its path in the wheel}`` for every source file of the floors."""
    files: dict[str, str] = {}
    for floor in FLOORS:
        base = root / floor
        if not (base / "__init__.py").is_file():
            raise FileNotFoundError(f"{base}/__init__.py: the checkout or sdist is incomplete")
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in _NOT_SHIPPED_DIRS)
            for name in sorted(filenames):
                path = Path(dirpath) / name
                inside = path.relative_to(root)
                if path.suffix == ".pyc" or (
                    inside.parent == Path("sandbox", "_guest") and path.suffix in _BUILD_OUTPUTS
                ):
                    continue
                files[str(path)] = f"quickjail/{inside.as_posix()}"
    return files


def wheel_platform(platforms: types.ModuleType, name: str) -> Any:
    """The platform a wheel is built for: ``name``, or this machine's when empty.

    Raises:
        SystemExit: one line naming the platforms quickjail builds for.
    """
    try:
        return platforms.by_name(name) if name else platforms.native()
    except platforms.UnsupportedPlatformError as exc:
        raise SystemExit(f"quickjail: {exc}") from None


def require_zig(version: str) -> None:
    """Stop at once, saying how to get it, when the pinned zig is not installed.

    Raises:
        SystemExit: one line with the command that installs it.
    """
    if importlib.util.find_spec("ziglang") is None:
        raise SystemExit(
            f"quickjail: building the guest needs the pinned zig: pip install ziglang=={version}"
            " (pip's default isolated build installs it by itself)"
        )


def _load(root: Path, relative: str, name: str) -> types.ModuleType:
    """A module of the tree, loaded without importing the package (the build env lacks its
    dependencies)."""
    spec = importlib.util.spec_from_file_location(name, root / relative)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(root / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


class GuestBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Map the floors into ``quickjail`` and compile what the wheel ships."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Fill ``build_data`` for the wheel or the editable wheel (the sdist needs nothing)."""
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        if version == "editable":
            self._editable(root, build_data)
            return
        build = _load(root, "sandbox/_build.py", "_quickjail_build")
        platforms = _load(root, "sandbox/_platforms.py", "_quickjail_platforms")
        target = wheel_platform(platforms, os.environ.get("QUICKJAIL_PLATFORM") or "")
        require_zig(build.ZIG_VERSION)
        outputs = build.build_for(target.name, build._build_root() / "host")
        build_data["force_include"].update(floor_files(root))
        build_data["force_include"].update(
            {str(path): f"quickjail/sandbox/{inside}" for inside, path in outputs.items()}
        )
        build_data["pure_python"] = False
        build_data["tag"] = target.wheel_tag

    def _editable(self, root: Path, build_data: dict[str, Any]) -> None:
        """The editable wheel's finder for the floors (and the guest, unless skipped)."""
        if not os.environ.get("QUICKJAIL_SKIP_GUEST_BUILD"):
            _load(root, "sandbox/_build.py", "_quickjail_build").build()
        where = root / ".build" / "editable"
        where.mkdir(parents=True, exist_ok=True)
        finder = where / "_quickjail_editable.py"
        finder.write_text((root / "hatch_editable.py").read_text(encoding="utf-8"), "utf-8")
        packages = {f"quickjail.{floor}": str(root / floor) for floor in FLOORS}
        pth = where / "_quickjail_editable_floors.pth"
        pth.write_text(f"import _quickjail_editable; _quickjail_editable.install({packages!r})\n")
        build_data["force_include_editable"] = {
            str(finder): "_quickjail_editable.py",
            str(pth): "_quickjail_editable_floors.pth",
        }
