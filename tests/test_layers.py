"""The floors: the sandbox knows only its host-call protocol, the bridge implements it, and
every import points down."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import quickjail
from quickjail import bridge, runtime, sandbox
from quickjail.sandbox.errors import HostCallRefused
from quickjail.sandbox.host import HostFunction

ROOT = Path(__file__).resolve().parent.parent
# a floor may import itself and the floors below it, never one above or beside it
FLOORS = {"sandbox": 0, "bridge": 1, "runtime": 2, "quickjail": 3}


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module != "quickjail":  # `from quickjail import bridge` names the floor
                names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return {n for n in names if n == "quickjail" or n.startswith("quickjail.")}


def _floor_of(module: str) -> tuple[str, bool]:
    """The floor a quickjail module belongs to, and whether the name is private to it."""
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in ("sandbox", "bridge", "runtime"):
        return parts[1], any(p.startswith("_") for p in parts[2:])
    return "quickjail", False


def test_every_import_points_down_and_never_into_another_floors_internals() -> None:
    bad: list[str] = []
    for floor in ("sandbox", "bridge", "runtime"):
        for path in sorted((ROOT / floor).rglob("*.py")):
            for target in _imported(path):
                other, private = _floor_of(target)
                if other == floor:
                    continue
                where = f"{path.relative_to(ROOT)} imports {target}"
                if FLOORS[other] > FLOORS[floor]:
                    bad.append(f"{where} (upward)")
                elif private:
                    bad.append(f"{where} (another floor's internals)")
    assert bad == []


def test_the_layer_walk_sees_a_planted_upward_import(tmp_path: Path) -> None:
    planted = tmp_path / "x.py"
    planted.write_text("from quickjail.runtime import Tool\nimport quickjail.bridge._table\n")
    assert _imported(planted) == {
        "quickjail.runtime",
        "quickjail.runtime.Tool",
        "quickjail.bridge._table",
    }
    assert _floor_of("quickjail.runtime.Tool") == ("runtime", False)
    assert _floor_of("quickjail.bridge._table") == ("bridge", True)


class _Table:
    """A hand-made HostTable: the sandbox needs nothing from the bridge to call the host."""

    def __init__(self, admit: bool = True) -> None:
        self.admitted: list[tuple[str, int]] = []
        self.replies: list[tuple[str, int]] = []
        self._admit = admit
        self.twice = HostFunction("twice", lambda x: 2 * x)

    @property
    def modules(self) -> Mapping[str, Mapping[str, Any]]:
        return {"math2": {"twice": self.twice, "PI": 3}}

    @property
    def globals(self) -> Mapping[str, Any]:
        return {"twice": self.twice}

    def calls(self) -> _Table:
        return self

    def admit(self, fn: HostFunction, nbytes: int) -> None:
        if not self._admit:
            raise HostCallRefused("no calls today")
        self.admitted.append((fn.name, nbytes))

    def reply(self, fn: HostFunction, nbytes: int) -> None:
        self.replies.append((fn.name, nbytes))

    def describe(self, exc: BaseException) -> tuple[str, str] | None:
        return None


def test_the_sandbox_dispatches_through_any_host_table() -> None:
    table = _Table()
    src = 'import { twice as t, PI } from "math2"; export default [await t(PI), await twice(4)]'
    r = sandbox.run_code_sync(src, host=table)
    assert r.status == "success" and r.result == [6, 8]
    assert [name for name, _ in table.admitted] == ["twice", "twice"]
    assert [name for name, _ in table.replies] == ["twice", "twice"]
    assert r.metrics.host_calls == 2


def test_a_refusal_of_the_host_table_is_a_catchable_range_error_and_counted() -> None:
    src = "try { await twice(1) } catch (e) { report([e.name, e.message]) } export default 0"
    r = sandbox.run_code_sync(src, host=_Table(admit=False))
    assert r.reports == [["RangeError", "no calls today"]]
    assert r.metrics.quota_refusals == 1 and r.metrics.host_calls == 0


def test_a_plain_callable_cannot_reach_the_guest_without_the_bridge() -> None:
    class Raw(_Table):
        @property
        def globals(self) -> Mapping[str, Any]:
            return {"f": lambda: 1}

    with pytest.raises(sandbox.TransferError, match=r"globals\.f"):
        sandbox.run_code("export default 1", host=Raw())


@pytest.mark.parametrize(
    ("quotas", "src", "message"),
    [
        (bridge.Quotas(max_host_calls=2), "await f(); await f(); await f()", "2 calls per run"),
        (bridge.Quotas(max_bytes_out=100), "await f('x'.repeat(200))", "100 bytes out per run"),
        (bridge.Quotas(max_bytes_in=100), "await big(); await big()", "100 bytes in per run"),
    ],
    ids=["calls", "bytes-out", "bytes-in"],
)
def test_each_host_call_quota_refuses_with_a_range_error_naming_it(
    quotas: bridge.Quotas, src: str, message: str
) -> None:
    wrapped = f"try {{ {src} }} catch (e) {{ report([e.name, e.message]) }} export default 0"
    r = bridge.run_code_sync(
        wrapped, globals={"f": lambda *a: 1, "big": lambda: "y" * 80}, quotas=quotas
    )
    assert r.status == "success"
    [[name, text]] = r.reports
    assert name == "RangeError" and message in text
    assert r.metrics.quota_refusals == 1


def test_async_calls_in_flight_are_capped() -> None:
    async def wait() -> int:
        return 1

    src = (
        "const all = Promise.allSettled([wait(), wait(), wait()]);"
        "export default (await all).map((s) => s.status)"
    )
    r = bridge.run_code_sync(
        src, globals={"wait": wait}, quotas=bridge.Quotas(max_calls_in_flight=2)
    )
    assert r.result == ["fulfilled", "fulfilled", "rejected"]


def test_a_capability_stands_for_its_exports() -> None:
    class Clock:
        def exports(self) -> dict[str, Any]:
            return {"now": lambda: 42, "zone": "UTC"}

    assert isinstance(Clock(), bridge.Capability)
    r = bridge.run_code_sync(
        'import { now, zone } from "clock"; export default [await now(), zone]',
        imports={"clock": Clock()},
    )
    assert r.result == [42, "UTC"]


def test_run_code_options_are_typed_keywords_and_unknown_ones_are_type_errors() -> None:
    for fn in (sandbox.run_code, sandbox.run_code_sync, bridge.run_code, bridge.run_code_sync):
        params = inspect.signature(fn).parameters
        assert "timeout" in params and params["timeout"].default is None
        assert params["memory_limit_bytes"].default == 64 * 2**20
        assert all(p.kind is not p.VAR_KEYWORD for p in params.values())
        assert "Args:" in (fn.__doc__ or "") and "memory_limit_bytes" in (fn.__doc__ or "")
    assert "imports" in inspect.signature(bridge.run_code_sync).parameters
    assert "host" in inspect.signature(sandbox.run_code).parameters
    with pytest.raises(TypeError):
        bridge.run_code("1", limits={})  # type: ignore[call-arg]


PUBLIC = {
    sandbox: [
        "CodeExecution",
        "CodeResult",
        "ErrorInfo",
        "LogEntry",
        "OutputLimits",
        "RunMetrics",
        "SandboxError",
        "TransferError",
        "TypedArray",
        "UNDEFINED",
        "errors",
        "host",
        "run_code",
        "run_code_sync",
        "to_json_safe",
        "warm_up",
    ],
    bridge: [
        "ArgumentError",
        "BridgeError",
        "Capability",
        "Fetch",
        "FsError",
        "HostError",
        "Pause",
        "Quotas",
        "ReadOnlyDir",
        "Rejection",
        "ResumeError",
        "resume",
        "resume_sync",
        "run_code",
        "run_code_sync",
        "synchronous",
    ],
}


@pytest.mark.parametrize("package", [sandbox, bridge, runtime], ids=lambda m: m.__name__)
def test_public_names_live_at_their_public_path_and_stay_few(package: Any) -> None:
    assert len(package.__all__) <= 16
    for name in package.__all__:
        obj = getattr(package, name)
        module = getattr(obj, "__module__", None)
        if module is not None and not inspect.ismodule(obj):
            assert not module.split(".")[-1].startswith("_"), f"{name}: {module}"


@pytest.mark.parametrize("package", list(PUBLIC), ids=lambda m: m.__name__)
def test_all_is_exactly_the_documented_surface(package: Any) -> None:
    assert sorted(package.__all__) == sorted(PUBLIC[package])


@pytest.mark.parametrize("package", [sandbox, bridge, runtime], ids=lambda m: m.__name__)
def test_every_public_exception_derives_from_its_package_root(package: Any) -> None:
    roots = {
        sandbox: sandbox.SandboxError,
        bridge: bridge.BridgeError,
        runtime: runtime.ToolRuntimeError,
    }
    modules = [package, getattr(package, "errors", package)]
    for module in modules:
        for name in getattr(module, "__all__", dir(module)):
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                if issubclass(obj, Warning):
                    continue
                assert issubclass(obj, roots[package]), name


def test_the_root_re_exports_the_common_entry_points() -> None:
    assert quickjail.run_code_sync("export default 6 * 7").result == 42
    assert quickjail.CodeResult is sandbox.CodeResult
