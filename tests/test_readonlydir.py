"""Tests for bridge._fs.ReadOnlyDir: the read-only, traversal-proof fs capability."""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from quickjail.bridge._fs import FsError, ReadOnlyDir

SECRET = b"TOP-SECRET-OUTSIDE-THE-ROOT"


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the root holding a secret the sandbox must never see."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_bytes(SECRET)
    (out / "f.txt").write_bytes(SECRET)
    return out


@pytest.fixture
def root(tmp_path: Path, outside: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    (r / "hello.txt").write_bytes(b"hello world")
    (r / "uni.txt").write_text("h\u00e9llo \u2603", encoding="utf-8")
    (r / "a" / "b").mkdir(parents=True)
    (r / "a" / "b" / "deep.txt").write_bytes(b"deep")
    (r / "empty.txt").write_bytes(b"")
    return r


@pytest.fixture
def fs(root: Path) -> Iterator[ReadOnlyDir]:
    with ReadOnlyDir(root) as capability:
        yield capability


def refused(call: Callable[[], object], code: str) -> FsError:
    with pytest.raises(FsError) as info:
        call()
    assert info.value.code == code, str(info.value)
    return info.value


# --------------------------------------------------------------------------- happy paths


def test_read_file_returns_bytes_by_default(fs: ReadOnlyDir) -> None:
    assert fs.readFile("hello.txt") == b"hello world"


@pytest.mark.parametrize("encoding", ["utf8", "utf-8", "UTF-8", "Utf8"])
def test_read_file_with_utf8_encoding_returns_str(fs: ReadOnlyDir, encoding: str) -> None:
    assert fs.readFile("uni.txt", encoding) == "h\u00e9llo \u2603"


def test_empty_file_reads_as_empty_bytes(fs: ReadOnlyDir) -> None:
    assert fs.readFile("empty.txt") == b""


@pytest.mark.parametrize(
    "path", ["a/b/deep.txt", "./a/b/deep.txt", "a//b/deep.txt", "a/./b/./deep.txt", "a/b//deep.txt"]
)
def test_nested_paths_normalise_and_resolve(fs: ReadOnlyDir, path: str) -> None:
    assert fs.readFile(path) == b"deep"


def test_readdir_returns_sorted_names_without_dot_entries(fs: ReadOnlyDir, root: Path) -> None:
    (root / "Zed").write_bytes(b"")
    (root / ".hidden").write_bytes(b"")
    expected = sorted(["hello.txt", "uni.txt", "a", "empty.txt", "Zed", ".hidden"])
    assert fs.readdir() == expected
    assert fs.readdir(".") == expected
    assert fs.readdir("./") == expected


@pytest.mark.parametrize("path", ["a", "a/", "./a", "a/."])
def test_readdir_of_subdirectory_accepts_trailing_slash(fs: ReadOnlyDir, path: str) -> None:
    assert fs.readdir(path) == ["b"]


def test_stat_of_file_reports_type_size_and_mtime(fs: ReadOnlyDir, root: Path) -> None:
    info = fs.stat("hello.txt")
    assert info["type"] == "file"
    assert info["size"] == len(b"hello world")
    mtime_ms = info["mtime_ms"]
    assert isinstance(mtime_ms, float)
    assert abs(mtime_ms - (root / "hello.txt").stat().st_mtime * 1000) < 1.0


@pytest.mark.parametrize("path", [".", "a", "a/", "a/b"])
def test_stat_of_directory_reports_directory(fs: ReadOnlyDir, path: str) -> None:
    assert fs.stat(path)["type"] == "directory"


def test_exports_exposes_exactly_the_three_functions(fs: ReadOnlyDir) -> None:
    exported = fs.exports()
    assert sorted(exported) == ["readFile", "readdir", "stat"]
    assert exported["readFile"]("hello.txt") == b"hello world"
    assert exported["readdir"]("a") == ["b"]
    assert exported["stat"]("a") == fs.stat("a")


def test_file_exactly_at_size_cap_is_read(root: Path) -> None:
    (root / "ten.bin").write_bytes(b"0123456789")
    with ReadOnlyDir(root, max_file_bytes=10) as fs:
        assert fs.readFile("ten.bin") == b"0123456789"


def test_concurrent_calls_from_threads_do_not_interfere(fs: ReadOnlyDir, root: Path) -> None:
    for i in range(50):
        (root / "a" / f"n{i:02}").write_bytes(str(i).encode())
    expected = sorted(["b", *(f"n{i:02}" for i in range(50))])
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            for i in range(100):
                assert fs.readdir("a") == expected
                assert fs.readFile(f"a/n{i % 50:02}") == str(i % 50).encode()
        except BaseException as exc:  # reported in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# --------------------------------------------------------------------------- path refusals


@pytest.mark.parametrize(
    "bad", [None, 1, 1.5, b"hello.txt", ["hello.txt"], type("S", (str,), {})("hello.txt")]
)
def test_non_str_path_is_refused_with_einval(fs: ReadOnlyDir, bad: object) -> None:
    calls: list[Callable[[object], object]] = [fs.readFile, fs.readdir, fs.stat]  # type: ignore[list-item]
    for call in calls:
        err = refused(lambda: call(bad), "EINVAL")  # noqa: B023
        assert "must be a string" in str(err)


def test_empty_path_is_refused(fs: ReadOnlyDir) -> None:
    refused(lambda: fs.readFile(""), "EINVAL")
    refused(lambda: fs.stat(""), "EINVAL")
    refused(lambda: fs.readdir(""), "EINVAL")


@pytest.mark.parametrize("path", ["/etc/passwd", "/", "//server/share/x", "/hello.txt"])
def test_absolute_path_is_refused(fs: ReadOnlyDir, path: str) -> None:
    err = refused(lambda: fs.readFile(path), "EINVAL")
    assert "absolute" in str(err)
    refused(lambda: fs.stat(path), "EINVAL")
    refused(lambda: fs.readdir(path), "EINVAL")


@pytest.mark.parametrize(
    "path", ["..", "../x", "a/../../x", "a/..", "a/../hello.txt", "./..", "a/b/../../..", "../"]
)
def test_dotdot_segment_is_refused_in_every_spelling(fs: ReadOnlyDir, path: str) -> None:
    err = refused(lambda: fs.readFile(path), "EINVAL")
    assert "'..'" in str(err)
    refused(lambda: fs.stat(path), "EINVAL")
    refused(lambda: fs.readdir(path), "EINVAL")


def test_dots_inside_a_name_are_not_a_parent_reference(fs: ReadOnlyDir, root: Path) -> None:
    (root / "..hidden").write_bytes(b"x")
    (root / "a..b").write_bytes(b"y")
    assert fs.readFile("..hidden") == b"x"
    assert fs.readFile("a..b") == b"y"


@pytest.mark.parametrize("path", ["hello.txt\x00", "\x00", "a\x00/../../etc/passwd"])
def test_nul_byte_is_refused(fs: ReadOnlyDir, path: str) -> None:
    err = refused(lambda: fs.readFile(path), "EINVAL")
    assert "NUL" in str(err)
    assert "\x00" not in str(err)


@pytest.mark.parametrize("path", ["a\\b", "..\\..\\etc\\passwd", "\\hello.txt"])
def test_backslash_is_refused(fs: ReadOnlyDir, path: str) -> None:
    err = refused(lambda: fs.readFile(path), "EINVAL")
    assert "backslash" in str(err)


def test_path_longer_than_limit_is_refused(root: Path) -> None:
    with ReadOnlyDir(root, max_path_length=20) as fs:
        assert fs.readFile("hello.txt") == b"hello world"
        err = refused(lambda: fs.readFile("a/" * 20 + "x"), "ENAMETOOLONG")
        assert "20" in str(err)


@pytest.mark.parametrize("path", ["C:", "c:/windows/win.ini", "C:hello.txt", "z:\\x"])
def test_windows_drive_form_is_refused(fs: ReadOnlyDir, path: str) -> None:
    refused(lambda: fs.readFile(path), "EINVAL")


@pytest.mark.parametrize("path", ["a\nb", "\x1b[31mred", "tab\there", "del\x7f", "c1\x85"])
def test_control_character_is_refused(fs: ReadOnlyDir, path: str) -> None:
    err = refused(lambda: fs.readFile(path), "EINVAL")
    for ch in ("\n", "\x1b", "\t", "\x7f", "\x85"):
        assert ch not in str(err)


def test_lone_surrogate_is_refused(fs: ReadOnlyDir) -> None:
    refused(lambda: fs.readFile("bad\ud800name"), "EINVAL")
    refused(lambda: fs.readFile("\udcff"), "EINVAL")


def test_percent_encoded_dots_are_literal_names(fs: ReadOnlyDir, root: Path) -> None:
    (root / "%2e%2e").mkdir()
    (root / "%2e%2e" / "inner.txt").write_bytes(b"literal")
    assert fs.readFile("%2e%2e/inner.txt") == b"literal"
    refused(lambda: fs.readFile("%2e%2e/outside/secret.txt"), "ENOENT")
    refused(lambda: fs.readFile("%2E%2E/%2E%2E/outside/secret.txt"), "ENOENT")
    refused(lambda: fs.readFile("..%2fsecret.txt"), "ENOENT")


# --------------------------------------------------------------------------- file-type refusals


def test_missing_file_is_enoent(fs: ReadOnlyDir) -> None:
    refused(lambda: fs.readFile("nope.txt"), "ENOENT")
    refused(lambda: fs.readFile("nope/x.txt"), "ENOENT")
    refused(lambda: fs.stat("nope"), "ENOENT")
    refused(lambda: fs.readdir("nope"), "ENOENT")


def test_file_used_as_directory_is_enotdir(fs: ReadOnlyDir) -> None:
    refused(lambda: fs.readFile("hello.txt/x"), "ENOTDIR")
    refused(lambda: fs.readFile("hello.txt/"), "ENOTDIR")
    refused(lambda: fs.stat("hello.txt/"), "ENOTDIR")
    refused(lambda: fs.readdir("hello.txt"), "ENOTDIR")


@pytest.mark.parametrize("path", ["a", "a/", "a/b", ".", "./"])
def test_directory_passed_to_readfile_is_eisdir(fs: ReadOnlyDir, path: str) -> None:
    refused(lambda: fs.readFile(path), "EISDIR")


def test_symlink_to_outside_is_refused(fs: ReadOnlyDir, root: Path, outside: Path) -> None:
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "leakdir").symlink_to(outside)
    refused(lambda: fs.readFile("leak.txt"), "ELOOP")
    refused(lambda: fs.readFile("leakdir/secret.txt"), "ELOOP")
    refused(lambda: fs.stat("leak.txt"), "ELOOP")
    refused(lambda: fs.stat("leakdir"), "ELOOP")
    refused(lambda: fs.stat("leakdir/secret.txt"), "ELOOP")
    refused(lambda: fs.readdir("leakdir"), "ELOOP")


def test_symlink_inside_root_is_refused_by_rule(fs: ReadOnlyDir, root: Path) -> None:
    (root / "alias.txt").symlink_to("hello.txt")
    (root / "alias_dir").symlink_to("a")
    (root / "a" / "up").symlink_to("..")
    refused(lambda: fs.readFile("alias.txt"), "ELOOP")
    refused(lambda: fs.readFile("alias_dir/b/deep.txt"), "ELOOP")
    refused(lambda: fs.readFile("a/up/hello.txt"), "ELOOP")
    refused(lambda: fs.stat("alias.txt"), "ELOOP")
    refused(lambda: fs.readdir("alias_dir"), "ELOOP")


def test_readdir_lists_symlink_names_without_following_them(
    fs: ReadOnlyDir, root: Path, outside: Path
) -> None:
    (root / "leakdir").symlink_to(outside)
    (root / "dangling").symlink_to(root / "does-not-exist")
    names = fs.readdir()
    assert "leakdir" in names
    assert "dangling" in names
    assert "secret.txt" not in names


@pytest.mark.timeout(5)
def test_fifo_is_refused_promptly_without_blocking(fs: ReadOnlyDir, root: Path) -> None:
    os.mkfifo(root / "pipe")
    err = refused(lambda: fs.readFile("pipe"), "EACCES")
    assert "FIFO" in str(err)
    assert fs.stat("pipe")["type"] == "other"
    assert "pipe" in fs.readdir()


@pytest.mark.timeout(5)
@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_special_file_swapped_in_after_precheck_is_refused_by_fstat_or_nofollow(
    fs: ReadOnlyDir, root: Path, outside: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    if kind == "fifo":
        os.mkfifo(root / "swapped")
    else:
        (root / "swapped").symlink_to(outside / "secret.txt")
    real_stat = os.stat
    regular = real_stat(root / "hello.txt")

    def precheck_sees_regular_file(path: object, *args: object, **kwargs: object) -> object:
        if path == "swapped":  # simulate the swap landing between pre-check and open
            return regular
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", precheck_sees_regular_file)
    err = refused(lambda: fs.readFile("swapped"), "EACCES" if kind == "fifo" else "ELOOP")
    assert SECRET.decode() not in str(err)


def test_unix_socket_is_refused(fs: ReadOnlyDir, root: Path) -> None:
    sock_path = root / "sock"
    if len(os.fsencode(sock_path)) >= 100:
        pytest.skip("tmp path too long for an AF_UNIX socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(sock_path))
        err = refused(lambda: fs.readFile("sock"), "EACCES")
        assert "socket" in str(err)
        assert fs.stat("sock")["type"] == "other"


def test_device_node_is_refused(fs: ReadOnlyDir, root: Path) -> None:
    try:
        os.mknod(root / "null", 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot create a device node here: {exc.strerror}")
    err = refused(lambda: fs.readFile("null"), "EACCES")
    assert "device" in str(err)
    assert fs.stat("null")["type"] == "other"


def test_oversized_file_is_refused_before_reading(root: Path) -> None:
    (root / "big.bin").write_bytes(b"x" * 11)
    with ReadOnlyDir(root, max_file_bytes=10) as fs:
        err = refused(lambda: fs.readFile("big.bin"), "EFBIG")
        assert "10 bytes" in str(err)
        assert fs.stat("big.bin")["size"] == 11


def test_file_growing_after_size_check_cannot_exceed_cap(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = root / "grows.bin"
    target.write_bytes(b"x" * 8)
    real_fstat = os.fstat

    def fstat_then_grow(fd: int) -> os.stat_result:
        result = real_fstat(fd)
        if stat.S_ISREG(result.st_mode):
            with open(target, "ab") as fh:
                fh.write(b"y" * 100)
        return result

    with ReadOnlyDir(root, max_file_bytes=10) as fs:
        monkeypatch.setattr(os, "fstat", fstat_then_grow)
        refused(lambda: fs.readFile("grows.bin"), "EFBIG")


def test_bad_encoding_is_refused_naming_accepted_encodings(fs: ReadOnlyDir) -> None:
    for bad in ("latin1", "utf16", "base64", "", "x" * 1000, 8.5, True, b"utf8", ["utf8"]):
        err = refused(lambda: fs.readFile("hello.txt", bad), "EINVAL")  # type: ignore[arg-type]  # noqa: B023
        assert "'utf8'" in str(err) and "'utf-8'" in str(err)
        assert len(str(err)) < 400


def test_an_int_encoding_is_the_index_map_passes_and_reads_bytes(fs: ReadOnlyDir) -> None:
    # paths.map(fs.readFile) calls readFile(path, index, array)
    assert fs.readFile("hello.txt", 1) == b"hello world"


def test_invalid_utf8_content_is_einval_when_decoding(fs: ReadOnlyDir, root: Path) -> None:
    (root / "bin.dat").write_bytes(b"\xff\xfe\x00bad")
    assert fs.readFile("bin.dat") == b"\xff\xfe\x00bad"
    err = refused(lambda: fs.readFile("bin.dat", "utf8"), "EINVAL")
    assert "UTF-8" in str(err)


def test_readdir_with_more_entries_than_limit_is_refused(root: Path) -> None:
    (root / "many").mkdir()
    for i in range(6):
        (root / "many" / str(i)).write_bytes(b"")
    with ReadOnlyDir(root, max_entries=5) as fs:
        refused(lambda: fs.readdir("many"), "E2BIG")
    with ReadOnlyDir(root, max_entries=6) as fs:
        assert fs.readdir("many") == [str(i) for i in range(6)]


def test_readdir_omits_names_that_are_not_valid_unicode(fs: ReadOnlyDir, root: Path) -> None:
    (root / "odd").mkdir()
    fd = os.open(os.fsencode(root / "odd") + b"/bad\xffname", os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    (root / "odd" / "good").write_bytes(b"")
    assert fs.readdir("odd") == ["good"]


# --------------------------------------------------------------------------- swaps and races


def test_symlink_swapped_in_after_resolution_is_refused(
    fs: ReadOnlyDir, root: Path, outside: Path
) -> None:
    (root / "d").mkdir()
    (root / "d" / "f.txt").write_bytes(b"inside")
    assert fs.readFile("d/f.txt") == b"inside"
    assert fs.readdir("d") == ["f.txt"]

    (root / "d" / "f.txt").unlink()
    (root / "d").rmdir()
    (root / "d").symlink_to(outside)

    refused(lambda: fs.readFile("d/f.txt"), "ELOOP")
    refused(lambda: fs.readdir("d"), "ELOOP")
    refused(lambda: fs.stat("d"), "ELOOP")


def test_file_swapped_for_symlink_after_read_is_refused(
    fs: ReadOnlyDir, root: Path, outside: Path
) -> None:
    assert fs.readFile("hello.txt") == b"hello world"
    tmp_link = root / "tmp-link"
    tmp_link.symlink_to(outside / "secret.txt")
    os.replace(tmp_link, root / "hello.txt")
    refused(lambda: fs.readFile("hello.txt"), "ELOOP")


def _swap_directory(root: Path, outside: Path, stop: threading.Event) -> None:
    """Keep alternating root/d between a real directory and a symlink to outside."""
    real, parked = root / "d", root / "d-parked"
    while not stop.is_set():
        os.rename(real, parked)
        os.symlink(outside, real)
        time.sleep(0)  # let the reader run while d is a symlink ...
        os.unlink(real)
        os.rename(parked, real)
        for _ in range(5):  # ... and (longer) while it is the real directory again
            time.sleep(0)


def _swap_final_file(root: Path, outside: Path, stop: threading.Event) -> None:
    """Keep atomically replacing root/d/f.txt with a symlink to a secret and back."""
    target = root / "d" / "f.txt"
    while not stop.is_set():
        link = root / "d" / "link.tmp"
        os.symlink(outside / "f.txt", link)
        os.replace(link, target)
        time.sleep(0)
        copy = root / "d" / "copy.tmp"
        copy.write_bytes(b"inside")
        os.replace(copy, target)
        time.sleep(0)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("swapper", [_swap_directory, _swap_final_file], ids=["dir", "file"])
def test_racing_symlink_swaps_never_expose_outside_content(
    fs: ReadOnlyDir,
    root: Path,
    outside: Path,
    swapper: Callable[[Path, Path, threading.Event], None],
) -> None:
    (root / "d").mkdir()
    (root / "d" / "f.txt").write_bytes(b"inside")
    stop = threading.Event()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            swapper(root, outside, stop)
        except BaseException as exc:  # reported in the main thread
            failures.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    successes = 0
    codes: set[str] = set()
    try:
        for i in range(2000):
            try:
                data = fs.readFile("d/f.txt")
            except FsError as err:
                codes.add(err.code)
                assert SECRET.decode() not in str(err)
            else:
                assert data == b"inside"
                successes += 1
            if i % 10 == 0:
                try:
                    assert "secret.txt" not in fs.readdir("d")
                except FsError as err:
                    codes.add(err.code)
    finally:
        stop.set()
        thread.join()
    assert failures == []
    assert successes > 0  # the real directory was seen ...
    assert "ELOOP" in codes  # ... and so was the swapped-in symlink, which was refused
    assert codes <= {"ENOENT", "ELOOP", "ENOTDIR"}, codes


# --------------------------------------------------------------------------- messages


def test_error_messages_never_contain_the_host_root(
    fs: ReadOnlyDir, root: Path, tmp_path: Path, outside: Path
) -> None:
    (root / "leak").symlink_to(outside)
    os.mkfifo(root / "pipe")
    calls: list[Callable[[], object]] = [
        lambda: fs.readFile("nope.txt"),
        lambda: fs.readFile("a/nope/x"),
        lambda: fs.readFile("leak/secret.txt"),
        lambda: fs.readFile("leak"),
        lambda: fs.readFile("pipe"),
        lambda: fs.readFile("a"),
        lambda: fs.readFile("hello.txt/x"),
        lambda: fs.readFile("../outside/secret.txt"),
        lambda: fs.readFile("/etc/passwd"),
        lambda: fs.readFile("hello.txt", "latin1"),
        lambda: fs.readFile(42),  # type: ignore[arg-type]
        lambda: fs.readdir("nope"),
        lambda: fs.readdir("hello.txt"),
        lambda: fs.stat("leak"),
        lambda: fs.stat("x" * 300),
    ]
    for call in calls:
        with pytest.raises(FsError) as info:
            call()
        message = str(info.value)
        assert str(tmp_path) not in message
        assert str(root) not in message
        assert message.startswith(info.value.code + ":")


def test_error_message_shows_virtual_path_escaped_and_truncated(fs: ReadOnlyDir) -> None:
    err = refused(lambda: fs.readFile("missing.txt"), "ENOENT")
    assert "'missing.txt'" in str(err)
    long_name = "q" * 900
    err = refused(lambda: fs.readFile(long_name), "ENAMETOOLONG")
    assert len(str(err)) < 300
    assert "900 chars" in str(err)
    err = refused(lambda: fs.readFile("\x1b[2J\u202eevil"), "EINVAL")
    assert "\x1b" not in str(err) and "\u202e" not in str(err)


# --------------------------------------------------------------------------- lifecycle


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        ReadOnlyDir(tmp_path / "missing")
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(ValueError):
        ReadOnlyDir(tmp_path / "file")


@pytest.mark.parametrize(
    "limits",
    [{"max_file_bytes": -1}, {"max_path_length": 0}, {"max_entries": -1}, {"max_entries": 1.5}],
)
def test_invalid_limits_are_rejected_at_construction(root: Path, limits: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ReadOnlyDir(root, **limits)  # type: ignore[arg-type]


def test_use_after_close_is_ebadf_and_close_is_idempotent(root: Path) -> None:
    before = fd_count()
    fs = ReadOnlyDir(root)
    assert fd_count() == before + 1
    fs.close()
    fs.close()
    assert fd_count() == before
    refused(lambda: fs.readFile("hello.txt"), "EBADF")
    refused(lambda: fs.readdir(), "EBADF")
    refused(lambda: fs.stat("."), "EBADF")


def test_context_manager_closes_root_fd(root: Path) -> None:
    before = fd_count()
    with ReadOnlyDir(root) as fs:
        assert fs.readFile("hello.txt") == b"hello world"
    assert fd_count() == before
    refused(lambda: fs.readFile("hello.txt"), "EBADF")


@pytest.mark.timeout(10)
def test_close_during_a_call_defers_closing_root_until_the_call_ends(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = fd_count()
    fs = ReadOnlyDir(root)
    entered, proceed = threading.Event(), threading.Event()
    real_read = os.read
    result: list[object] = []

    def slow_read(fd: int, n: int) -> bytes:
        entered.set()
        proceed.wait(5)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", slow_read)

    def reader() -> None:
        try:
            result.append(fs.readFile("a/b/deep.txt"))
        except BaseException as exc:  # reported in the main thread
            result.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    assert entered.wait(5)
    fs.close()
    refused(lambda: fs.stat("."), "EBADF")  # new calls are refused at once ...
    proceed.set()
    thread.join()
    assert result == [b"deep"]  # ... while the call in flight completes normally
    assert fd_count() == before  # and the root fd is closed once it has


def test_repr_does_not_reveal_host_path(fs: ReadOnlyDir, root: Path) -> None:
    assert str(root) not in repr(fs)
    assert str(root) not in repr(fs.exports()["readFile"])


@pytest.mark.timeout(30)
def test_no_fd_leaks_across_many_successful_and_failing_calls(
    fs: ReadOnlyDir, root: Path, outside: Path
) -> None:
    (root / "leak").symlink_to(outside)
    (root / "a" / "up").symlink_to("..")
    os.mkfifo(root / "pipe")
    (root / "big.bin").write_bytes(b"x" * (16 * 2**20 + 1))
    (root / "bin.dat").write_bytes(b"\xff")
    calls: list[Callable[[], object]] = [
        lambda: fs.readFile("hello.txt"),
        lambda: fs.readFile("a/b/deep.txt", "utf8"),
        lambda: fs.readdir("a/b"),
        lambda: fs.readdir(),
        lambda: fs.stat("a/b/deep.txt"),
        lambda: fs.stat("."),
        lambda: fs.readFile("nope"),
        lambda: fs.readFile("a/b/nope"),
        lambda: fs.readFile("leak/secret.txt"),
        lambda: fs.readFile("a/up/hello.txt"),
        lambda: fs.readFile("pipe"),
        lambda: fs.readFile("big.bin"),
        lambda: fs.readFile("bin.dat", "utf8"),
        lambda: fs.readFile("a/b"),
        lambda: fs.readFile("hello.txt/"),
        lambda: fs.readFile("hello.txt/x"),
        lambda: fs.readdir("leak"),
        lambda: fs.readdir("hello.txt"),
        lambda: fs.stat("leak"),
        lambda: fs.readFile("../x"),
    ]
    before = fd_count()
    failures = 0
    for i in range(500):
        try:
            calls[i % len(calls)]()
        except FsError:
            failures += 1
    assert fd_count() == before
    assert 0 < failures < 500
