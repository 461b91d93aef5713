"""Property tests: redaction leaves no secret behind; path normalization is canonical."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from quickjail.runtime._paths import normalize_path
from quickjail.runtime._secrets import REDACTED, Redactor
from quickjail.runtime.errors import ThreadPathError

_ALPHABET = st.sampled_from(list("ab]D[RE.x/é\x00"))
_secret = st.text(_ALPHABET, min_size=1, max_size=6).filter(lambda s: s not in REDACTED)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, list | tuple):
        return [s for item in value for s in _strings(item)]
    return []


@given(text=st.text(_ALPHABET, max_size=40), secrets=st.lists(_secret, min_size=1, max_size=3))
def test_redacted_text_never_contains_a_secret(text: str, secrets: list[str]) -> None:
    redactor = Redactor(secrets)
    for secret in secrets:
        mixed = f"{text}{secret}{text}"
        assert secret not in redactor.text(mixed)
        assert secret.encode() not in redactor.data(mixed.encode())
        nested = redactor.value({mixed: [mixed, (mixed,)]})
        assert all(secret not in piece for piece in _strings(nested))


@given(st.text(st.sampled_from(list("ab./\\\x00:C")), max_size=20))
def test_normalized_paths_are_canonical_and_never_traverse(path: str) -> None:
    try:
        canonical = normalize_path(path)
    except ThreadPathError:
        return
    assert canonical.startswith("/") and not canonical.startswith("//")
    assert normalize_path(canonical) == canonical
    assert normalize_path(canonical.lstrip("/")) == canonical
    segments = canonical.split("/")[1:]
    assert all(seg not in ("", ".", "..") for seg in segments)
    assert "\\" not in canonical and "\x00" not in canonical


def test_redaction_walks_sets_and_keeps_their_members_hashable() -> None:
    # a JS Set arrives as a frozenset (issue 28, item 11); a host value may hold tuples in one
    redactor = Redactor(["SEK"])
    value = {"s": frozenset({"a-SEK", ("SEK", (1, "SEK")), b"SEK"})}
    assert redactor.value(value) == {
        "s": frozenset({f"a-{REDACTED}", (REDACTED, (1, REDACTED)), REDACTED.encode()})
    }
