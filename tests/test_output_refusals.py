"""A report the host refuses reaches the program as an error naming why: the limit and its value,
or what the host could not take; the program catches it and carries on."""

from __future__ import annotations

import pytest

from quickjail import run_code_sync
from quickjail.sandbox import OutputLimits

pytestmark = pytest.mark.timeout(60)

CATCH_EACH = (
    "const seen = [];\n"
    "for (let i = 0; i < 5; i++) {\n"
    "  try { report(VALUE) } catch (e) { seen.push(`${e.name}: ${e.message}`) }\n"
    "}\n"
    "export default seen"
)


@pytest.mark.parametrize(
    ("value", "limits", "taken", "message"),
    [
        (
            "i",
            OutputLimits(max_reports=3),
            [0, 1, 2],
            "RangeError: report refused: more than 3 reports (output_limits.max_reports)",
        ),
        (
            "'x'.repeat(100)",
            OutputLimits(max_report_bytes=250),
            ["x" * 100, "x" * 100],
            "RangeError: report refused: more than 250 bytes of reports in all "
            "(output_limits.max_report_bytes)",
        ),
    ],
    ids=["max_reports", "max_report_bytes"],
)
def test_a_refused_report_names_the_limit_and_its_value(
    value: str, limits: OutputLimits, taken: list[object], message: str
) -> None:
    r = run_code_sync(CATCH_EACH.replace("VALUE", value), output_limits=limits)
    assert r.status == "success", r.error
    assert r.reports == taken
    assert r.result == [message] * (5 - len(taken))


def test_a_report_larger_than_the_whole_byte_budget_is_refused_by_that_limit() -> None:
    src = "let m; try { report('x'.repeat(1000)) } catch (e) { m = e.message }\nexport default m"
    r = run_code_sync(src, output_limits=OutputLimits(max_report_bytes=100))
    assert r.reports == []
    assert r.result == (
        "report refused: more than 100 bytes of reports in all (output_limits.max_report_bytes)"
    )


def test_a_report_the_host_cannot_hold_is_a_type_error_saying_why() -> None:
    src = (
        "let m = 'nothing thrown';\n"
        "try { report(new Map([[1, 'a'], [true, 'b']])) }\n"
        "catch (e) { m = `${e.name}: ${e.message}` }\n"
        "report('after');\n"
        "export default m"
    )
    r = run_code_sync(src)
    assert r.status == "success", r.error
    assert r.result == (
        "TypeError: report refused: cannot transfer a Map whose keys 1 and True are one in Python "
        "at value"
    )
    assert r.reports == ["after"]


def test_the_reason_the_host_gives_is_cut_short() -> None:
    key = "k" * 500
    src = (
        f"let m = ''; try {{ report({{ {key}: new Map([[1, 'a'], [true, 'b']]) }}) }}\n"
        "catch (e) { m = e.message }\n"
        "export default m"
    )
    r = run_code_sync(src)
    assert isinstance(r.result, str)
    assert r.result.startswith("report refused: cannot transfer a Map whose keys")
    assert len(r.result.encode()) <= len("report refused: ") + 192
