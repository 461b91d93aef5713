"""Build step: ``Intl`` for the guest, from the formatjs ECMA-402 polyfills, as one C table.

QuickJS-ng has no ``Intl``. The formatjs packages (pinned below by version and by the
registry's ``dist.integrity``, a sha512 of the tarball) implement it in JavaScript with CLDR
data; they are fetched from the npm registry at build time (``$QUICKJAIL_NPM_REGISTRY`` may
override the base address), checked, and read as data: nothing of them is in the repository.

What goes into the guest (``intl.inc``, the initializer of ``_guest/web_intl.c``'s table,
sorted by name so the guest can binary-search it):

- ``mod:<package>``: each package's ES module (``polyfill-force.js`` of a polyfill, ``index.js``
  of a library), rewritten into the source of one function
  ``(function (__import, Intl, globalThis) { ... })``: ``import {a, b as c} from "p"`` becomes
  ``const {a, b: c} = __import("mod:p@version")`` (the version each package's own
  ``dependencies`` pins) and the final ``export {...}`` a ``return``. ``web/intl.js`` calls it
  with a private ``Intl`` object, so the polyfill installs its classes there, not on the
  program's globals. Its large JSON tables become entries of their own,
  ``mod:<package>#<name>``, read with ``__json(name)`` (:func:`split_data`).
- ``<kind>/<locale>``: the argument of a ``locale-data/<locale>.js`` file's
  ``__addLocaleData(...)`` call, as compact JSON text, or as a JavaScript expression where it
  holds functions (plural rules). Regional English (every ``locale-data/en-*.js`` the package
  has, :func:`en_regions`) is stored as a JSON diff (:func:`json_diff`) against whichever of
  English's CLDR parents (:data:`EN_PARENTS`) gives the smallest one: most of ``en-AU`` is
  ``en-001``'s, most of ``en-001`` is ``en``'s.
- ``manifest``: JSON, per kind: which locale tags each data entry registers (the tag, its CLDR
  default content, its truncations, as formatjs's ``registerLocaleData`` does) and which
  entries are diffs against which base.

The guest compiles a module or parses a data entry on a run's first use of it (see
``web/intl.js``); a run that never uses ``Intl`` touches none of these pages. Loaded by path
from ``_build.py`` (no package imports).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import tarfile
import tempfile
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "EN_PARENTS",
    "KINDS",
    "LOCALES",
    "PACKAGES",
    "IntlDataError",
    "NpmPackage",
    "diff_base",
    "en_regions",
    "fetch_npm",
    "intl_entries",
    "json_diff",
    "json_merge",
    "module_source",
    "pack",
    "patch_source",
    "registered_tags",
    "split_data",
    "tz_data",
    "unpack",
]


class IntlDataError(RuntimeError):
    """A pinned package could not be fetched, did not match its hash, or is not as expected."""


@dataclass(frozen=True)
class NpmPackage:
    """One pinned npm tarball: its name, version and ``dist.integrity`` (``sha512-<base64>``)."""

    name: str
    version: str
    integrity: str

    @property
    def key(self) -> str:
        """The name ``__import`` knows it by: ``mod:<name>@<version>``."""
        return f"mod:{self.name}@{self.version}"

    @property
    def tarball(self) -> str:
        """The file name on the registry: ``<unscoped name>-<version>.tgz``."""
        return f"{self.name.rsplit('/', 1)[-1]}-{self.version}.tgz"


def _pin(spec: str, integrity: str) -> NpmPackage:
    name, version = spec.rsplit("@", 1)
    return NpmPackage(name, version, integrity)


PACKAGES = {
    p.name + "@" + p.version: p
    for p in (
        _pin(
            "@formatjs/intl-getcanonicallocales@3.2.12",
            "sha512-THqQLTJUH2z2A7oE1guW8VzpGpsGFxwWZ+l8cI8Bk75xUU8DxtJoLfKl+5a6fYK26GeDWDWE0UbDhE5SwcLoFg==",
        ),
        _pin(
            "@formatjs/intl-locale@5.3.12",
            "sha512-bI5CrvuC6A5PMOIiHX+6ETTHXzUofHw1U/fkI59sQJ+BFbkglxIVVncFPxHf4IHmAqAs/Rlp2bdzTEcLaq2tQw==",
        ),
        _pin(
            "@formatjs/intl-pluralrules@6.3.16",
            "sha512-iOqCpBM2fo7bbbWqno+yN9WioepV01N2q3KawFZhRYADzijpzmIIA6cbFXrriCI1Mt2q5c7mceiKHoQkEFf0/Q==",
        ),
        _pin(
            "@formatjs/intl-numberformat@9.4.3",
            "sha512-absVu2I7FlWl+Buictw2PL8Fl385uab3bEA3TCCTu+0DBHHFE+RTbmPmj0nUVO82U1b2Qw3/OA2I7KKLI48EpQ==",
        ),
        _pin(
            "@formatjs/intl-datetimeformat@7.8.1",
            "sha512-tGVZ3KdbHQwmA8wBn7gEJeOE9zo0InoyrbJWsD4VYdHGJfXykflOpdNC69+QaZShxfEQ6dwUfXjDfNzxe4AO4A==",
        ),
        _pin(
            "@formatjs/intl-relativetimeformat@13.0.1",
            "sha512-Gl5dCHb7elEC19tTzxIyllWLHaHnN+HpQYEaA9xxAt9rKgRLwC3vGty1w8bVGG7p2YcGSPIg5c4qn4KdkGcTqg==",
        ),
        _pin(
            "@formatjs/intl-listformat@8.3.15",
            "sha512-dZEUYngBoAWLgYXvoBX3P6jIk5cg2rva7p5ZJTTn4lsCx/9abUKoPI2Wf59twxl5jgw1SDQMR1MBzJ7oiHwffw==",
        ),
        _pin(
            "@formatjs/intl-displaynames@7.3.15",
            "sha512-U26iRwxxnD4aZY+aDiSEV5Ym/7Db5S9OxKQ4c3T+WFFIj+DPKEQLh+tC++dMH1SuEa8CSWvPJkpaADa+WHn3qA==",
        ),
        _pin(
            "@formatjs/intl-segmenter@12.2.15",
            "sha512-1AEewdf+fVMgmYdzwHKX1cNLQZ42coRWAiboAtSVlAEM7n23U/DkHxKQ32+AUGDNZY1WsmRtXZkFhiMGxAhbww==",
        ),
        _pin(
            "@formatjs/intl-localematcher@0.10.1",
            "sha512-gBqglQK9rXuHsLmM8wzTMBy4Xo4d0jamirIVKuEL8F1rwbskWdpMA1kZarSkny+uvr5q/K6GSzE0Rcq1wZLl3g==",
        ),
        _pin(
            "@formatjs/bigdecimal@0.2.7",
            "sha512-B4+XY/e4u5v261r3a37Kq2ax91gPZSKGyVpx8X5dygAggLlUz+6MeBpmAhaBFGB8WQ4JB1qD+QtKHk9aJkEb9Q==",
        ),
        _pin(
            "@formatjs/fast-memoize@3.1.7",
            "sha512-zXfhLpvA6T7+efdt9JLbBwZ00tT7NsBMDVnDu8rpHeNNv8KfRZAMo2gkG0k9lK/Nzc//3kJ9pImsfuJxk3KhUA==",
        ),
        _pin(
            "@formatjs/intl-localematcher@0.9.0",
            "sha512-Z7TD3ssNry1Av1dVDoq/mzpxGyxqWwU0ClWEo+BB3k0JQTeQvUGmeK9WZGYvlqStS0UqkaKXk3dfjsb6NaHAxw==",
        ),
        _pin(
            "@formatjs/intl-supportedvaluesof@2.3.11",
            "sha512-oRzzAbJA08psr6AO0jgXAdx4HZ2vGNeja1fgaio2R2ne8DLtGPV+fa3gxI/t8J2dNPOndrwVAZVVfbH6GDFDwA==",
        ),
    )
}

# the polyfills: kind (the name web/intl.js loads data for) -> package; the module is its
# polyfill-force.js, which installs the class on the Intl it is given
POLYFILLS = {
    "pluralrules": "@formatjs/intl-pluralrules@6.3.16",
    "numberformat": "@formatjs/intl-numberformat@9.4.3",
    "locale": "@formatjs/intl-locale@5.3.12",
    "datetimeformat": "@formatjs/intl-datetimeformat@7.8.1",
    "relativetimeformat": "@formatjs/intl-relativetimeformat@13.0.1",
    "listformat": "@formatjs/intl-listformat@8.3.15",
    "displaynames": "@formatjs/intl-displaynames@7.3.15",
    "segmenter": "@formatjs/intl-segmenter@12.2.15",
}

# the modules compiled to bytecode at build time (type "b"): what a first number format loads,
# and DateTimeFormat (100 KB of source; about 0.08 s of a run's first date format otherwise).
# Each costs the snapshot its bytecode and its compiler's garbage (linear memory every run
# starts with), so the others are compiled when first loaded (type "m").
PRECOMPILED = frozenset(
    {
        "@formatjs/intl-getcanonicallocales@3.2.12",
        "@formatjs/intl-numberformat@9.4.3",
        "@formatjs/intl-pluralrules@6.3.16",
        "@formatjs/intl-localematcher@0.9.0",
        "@formatjs/bigdecimal@0.2.7",
        "@formatjs/fast-memoize@3.1.7",
        "@formatjs/intl-datetimeformat@7.8.1",
    }
)

# Our patches to the pinned formatjs sources, applied at build time (:func:`patch_source`):
# package -> (the (old, new) replacements, each old text found exactly once, and code of ours
# appended to the module, after the package's own lines, so their numbers in a stack stay the
# package's).
#   intl-datetimeformat: a locale's first DateTimeFormat parsed every skeleton of its CLDR data
#     (640 for fr) with the skeleton's range patterns (formatRange's), searching the interval
#     formats for each: 0.4 s per locale in the guest. A skeleton's range patterns are now
#     parsed on their first read (the same parse, deferred), so only formatRange pays for them,
#     and only for the format it picked.
_LAZY_RANGES_OLD = (
    "Object.keys(formats[calendar]).map((skeleton) => parseDateTimeSkeleton(skeleton, "
    "formats[calendar][skeleton], calendarIntervals[skeleton] || findIntervalFormat(skeleton, "
    "calendarIntervals), calendarIntervals.intervalFormatFallback))"
)
_LAZY_RANGES_NEW = (
    "Object.keys(formats[calendar]).map((skeleton) => quickjailParseSkeleton(skeleton, "
    "formats[calendar][skeleton], () => calendarIntervals[skeleton] || findIntervalFormat("
    "skeleton, calendarIntervals), calendarIntervals.intervalFormatFallback))"
)
_LAZY_RANGES_CODE = """
// quickjail (sandbox/_intl_data.py): a skeleton's range patterns are parsed on their first read
function quickjailParseSkeleton(skeleton, rawPattern, intervals, intervalFormatFallback) {
  const result = parseDateTimeSkeleton(skeleton, rawPattern);
  let ranges;
  for (const key of ["rangePatterns", "rangePatterns12"]) {
    Object.defineProperty(result, key, {
      get() {
        // its own keys only: the package walks them with for-in, and by now a program may
        // have added enumerable properties to Object.prototype
        const own = intervals();
        const copy = own && Object.assign(Object.create(null), own);
        ranges ??= parseDateTimeSkeleton(skeleton, rawPattern, copy, intervalFormatFallback);
        return ranges[key];
      },
      set(value) {
        const data = { value, writable: true, enumerable: true, configurable: true };
        Object.defineProperty(result, key, data);
      },
      enumerable: true,
      configurable: true,
    });
  }
  return result;
}
"""
SOURCE_PATCHES: dict[str, tuple[tuple[tuple[str, str], ...], str]] = {
    "@formatjs/intl-datetimeformat@7.8.1": (
        ((_LAZY_RANGES_OLD, _LAZY_RANGES_NEW),),
        _LAZY_RANGES_CODE,
    ),
}


def patch_source(spec: str, text: str) -> str:
    """``spec``'s module source with our patches (:data:`SOURCE_PATCHES`) applied; a patch whose
    text is not found exactly once is refused (the pinned source is not what it was made for)."""
    replacements, appended = SOURCE_PATCHES.get(spec, ((), ""))
    for old, new in replacements:
        if text.count(old) != 1:
            raise IntlDataError(f"{spec}: a patch's text is not found exactly once")
        text = text.replace(old, new)
    return text + appended


# the kinds with locale data (locale-data/<tag>.js in their package)
KINDS = (
    "numberformat",
    "pluralrules",
    "datetimeformat",
    "relativetimeformat",
    "listformat",
    "displaynames",
)
# base locales shipped besides English (README "Web platform" lists them)
LOCALES = (
    "en",
    "de",
    "fr",
    "es",
    "it",
    "pt",
    "nl",
    "ja",
    "zh",
    "ko",
    "ru",
    "ar",
    "hi",
    "tr",
    "pl",
)
# the bases a regional English entry may be a diff against: en and its CLDR descendants that
# are the parents of the others (en-001: "world English", en-AU, en-IN, ...; en-150: Europe's),
# in the order they are stored (a base before what is diffed against it)
EN_PARENTS = ("en", "en-001", "en-150")
_EN_FILE = re.compile(r"locale-data/(en-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)\.js")

# the key of a diff's list of the keys its object no longer has (no CLDR key starts with NUL)
DELETE = "\u0000-"

_IMPORT = re.compile(r'^import (?:(\w[\w$]*)(?:, )?)?(?:\{([^}]*)\})? from "([^"]+)";\n', re.M)
_EXPORT = re.compile(r"^export \{([^}]*)\};\n", re.M)
_NAME = re.compile(r"^[\w$]+$")
_DATA = re.compile(r"^(const|let|var) ([\w$]+) = ([\{\[])\n(.*?)\n([\}\]]);$", re.M | re.S)
DATA_MIN = 1000  # smaller literals cost less to build than a JSON entry's lookup


def registry() -> str:
    """The npm registry's base address (``$QUICKJAIL_NPM_REGISTRY`` overrides it)."""
    return os.environ.get("QUICKJAIL_NPM_REGISTRY", "https://registry.npmjs.org").rstrip("/")


def fetch_npm(build_root: Path, pkg: NpmPackage) -> bytes:
    """The pinned tarball's bytes, from ``build_root/npm`` or the registry, checked against its
    ``dist.integrity``."""
    folder = build_root / "npm"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{pkg.name.replace('/', '+')}-{pkg.version}.tgz"
    algo, _, want = pkg.integrity.partition("-")
    if algo != "sha512":
        raise IntlDataError(f"{pkg.name}: unsupported integrity {pkg.integrity}")

    def ok(data: bytes) -> bool:
        return base64.b64encode(hashlib.sha512(data).digest()).decode() == want

    if path.exists() and ok(data := path.read_bytes()):
        return data
    url = f"{registry()}/{pkg.name}/-/{pkg.tarball}"
    try:
        with urllib.request.urlopen(url, timeout=120) as resp:
            data = bytes(resp.read(64 << 20))
    except OSError as e:
        raise IntlDataError(f"downloading {url} failed: {e}") from e
    if not ok(data):
        raise IntlDataError(f"{url}: sha512 does not match the pinned dist.integrity")
    with tempfile.NamedTemporaryFile(dir=folder, delete=False) as tmp:
        tmp.write(data)
    os.replace(tmp.name, path)
    return data


class Tarball:
    """The files of an npm tarball (``package/...``), read into memory."""

    def __init__(self, data: bytes) -> None:
        self.files: dict[str, bytes] = {}
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for m in tar.getmembers():
                if m.isfile() and m.name.startswith("package/"):
                    f = tar.extractfile(m)
                    assert f is not None
                    self.files[m.name[len("package/") :]] = f.read()

    def text(self, name: str) -> str:
        """A file's text; :class:`IntlDataError` when the package has no such file."""
        try:
            return self.files[name].decode("utf-8")
        except KeyError:
            raise IntlDataError(f"the package has no {name}") from None


def _bindings(names: str, *, exporting: bool) -> list[tuple[str, str]]:
    """``a, b as c`` as (imported or local name, bound or exported name) pairs."""
    out = []
    for part in names.split(","):
        part = part.strip()
        if not part:
            continue
        a, _, b = part.partition(" as ")
        a, b = a.strip(), (b or a).strip()
        if not (_NAME.match(a) and _NAME.match(b)):
            raise IntlDataError(f"an unexpected binding {part!r}")
        out.append((a, b))
    return out


def split_data(text: str, key: str) -> tuple[str, dict[str, str]]:
    """The module with each large top-level ``const NAME = {...};`` (or ``[...]``) that is JSON
    (CLDR tables: likely subtags, aliases, ...) replaced by ``__json("<key>#NAME")``, and those
    JSON texts, compact. QuickJS builds an object literal one property at a time, cloning its
    shape for each, in time quadratic in its size (0.18 s for getcanonicallocales' tables in
    the guest); JSON.parse builds the same object in linear time."""
    data: dict[str, str] = {}

    def swap(m: re.Match[str]) -> str:
        kind, name, open_, body, close = m.groups()
        literal = f"{open_}\n{body}\n{close}"
        if len(literal) < DATA_MIN:
            return m.group(0)
        try:
            value = json.loads(literal)
        except ValueError:
            return m.group(0)
        entry = f"{key}#{name}"
        data[entry] = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        # as many lines as before, so the frames' line numbers stay those of the package
        return f"{kind} {name} = __json({json.dumps(entry)});" + "\n" * literal.count("\n")

    return _DATA.sub(swap, text), data


def module_source(text: str, deps: dict[str, str]) -> str:
    """An ES module (a bundler's output: imports first, one ``export {...}`` last, no other
    module syntax) as the source of ``(function (__import, Intl, globalThis, __json) {...})``.

    ``deps`` maps an imported package name to the key ``__import`` knows it by."""
    lines = []
    for m in _IMPORT.finditer(text):
        default, named, spec = m.groups()
        if spec not in deps:
            raise IntlDataError(f"an import of {spec!r}, which is not a pinned dependency")
        ref = f"__import({json.dumps(deps[spec])})"
        if default:
            lines.append(f"const {default} = {ref}.default;")
        if named is not None:
            pairs = ", ".join(
                a if a == b else f"{a}: {b}" for a, b in _bindings(named, exporting=False)
            )
            lines.append(f"const {{ {pairs} }} = {ref};")
    body = _IMPORT.sub(lambda m: "\n", text)  # keep the line numbers
    exports = list(_EXPORT.finditer(body))
    if len(exports) > 1:
        raise IntlDataError("more than one export statement")
    if exports:
        names = _bindings(exports[0].group(1), exporting=True)
        ret = "return { " + ", ".join(f"{json.dumps(b)}: {a}" for a, b in names) + " };\n"
        body = body[: exports[0].start()] + ret + body[exports[0].end() :]
    if re.search(r"^(import|export)\b", body, re.M) or re.search(r"\bimport\s*\(", body):
        raise IntlDataError("module syntax the rewrite does not handle")
    body = body.replace("//# sourceMappingURL=", "// ")
    head = '(function (__import, Intl, globalThis, __json) {"use strict"; '
    return head + " ".join(lines) + body + "\n})"


def locale_argument(text: str) -> str:
    """The argument of a ``locale-data/*.js`` file's ``X.__addLocaleData(...)`` call (or the
    JSON text of DateTimeFormat's ``(function (data) {...})(JSON.parse("..."))`` form)."""
    wrapped = text.find("})(JSON.parse(")
    if wrapped >= 0:
        value, _ = json.JSONDecoder().raw_decode(text[wrapped + len("})(JSON.parse(") :])
        if not isinstance(value, str):
            raise IntlDataError("not a locale-data file")
        return value
    start = text.find(".__addLocaleData(")
    stop = text.find("\n} else {", start)  # the branch queueing the same data for later
    end = text.rfind(")", start, stop if stop >= 0 else len(text))
    if start < 0 or end < start:
        raise IntlDataError("not a locale-data file")
    return text[start + len(".__addLocaleData(") : end].strip()


def json_diff(base: object, value: object) -> object:
    """What :func:`json_merge` needs with ``base`` to give ``value`` back: the keys that differ
    or are new (recursively), and under :data:`DELETE` the keys ``value`` no longer has."""
    if isinstance(base, dict) and isinstance(value, dict):
        out: dict[str, object] = {
            k: json_diff(base.get(k), v) for k, v in value.items() if k not in base or base[k] != v
        }
        gone = [k for k in base if k not in value]
        if gone:
            out[DELETE] = gone
        return out
    return value


def json_merge(base: object, diff: object) -> object:
    """``base`` with ``diff`` applied (what ``web/intl.js`` does in the guest); for tests."""
    if isinstance(diff, dict):
        out = dict(base) if isinstance(base, dict) else {}
        for k in diff.get(DELETE, []):
            out.pop(k, None)
        for k, v in diff.items():
            if k != DELETE:
                out[k] = json_merge(out.get(k), v)
        return out
    return diff


def default_content(polyfill_source: str) -> dict[str, list[str]]:
    """CLDR's default content table as the polyfills bundle it (``en`` -> ``["en-US"]``)."""
    m = re.search(r"^const defaultContent = (\{.*?\n\});", polyfill_source, re.S | re.M)
    if not m:
        raise IntlDataError("no defaultContent table in the polyfill")
    table = json.loads(m.group(1))
    if not isinstance(table, dict):
        raise IntlDataError("defaultContent is not an object")
    return table


def registered_tags(locale: str, content: dict[str, list[str]]) -> list[str]:
    """The tags formatjs's ``registerLocaleData`` makes available for ``locale``'s data."""
    out = []
    for tag in [locale, *content.get(locale, [])]:
        out.append(tag)
        parts = tag.split("-")
        while len(parts) > 1:
            if len(parts) > 2 and len(parts[1]) == 4:
                out.append("-".join([parts[0], *parts[2:]]))
            parts.pop()
            out.append("-".join(parts))
    return list(dict.fromkeys(out))


def en_regions(tar: Tarball) -> list[str]:
    """Every regional English locale the package has data for (``locale-data/en-*.js``), the
    parents of :data:`EN_PARENTS` first."""
    found = {m.group(1) for name in tar.files if (m := _EN_FILE.fullmatch(name))}
    return [t for t in EN_PARENTS if t in found] + sorted(found - set(EN_PARENTS))


def diff_base(parents: dict[str, object], value: object) -> tuple[str, object]:
    """The parent whose diff to ``value`` is the shortest JSON text, and that diff."""
    best: tuple[int, str, object] | None = None
    for tag, base in parents.items():
        diff = json_diff(base, value)
        size = len(json.dumps(diff, separators=(",", ":"), ensure_ascii=False))
        if best is None or size < best[0]:
            best = (size, tag, diff)
    assert best is not None
    return best[1], best[2]


def _deps(tar: Tarball) -> dict[str, str]:
    declared = json.loads(tar.text("package.json")).get("dependencies", {})
    out = {}
    for name, version in declared.items():
        spec = f"{name}@{version}"
        if spec not in PACKAGES:
            raise IntlDataError(f"a dependency {spec} that is not pinned")
        out[name] = PACKAGES[spec].key
    return out


def intl_entries(build_root: Path) -> dict[str, tuple[str, str]]:
    """Every entry of the guest's table: name -> (type, text); type ``b`` is a module's
    function source compiled at build time, ``m`` one compiled when loaded, ``j`` JSON text,
    ``e`` a JavaScript expression."""
    entries: dict[str, tuple[str, str]] = {}
    tars = {spec: Tarball(fetch_npm(build_root, pkg)) for spec, pkg in PACKAGES.items()}
    polyfill_specs = set(POLYFILLS.values())
    for spec, tar in tars.items():
        pkg = PACKAGES[spec]
        main = "polyfill-force.js" if spec in polyfill_specs else "index.js"
        code, data = split_data(patch_source(spec, tar.text(main)), pkg.key)
        entries[pkg.key] = ("b" if spec in PRECOMPILED else "m", module_source(code, _deps(tar)))
        entries.update((name, ("j", text)) for name, text in data.items())
    content = default_content(tars[POLYFILLS["numberformat"]].text("polyfill-force.js"))
    manifest: dict[str, object] = {
        "modules": {kind: PACKAGES[spec].key for kind, spec in POLYFILLS.items()},
        "getCanonicalLocales": PACKAGES["@formatjs/intl-getcanonicallocales@3.2.12"].key,
        "supportedValuesOf": PACKAGES["@formatjs/intl-supportedvaluesof@2.3.11"].key,
        "kinds": {},
    }
    for kind in KINDS:
        tar = tars[POLYFILLS[kind]]
        tags: dict[str, str] = {}  # tag -> the entry registering it (its own locale first)
        bases: dict[str, str] = {}
        parents: dict[str, object] = {}  # the EN_PARENTS stored so far, as JSON values
        for locale in (*LOCALES, *en_regions(tar)):
            name = f"locale-data/{locale}.js"
            if name not in tar.files:
                continue
            arg = locale_argument(tar.text(name))
            entry = f"{kind}/{locale}"
            try:
                value = json.loads(arg)
            except ValueError:  # functions in it: an expression, in parentheses (not a block)
                entries[entry] = ("e", f"({arg}\n)")
            else:
                full = value
                if locale.startswith("en-") and parents:
                    base, value = diff_base(parents, value)
                    bases[entry] = f"{kind}/{base}"
                if locale in EN_PARENTS:
                    parents[locale] = full
                entries[entry] = ("j", json.dumps(value, separators=(",", ":"), ensure_ascii=False))
            for i, tag in enumerate(registered_tags(locale, content)):
                if i == 0 or tag not in tags:
                    tags[tag] = entry
        kinds = manifest["kinds"]
        assert isinstance(kinds, dict)
        kinds[kind] = {"tags": tags, "bases": bases}
    entries["tz"] = ("j", tz_data(tars[POLYFILLS["datetimeformat"]]))
    entries["manifest"] = ("j", json.dumps(manifest, separators=(",", ":")))
    return dict(sorted(entries.items()))


def tz_data(tar: Tarball) -> str:
    """The IANA time zone data of ``add-all-tz.js`` (every zone's transitions, packed by
    formatjs: ``{abbrvs, offsets, zones: ["Area/City|...", ...]}``) as compact JSON."""
    text = tar.text("add-all-tz.js")
    start = text.find("__addTZData(")
    if start < 0:
        raise IntlDataError("add-all-tz.js has no __addTZData call")
    data, _ = json.JSONDecoder().raw_decode(text[start + len("__addTZData(") :])
    if not (isinstance(data, dict) and {"abbrvs", "offsets", "zones"} <= set(data)):
        raise IntlDataError("add-all-tz.js is not the expected packed data")
    return json.dumps(data, separators=(",", ":"))


def versions() -> dict[str, str]:
    """The pinned packages and their versions, for ``build.json``."""
    return {p.name: p.version for p in PACKAGES.values()}


def pack(data: bytes) -> bytes:
    """``data`` as a raw deflate stream (RFC 1951, no header), what ``web_intl.c`` inflates with
    the guest's zlib (the one CompressionStream uses): CLDR JSON and the polyfills' code shrink
    about 4x, and the packed table is static data in the linear memory every run starts with."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    return packer.compress(data) + packer.flush()


def unpack(packed: bytes, size: int) -> bytes:
    """The inverse of :func:`pack` (what the guest does in C); for tests."""
    out = zlib.decompressobj(-15)
    data = out.decompress(packed, size + 1)
    if len(data) != size or not out.eof:
        raise IntlDataError("a packed entry does not inflate to its size")
    return data
