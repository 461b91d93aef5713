"""Hatchling build hook: build the guest wasm and the host library so every install ships a
working sandbox.

``pip install .`` and ``pip install -e .`` both run it. The guest sources come from the pinned
registry package (see ``sandbox/_build.py``); the results land in ``sandbox/_guest/`` (packaged as
``quickjail/sandbox/_guest/`` through the committed symlink) and are included in wheels as
artifacts. The host library (``sandbox/_host/``, the guest's clock in C) is native code for the
machine building the wheel, so the wheel is platform-specific.

``make`` installs editable with ``QUICKJAIL_SKIP_GUEST_BUILD=1`` and then builds the guest as a
step of its own, so a newcomer sees what each step is doing; a wheel is always built whole.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class GuestBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Compile the guest and the host library before the wheel (or editable wheel) is
    assembled."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        if version == "editable" and os.environ.get("QUICKJAIL_SKIP_GUEST_BUILD"):
            return
        path = Path(self.root) / "sandbox" / "_build.py"
        spec = importlib.util.spec_from_file_location("_quickjail_build", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.build()
        # the guest is platform-independent, the host library is native code for this machine
        build_data["artifacts"] += [
            "quickjail/sandbox/_guest/quickjail.wasm",
            "quickjail/sandbox/_guest/build.json",
            f"quickjail/sandbox/_guest/{module.HOST_LIBRARY.name}",
        ]
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
