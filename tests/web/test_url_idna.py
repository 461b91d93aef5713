"""URL hosts go through UTS #46 processing as the URL Standard's "domain to ASCII" asks
(CheckHyphens=false, CheckBidi=true, CheckJoiners=true, UseSTD3ASCIIRules=false,
Transitional_Processing=false), with the mapping table of the pinned idna package, and
Punycode handles labels of any length, through the public API.

Expected values are the UTS #46 test data's (IdnaTestV2, as the web-platform-tests carry it)
and Node 20's ``new URL(...).host``, except the Bidi rule, which Node does not apply.
"""

from __future__ import annotations

import json
import random

import pytest

from quickjail import run_code_sync


def host_of(domain: str) -> str | None:
    """``new URL("http://<domain>/").host`` in the guest, or None when it fails to parse."""
    src = (
        f"const d = {json.dumps(domain)};"
        "let h = null; try { h = new URL(`http://${d}/`).host } catch (e) {"
        "  if (!(e instanceof TypeError)) throw e }"
        "h"
    )
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    assert r.result is None or isinstance(r.result, str)
    return r.result


@pytest.mark.parametrize(
    ("domain", "host"),
    [
        # the mapping table, not lower-casing alone: capital sigma maps to sigma, not final sigma
        ("\u039b\u039f\u03a3", "xn--wxaim"),
        ("\u0392\u039f\u0301\u039b\u039f\u03a3.COM", "xn--nxasmq6b.com"),
        ("fa\u00df.de", "xn--fa-hia.de"),
        ("FA\u1e9e.de", "xn--fa-hia.de"),
        ("\u2165.example", "vi.example"),
        ("x\ufe0fy", "xy"),
        ("\u65e5\u672c\u8a9e\u3002\uff2a\uff30", "xn--wgv71a119e.jp"),
        # RFC 3492's samples (L) and (B)
        ("3\u5e74B\u7d44\u91d1\u516b\u5148\u751f", "xn--3b-ww4c5e180e575a65lsy2b"),
        ("\u4ed6\u4eec\u4e3a\u4ec0\u4e48\u4e0d\u8bf4\u4e2d\u6587", "xn--ihqwcrb4cv8a8dqg056pqjye"),
        # a joiner after a virama is valid (CONTEXTJ)
        ("a\u094d\u200cb", "xn--ab-fsf604u"),
        ("a\u094d\u200db", "xn--ab-fsf014u"),
        ("\u0646\u0627\u0645\u0647\u200c\u0627\u06cc", "xn--mgba3gch31f060k"),
        # a right-to-left label that keeps the Bidi rule
        ("\u05d0.com", "xn--4db.com"),
        ("\u0644\u0627", "xn--mgb1d"),
        ("xn--mgba3gch31f060k.com", "xn--mgba3gch31f060k.com"),
    ],
)
def test_a_domain_is_mapped_and_validated_per_uts46_before_punycode(domain: str, host: str) -> None:
    assert host_of(domain) == host


@pytest.mark.parametrize(
    "domain",
    [
        "a\u2488com",  # disallowed (NFKC would have made it "a1.com")
        "xn--a.pt",  # Punycode for U+0080, which is disallowed
        "\u0300a",  # a label may not begin with a combining mark
        "a\u200cb",  # ZWNJ without a virama or joining context (CONTEXTJ)
        "a\u200db",  # ZWJ without a virama
        "xn--ab-j1t",  # the same, as Punycode
        "xn--xn--a--gua.pt",  # a decoded label may not begin with "xn--"
        "1\u05d0.com",  # Bidi rule 1: a label of a Bidi domain begins with L, R or AL
        "a\u05d0",  # Bidi rule 5: a left-to-right label has no R
    ],
)
def test_a_domain_that_breaks_uts46_validity_fails_to_parse(domain: str) -> None:
    assert host_of(domain) is None


def test_a_label_longer_than_an_argument_list_round_trips_through_punycode() -> None:
    # 70,000 code points: more than a function call may take as arguments, and a decoder that
    # inserts into an array one code point at a time is quadratic in it
    src = """
    const label = "\u00fc".repeat(70000);
    const host = new URL(`http://${label}/`).host;
    const again = new URL(`http://${host}/`).host;
    [host.slice(0, 12), host.length, host.endsWith("a".repeat(69990)), again === host]
    """
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    assert r.result == ["xn--tdaaaaaa", 70006, True, True]


def test_many_distinct_code_points_round_trip_through_punycode() -> None:
    # 20,000 CJK ideographs in a scrambled order: every insertion lands somewhere else
    src = """
    const label = Array.from({ length: 20000 },
      (_, i) => String.fromCodePoint(0x4e00 + (i * 7919) % 20000)).join("");
    const host = new URL(`http://${label}/`).host;
    const back = new URL(`http://${host}/`).host;
    [host.length, back === host, new URL(`http://${label.slice(0, 3)}/`).host]
    """
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    assert r.result == [59761, True, "xn--4gqz76e1gv"]


def test_a_huge_invalid_punycode_label_is_an_invalid_url_not_a_range_error() -> None:
    src = """
    let got;
    try { new URL(`http://xn--${"a".repeat(300000)}/`); got = "parsed" }
    catch (e) { got = `${e.name}: ${e.message.slice(0, 12)}` }
    got
    """
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    assert r.result == "TypeError: Invalid URL:"


def test_punycode_agrees_with_pythons_codec_on_random_labels() -> None:
    # code points that UTS #46 keeps as they are (valid, NFC-stable, left-to-right, no marks),
    # so the host is "xn--" + RFC 3492 of the label itself; Python's codec is the reference
    rng = random.Random(27)
    pools = [
        "abcdefghijklmnopqrstuvwxyz0123456789-",
        "\u00e9\u00fc\u00f1\u00df\u00e5",
        "".join(map(chr, range(0x3B1, 0x3CA))),
        "".join(map(chr, range(0x430, 0x450))),
        "".join(map(chr, range(0x4E00, 0x4E00 + 400))),
        "".join(map(chr, range(0xAC00, 0xAC00 + 400))),
        "".join(map(chr, range(0x20000, 0x20000 + 50))),
    ]
    labels = []
    for size in [*range(1, 40), *rng.choices(range(40, 300), k=40), 3000]:
        chosen = rng.sample(pools, rng.randint(1, len(pools)))
        label = "".join(rng.choice(rng.choice(chosen)) for _ in range(size))
        if label.isascii() or label.startswith("-") or label.endswith("-") or label[2:4] == "--":
            continue
        labels.append(label)
    expected = ["xn--" + label.encode("punycode").decode("ascii") for label in labels]
    src = f"""
    const labels = {json.dumps(labels)};
    labels.map((label) => {{
      const host = new URL(`http://${{label}}/`).host;
      return [host, new URL(`http://${{host}}/`).host === host];
    }})
    """
    r = run_code_sync(src, kind="script", timeout=60)
    assert r.status == "success", r.error
    assert r.result == [[host, True] for host in expected]
