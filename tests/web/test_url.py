"""URL and URLSearchParams follow the WHATWG URL Standard, through the public API.

The parse table has the shape of the web-platform-tests' urltestdata (input, base, expected
href or failure); the cases are our own, chosen to pass through every state of the basic URL
parser and every branch of the host parser.
"""

from __future__ import annotations

import json

import pytest

from quickjail import run_code_sync


def js(src: str) -> object:
    r = run_code_sync(src, kind="script")
    assert r.status == "success", r.error
    return r.result


FAIL = None

PARSE: list[tuple[str, str | None, str | None]] = [
    # scheme start, scheme
    ("HTTP://example.com", None, "http://example.com/"),
    ("h2c+x-y.z://h/", None, "h2c+x-y.z://h/"),
    ("1http://x/", None, FAIL),
    ("  \t http://ex\nample.com/\r  ", None, "http://example.com/"),
    ("\u0000\u001fhttp://h/\u0001 ", None, "http://h/"),
    ("http:example.com/", None, "http://example.com/"),
    ("http:\\\\example.com\\a\\b", None, "http://example.com/a/b"),
    ("http:/example.com/", "http://other/", "http://other/example.com/"),
    ("http:foo", "http://h/a/b", "http://h/a/foo"),
    ("https:foo", "http://h/a/b", "https://foo/"),
    # no scheme
    ("foo", None, FAIL),
    ("foo", "mailto:x", FAIL),
    ("#f", "mailto:x@y", "mailto:x@y#f"),
    ("?q", "http://h/p?old#frag", "http://h/p?q"),
    ("", "http://h/p?q#f", "http://h/p?q"),
    ("#", "http://h/p?q", "http://h/p?q#"),
    # relative, relative slash
    ("../../../x", "http://h/a/b/c", "http://h/x"),
    ("./", "http://h/a/b", "http://h/a/"),
    ("..", "http://h/a/b/", "http://h/a/"),
    ("//x:81/y", "http://h/", "http://x:81/y"),
    ("\\\\x\\y", "http://h/", "http://x/y"),
    ("/\\x", "http://h/", "http://x/"),
    ("\\x", "foo://h/a", "foo://h/\\x"),
    ("a?b#c", "foo://h/d/e", "foo://h/d/a?b#c"),
    ("/p", "foo://u:pw@h:9/a", "foo://u:pw@h:9/p"),
    # authority: userinfo
    ("http://user:pass@host/", None, "http://user:pass@host/"),
    ("http://user@:pass@host/", None, "http://user%40:pass@host/"),
    ("http://a@b@c/", None, "http://a%40b@c/"),
    ("http://:@host/", None, "http://host/"),
    ("http://@host/", None, "http://host/"),
    ("http://user@/", None, FAIL),
    ("http://us er:p@ss;@h/", None, "http://us%20er:p%40ss%3B@h/"),
    ("http://\u00fc:\u00f6@h/", None, "http://%C3%BC:%C3%B6@h/"),
    # host: domains
    ("http://EXAMPLE.com./", None, "http://example.com./"),
    ("http://ex%41mple.com/", None, "http://example.com/"),
    ("http://a b/", None, FAIL),
    ("http://a<b/", None, FAIL),
    ("http://a%25b/", None, FAIL),
    ("http://%zz/", None, FAIL),
    ("http://a^b/", None, FAIL),
    ("http:///", None, FAIL),
    ("http://h\u007f/", None, FAIL),
    # host: opaque
    ("foo://a b/", None, FAIL),
    ("foo://ex%41mple/", None, "foo://ex%41mple/"),
    ("foo://\u00c9X/", None, "foo://%C3%89X/"),
    ("foo:///x", None, "foo:///x"),
    ("foo://0x7f.1/", None, "foo://0x7f.1/"),
    # host: IPv6
    ("http://[::1]:8080/", None, "http://[::1]:8080/"),
    ("http://[0:0:0:0:0:0:13.1.68.3]/", None, "http://[::d01:4403]/"),
    ("http://[::ffff:192.168.0.1]/", None, "http://[::ffff:c0a8:1]/"),
    ("http://[1:2:3:4:5:6:7:8]/", None, "http://[1:2:3:4:5:6:7:8]/"),
    ("http://[1:0:0:2:0:0:0:3]/", None, "http://[1:0:0:2::3]/"),
    ("http://[1:0:0:2:0:0:3:4]/", None, "http://[1::2:0:0:3:4]/"),
    ("http://[1:0:2:3:4:5:6:7]/", None, "http://[1:0:2:3:4:5:6:7]/"),
    ("http://[0:0:0:0:0:0:0:0]/", None, "http://[::]/"),
    ("http://[1::]/", None, "http://[1::]/"),
    ("http://[ABCD::EF]/", None, "http://[abcd::ef]/"),
    ("http://[::1::]/", None, FAIL),
    ("http://[1:2:3:4:5:6:7:8:9]/", None, FAIL),
    ("http://[1:2:3:4:5:6:7]/", None, FAIL),
    ("http://[12345::]/", None, FAIL),
    ("http://[:1]/", None, FAIL),
    ("http://[1:]/", None, FAIL),
    ("http://[::1.2.3.]/", None, FAIL),
    ("http://[::1.2.3.4x]/", None, FAIL),
    ("http://[::01.2.3.4]/", None, FAIL),
    ("http://[::1.2.3.256]/", None, FAIL),
    ("http://[1:2/", None, FAIL),
    ("foo://[::AB]/", None, "foo://[::ab]/"),
    # host: IPv4 number forms
    ("http://0x7F.0.0.1/", None, "http://127.0.0.1/"),
    ("http://0177.0.0.1/", None, "http://127.0.0.1/"),
    ("http://2130706433/", None, "http://127.0.0.1/"),
    ("http://0x7f000001/", None, "http://127.0.0.1/"),
    ("http://127.1/", None, "http://127.0.0.1/"),
    ("http://127.0.1/", None, "http://127.0.0.1/"),
    ("http://1.256/", None, "http://1.0.1.0/"),
    ("http://1.2.3.4./", None, "http://1.2.3.4/"),
    ("http://0x/", None, "http://0.0.0.0/"),
    ("http://00/", None, "http://0.0.0.0/"),
    ("http://4294967295/", None, "http://255.255.255.255/"),
    ("http://4294967296/", None, FAIL),
    ("http://1.2.3.4.5/", None, FAIL),
    ("http://256.0.0.1/", None, FAIL),
    ("http://09.1/", None, FAIL),
    ("http://foo.0x4/", None, FAIL),
    ("http://foo.09/", None, FAIL),
    ("http://1.2.3.09a/", None, "http://1.2.3.09a/"),
    ("http://1.2.3.4.x/", None, "http://1.2.3.4.x/"),
    # port
    ("http://h:80/", None, "http://h/"),
    ("https://h:80/", None, "https://h:80/"),
    ("http://h:0080/", None, "http://h/"),
    ("ws://h:80/", None, "ws://h/"),
    ("wss://h:443/", None, "wss://h/"),
    ("ftp://h:21/", None, "ftp://h/"),
    ("foo://h:80/", None, "foo://h:80/"),
    ("http://h:65535/", None, "http://h:65535/"),
    ("http://h:0/", None, "http://h:0/"),
    ("http://h:65536/", None, FAIL),
    ("http://h:8a/", None, FAIL),
    ("http://h:/", None, "http://h/"),
    ("http://h:1:2/", None, FAIL),
    # file, file slash, file host
    ("file:///tmp/x", None, "file:///tmp/x"),
    ("file://localhost/etc", None, "file:///etc"),
    ("file://LOCALHOST/etc", None, "file:///etc"),
    ("file://host/share", None, "file://host/share"),
    ("file:C:/x/../..", None, "file:///C:/"),
    ("file:/C|/x", None, "file:///C:/x"),
    ("file:///C|", None, "file:///C:"),
    ("file:c:\\a\\b", None, "file:///c:/a/b"),
    ("..", "file:///C:/a/b", "file:///C:/"),
    ("/x", "file:///C:/a", "file:///C:/x"),
    ("//h/x", "file:///C:/a", "file://h/x"),
    ("x", "file:///dir/file", "file:///dir/x"),
    ("C|/y", "file:///a/b", "file:///C:/y"),
    ("file:?q", "file:///a/b", "file:///a/b?q"),
    ("#f", "file:///a/b?q", "file:///a/b?q#f"),
    ("file://[1::8]/x", None, "file://[1::8]/x"),
    ("file:\\\\h\\x", None, "file://h/x"),
    ("file://a b/", None, FAIL),
    # path start, path: dot segments, percent-encoding
    ("http://h/a/%2e./b", None, "http://h/b"),
    ("http://h/a/.%2E/b", None, "http://h/b"),
    ("http://h/a/%2E/b", None, "http://h/a/b"),
    ("http://h/a/..", None, "http://h/"),
    ("http://h/a/.", None, "http://h/a/"),
    ("http://h/a/./b/../../c", None, "http://h/c"),
    ("http://h/..a/.b", None, "http://h/..a/.b"),
    ('http://h/ a"<>`{}|', None, "http://h/%20a%22%3C%3E%60%7B%7D|"),
    ("http://h/a^b", None, "http://h/a%5Eb"),
    ("http://h/\u00e9?\u00e9#\u00e9", None, "http://h/%C3%A9?%C3%A9#%C3%A9"),
    ("http://h/%41%zz", None, "http://h/%41%zz"),
    ("http://h/\U0001f600", None, "http://h/%F0%9F%98%80"),
    ("foo:/a/../../b", None, "foo:/b"),
    ("foo:/.//p", None, "foo:/.//p"),
    ("foo://h/a/./b/../c", None, "foo://h/a/c"),
    ("foo://h", None, "foo://h"),
    # opaque paths
    ("mailto:a@b.c?subject=hi there", None, "mailto:a@b.c?subject=hi%20there"),
    ("data:text/html,<p>\u00e9</p>", None, "data:text/html,<p>%C3%A9</p>"),
    ("javascript:alert(1)", None, "javascript:alert(1)"),
    ("sc:\u0001x y", None, "sc:%01x y"),
    ("urn:isbn:0451450523", None, "urn:isbn:0451450523"),
    ("sc:a b  ?q", None, "sc:a b %20?q"),
    ("sc:a b  #f", None, "sc:a b %20#f"),
    ("sc:a b  ", None, "sc:a b"),
    # query, fragment
    ("http://h/?a'b", None, "http://h/?a%27b"),
    ("foo://h/?a'b", None, "foo://h/?a'b"),
    ('http://h/?a b"<>`', None, "http://h/?a%20b%22%3C%3E`"),
    ("http://h/?%zz&\u00e9", None, "http://h/?%zz&%C3%A9"),
    ("http://h/?q?r", None, "http://h/?q?r"),
    ('http://h/#a b"<>`#', None, "http://h/#a%20b%22%3C%3E%60#"),
    ("http://h/#\u00e9", None, "http://h/#%C3%A9"),
    # IDNA: Punycode, lower-casing, NFKC, ignored code points
    ("http://m\u00fcnchen.de/", None, "http://xn--mnchen-3ya.de/"),
    ("http://M\u00dcNCHEN.DE/", None, "http://xn--mnchen-3ya.de/"),
    ("http://b\u00fccher.example/", None, "http://xn--bcher-kva.example/"),
    ("http://\u4f8b\u3048.\u30c6\u30b9\u30c8/", None, "http://xn--r8jz45g.xn--zckzah/"),
    (
        "http://\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45\uff0e\uff43\uff4f\uff4d/",
        None,
        "http://example.com/",
    ),
    ("http://a\u3002b/", None, "http://a.b/"),
    ("http://xn--mnchen-3ya.de/", None, "http://xn--mnchen-3ya.de/"),
    ("http://XN--MNCHEN-3YA.de/", None, "http://xn--mnchen-3ya.de/"),
    ("http://xn--/", None, FAIL),
    ("http://xn--abc-/", None, FAIL),
    ("http://a\u00adb/", None, "http://ab/"),
    ("http://\u00ad/", None, FAIL),
    ("http://%C3%BC.de/", None, "http://xn--tda.de/"),
    ("http://\uff11\uff12\uff17.0.0.1/", None, "http://127.0.0.1/"),
]


def _ids(case: tuple[str, str | None, str | None]) -> str:
    return ascii(case[0])[1:-1][:40] + (f" @ {case[1]}" if case[1] else "")


@pytest.mark.parametrize(("url", "base", "href"), PARSE, ids=[_ids(c) for c in PARSE])
def test_parse_table(url: str, base: str | None, href: str | None) -> None:
    args = json.dumps(url) + (f", {json.dumps(base)}" if base else "")
    got = js(
        f"let r; try {{ r = new URL({args}).href }} catch (e) {{ r = e.name }}"
        f"[r, URL.canParse({args}), URL.parse({args})?.href ?? null]"
    )
    if href is None:
        assert got == ["TypeError", False, None]
    else:
        assert got == [href, True, href]


def test_parse_table_is_large() -> None:
    assert len(PARSE) >= 80


def test_an_unparsable_base_fails_even_when_the_input_is_absolute() -> None:
    got = js("try { new URL('http://h/', 'nope') } catch (e) { [e.name, URL.canParse('x', 'y')] }")
    assert got == ["TypeError", False]


def test_getters() -> None:
    got = js(
        "const u = new URL('HTTPS://u:p@H.com:8443/p/a?x=1#f');"
        "['href', 'origin', 'protocol', 'username', 'password', 'host', 'hostname', 'port',"
        " 'pathname', 'search', 'hash'].map((k) => u[k]).concat([String(u), u.toJSON(),"
        " JSON.stringify([u]), Object.prototype.toString.call(u)])"
    )
    assert got == [
        "https://u:p@h.com:8443/p/a?x=1#f",
        "https://h.com:8443",
        "https:",
        "u",
        "p",
        "h.com:8443",
        "h.com",
        "8443",
        "/p/a",
        "?x=1",
        "#f",
        "https://u:p@h.com:8443/p/a?x=1#f",
        "https://u:p@h.com:8443/p/a?x=1#f",
        '["https://u:p@h.com:8443/p/a?x=1#f"]',
        "[object URL]",
    ]


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://h:80/x", "http://h"),
        ("ws://h:81", "ws://h:81"),
        ("ftp://h", "ftp://h"),
        ("file:///x", "null"),
        ("foo://h/", "null"),
        ("blob:https://a.com:8080/uuid", "https://a.com:8080"),
        ("blob:ftp://a/uuid", "null"),
        ("blob:foo:bar", "null"),
        ("data:,x", "null"),
    ],
)
def test_origin(url: str, origin: str) -> None:
    assert js(f"new URL({json.dumps(url)}).origin") == origin


@pytest.mark.parametrize(
    ("href", "setter", "value", "expected"),
    [
        ("http://h/", "protocol", "https", "https://h/"),
        ("http://h/", "protocol", "HTTPS:foo", "https://h/"),
        ("http://h:443/", "protocol", "https", "https://h/"),
        ("http://h/", "protocol", "foo", "http://h/"),  # special to non-special: refused
        ("foo://h/", "protocol", "http", "foo://h/"),
        ("http://u@h/", "protocol", "file", "http://u@h/"),
        ("file:///x", "protocol", "http", "file:///x"),
        ("http://h/", "protocol", "ht tp", "http://h/"),
        ("foo://h/", "protocol", "bar", "bar://h/"),
        ("http://h/", "username", "a b@", "http://a%20b%40@h/"),
        ("file:///x", "username", "u", "file:///x"),
        ("mailto:x", "username", "u", "mailto:x"),
        ("http://u@h/", "password", "p:w", "http://u:p%3Aw@h/"),
        ("http://u:p@h/", "password", "", "http://u@h/"),
        ("http://h/p", "host", "x.org:8080", "http://x.org:8080/p"),
        ("http://h:1/p", "host", "x.org", "http://x.org:1/p"),
        ("http://h/", "host", "x:65536", "http://x/"),  # the host is set before the port fails
        ("http://h/", "host", "", "http://h/"),
        ("http://h/", "host", "a b", "http://h/"),
        ("mailto:x", "host", "h", "mailto:x"),
        ("foo://h/p", "host", "", "foo:///p"),
        ("file://h/p", "host", "localhost", "file:///p"),
        ("http://h:8/p", "hostname", "x.org", "http://x.org:8/p"),
        ("http://h/", "hostname", "x.org:9", "http://h/"),
        ("http://h/", "hostname", "[::1]", "http://[::1]/"),
        ("http://h/", "port", "8080", "http://h:8080/"),
        ("http://h:8080/", "port", "", "http://h/"),
        ("http://h/", "port", "80", "http://h/"),
        ("http://h/", "port", "12ab", "http://h:12/"),
        ("http://h:1/", "port", "ab", "http://h:1/"),
        ("http://h/", "port", "65536", "http://h/"),
        ("file:///x", "port", "8", "file:///x"),
        ("http://h/a?q", "pathname", "b c/../d", "http://h/d?q"),
        ("http://h/", "pathname", "?#", "http://h/%3F%23"),
        ("http://h/", "pathname", "\\a", "http://h/a"),
        ("mailto:x", "pathname", "y", "mailto:x"),
        ("foo://h/a", "pathname", "", "foo://h"),
        ("http://h/p?a#f", "search", "b=1", "http://h/p?b=1#f"),
        ("http://h/p?a#f", "search", "", "http://h/p#f"),
        ("http://h/p", "search", "??x", "http://h/p??x"),
        ("http://h/p", "search", "a'b", "http://h/p?a%27b"),
        ("http://h/p", "search", "#x", "http://h/p?%23x"),
        ("http://h/p#a", "hash", "b c", "http://h/p#b%20c"),
        ("http://h/p#a", "hash", "", "http://h/p"),
        ("http://h/p", "hash", "##x", "http://h/p##x"),
        ("sc:a  #f", "hash", "", "sc:a %20"),  # the path never ends in a bare space
        ("sc:a  ?q", "search", "", "sc:a %20"),
        ("http://h/", "href", "https://x/?q=1", "https://x/?q=1"),
    ],
)
def test_setters(href: str, setter: str, value: str, expected: str) -> None:
    got = js(f"const u = new URL({json.dumps(href)}); u.{setter} = {json.dumps(value)}; u.href")
    assert got == expected


def test_href_setter_throws_on_failure_and_keeps_the_url() -> None:
    got = js(
        "const u = new URL('http://h/'); try { u.href = 'nope' } catch (e) { [e.name, u.href] }"
    )
    assert got == ["TypeError", "http://h/"]


@pytest.mark.parametrize(
    ("init", "entries"),
    [
        ("'?a=1&b=2&a=3'", [["a", "1"], ["b", "2"], ["a", "3"]]),
        ("'a=b=c'", [["a", "b=c"]]),
        ("'a+b=c%20d+'", [["a b", "c d "]]),
        ("'%zz=%F0%9F&%41'", [["%zz", "\ufffd"], ["A", ""]]),
        ("'&&a&&'", [["a", ""]]),
        ("'??a'", [["?a", ""]]),
        ("''", []),
        ("[['x', 1], new Set(['y', 'z'])]", [["x", "1"], ["y", "z"]]),
        ("{ b: 2, a: undefined }", [["b", "2"], ["a", "undefined"]]),
        ("new URLSearchParams('q=1')", [["q", "1"]]),
        (
            "Object.create({ inherited: 1 }, { own: { value: 1, enumerable: true } })",
            [["own", "1"]],
        ),
        ("undefined", []),
        ("null", [["null", ""]]),
    ],
)
def test_search_params_constructor(init: str, entries: list[list[str]]) -> None:
    assert js(f"[...new URLSearchParams({init})]") == entries


def test_search_params_from_a_record_merge_keys_that_collide_after_surrogate_replacement() -> None:
    # a record's keys are USVStrings: two lone surrogates become U+FFFD, so "\ud835x" and
    # "\ud83dx" are one key, with the last value, where the first was (Web IDL record)
    got = js('[...new URLSearchParams({ "\\uD835x": "1", xx: "2", "\\uD83Dx": "3" })]')
    assert got == [["\ufffdx", "3"], ["xx", "2"]]


@pytest.mark.parametrize("init", ["[['x']]", "[['x', 1, 2]]", "[1]", "{ [Symbol()]: 1 }"])
def test_search_params_constructor_rejects_bad_pairs(init: str) -> None:
    got = js(f"try {{ new URLSearchParams({init}) }} catch (e) {{ e.name }}")
    assert got == "TypeError"


def test_search_params_methods() -> None:
    got = js(
        "const p = new URLSearchParams('a=1&b=2&a=3&c=4');"
        "const out = [p.get('a'), p.get('zz'), p.getAll('a'), p.has('b'), p.has('a', '3'),"
        " p.has('a', '9'), p.size];"
        "p.delete('a', '1'); out.push(p.toString());"
        "p.append('a', '5'); p.set('a', 'x'); out.push(p.toString());"
        "p.delete('b'); out.push(p.toString(), p.size);"
        "const seen = []; p.forEach((v, k, o) => seen.push(k + v + (o === p))); out.push(seen);"
        "out.push([...p.keys()], [...p.values()], [...p.entries()]);"
        "out"
    )
    assert got == [
        "1",
        None,
        ["1", "3"],
        True,
        True,
        False,
        4,
        "b=2&a=3&c=4",
        "b=2&a=x&c=4",
        "a=x&c=4",
        2,
        ["axtrue", "c4true"],
        ["a", "c"],
        ["x", "4"],
        [["a", "x"], ["c", "4"]],
    ]


def test_sort_is_stable_and_by_code_units() -> None:
    got = js(
        "const p = new URLSearchParams('z=1&a=2&z=0&a=1&%EF%BF%BD=r&%F0%9F%98%80=e&B=c');"
        "p.sort(); [...p.keys()].join(',') + '|' + [...p.values()].join(',')"
    )
    assert got == "B,a,a,z,z,\U0001f600,\ufffd|c,2,1,1,0,e,r"


@pytest.mark.parametrize(
    ("name", "encoded"),
    [
        ("a b", "a+b"),
        ("&=+%", "%26%3D%2B%25"),
        ("*-._", "*-._"),
        ("!'()~", "%21%27%28%29%7E"),
        ("\u00e9\U0001f600", "%C3%A9%F0%9F%98%80"),
        ("\ud800", "%EF%BF%BD"),
        ("\n/?#", "%0A%2F%3F%23"),
    ],
)
def test_form_urlencoded_serialization(name: str, encoded: str) -> None:
    assert js(f"new URLSearchParams([[{json.dumps(name)}, '']]).toString()") == f"{encoded}="


def test_search_params_are_live_both_ways() -> None:
    got = js(
        "const u = new URL('http://h/p?a=1#f'); const p = u.searchParams; const out = [];"
        "p.append('b', 'x y'); out.push(u.href);"
        "u.search = '?z=%41'; out.push(p.get('z'), p.size, p === u.searchParams);"
        "u.href = 'http://k/?m=1&m=2'; out.push(p.getAll('m'));"
        "p.delete('m'); out.push(u.href, u.search);"
        "u.search = ''; out.push(p.size);"
        "const o = new URL('sc:a ?q=1'); o.searchParams.delete('q'); out.push(o.href);"
        "const q = new URL('http://h/??x=1'); out.push(q.searchParams.get('?x'));"
        "out"
    )
    assert got == [
        "http://h/p?a=1&b=x+y#f",
        "A",
        1,
        True,
        ["1", "2"],
        "http://k/",
        "",
        0,
        "sc:a%20",
        "1",
    ]


def test_url_and_search_params_need_their_arguments() -> None:
    got = js(
        "const t = (f) => { try { f(); return 'ok' } catch (e) { return e.name } };"
        "const p = new URLSearchParams();"
        "[t(() => new URL()), t(() => URL()), t(() => p.append('a')), t(() => p.get()),"
        " t(() => p.forEach(1)), t(() => URL.prototype.href)]"
    )
    assert got == ["TypeError"] * 6
