"""fetch_release: a transformers sdist laid out as a pristine one-commit git checkout, cached.

Everything except the ``network`` tests replaces the download with a tiny fake sdist.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tarfile
import threading
import time
import urllib.error
from collections.abc import Callable
from pathlib import Path

import pytest

from codemod import cache, fetch
from codemod.fetch import FetchError, fetch_release, release_checkout

VERSION = "9.9.9"
TOP = f"transformers-{VERSION}"

FILES = {
    "PKG-INFO": "Metadata-Version: 2.1\nName: transformers\nVersion: 9.9.9\n",
    "setup.py": "from setuptools import setup\nsetup()\n",
    ".gitignore": "*.log\n",  # the checkout must still hold every file of the sdist
    "notes.log": "shipped in the sdist although .gitignore matches it\n",
    "src/transformers/__init__.py": f'__version__ = "{VERSION}"\n',
    "src/transformers/models/__init__.py": "",
    "src/transformers/models/llama/__init__.py": "",
    "src/transformers/models/llama/modeling_llama.py": "class LlamaForCausalLM:\n    pass\n",
    "src/transformers/generation/__init__.py": "",
    "src/transformers/generation/utils.py": "class GenerationMixin:\n    pass\n",
}


def _add(
    archive: tarfile.TarFile, name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, link: str = ""
) -> None:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    info.mtime = 1_700_000_000
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    archive.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def make_sdist(path: Path, files: dict[str, str] = FILES, top: str = TOP,
               extra: Callable[[tarfile.TarFile], None] | None = None) -> Path:  # fmt: skip
    """A fake transformers sdist: the layout of a real one, a few bytes in size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        dirs = sorted({str(Path(top, name).parent) for name in files} | {top})
        for directory in dirs:
            _add(archive, directory, kind=tarfile.DIRTYPE)
        for name, text in files.items():
            _add(archive, f"{top}/{name}", text.encode())
        if extra is not None:
            extra(archive)
    return path


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(root))
    return root


class FakeDownload:
    """Stands in for ``_download_sdist``: copies a prepared archive, counts calls, can fail."""

    def __init__(self, sdist: Path) -> None:
        self.sdist = sdist
        self.calls: list[str] = []
        self.error: BaseException | None = None
        self.delay_s = 0.0

    def __call__(self, version: str, into: Path) -> Path:
        self.calls.append(version)
        time.sleep(self.delay_s)
        if self.error is not None:
            raise self.error
        target = into / self.sdist.name
        target.write_bytes(self.sdist.read_bytes())
        return target


@pytest.fixture
def download(tmp_path: Path, cache_root: Path, monkeypatch: pytest.MonkeyPatch) -> FakeDownload:
    fake = FakeDownload(make_sdist(tmp_path / "sdists" / f"{TOP}.tar.gz"))
    monkeypatch.setattr(fetch, "_download_sdist", fake)
    return fake


def releases(cache_root: Path) -> list[str]:
    return sorted(p.name for p in (cache_root / "releases").iterdir())


# --- cache_dir --------------------------------------------------------------------------------


def test_cache_dir_honours_env_and_creates_it(cache_root: Path) -> None:
    path = cache.cache_dir("releases", "x")
    assert path == cache_root.resolve() / "releases" / "x"
    assert path.is_dir()


def test_cache_dir_defaults_to_platform_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEMOD_CACHE_DIR", raising=False)
    asked: list[str] = []

    def user_cache_dir(app: str) -> str:
        asked.append(app)
        return str(tmp_path / "platform")

    monkeypatch.setattr(cache.platformdirs, "user_cache_dir", user_cache_dir)
    assert cache.cache_dir("releases") == (tmp_path / "platform" / "releases").resolve()
    assert asked == ["transformers-codemod"]


@pytest.mark.parametrize("part", ["..", "/abs", "a/../../b", ""])
def test_cache_dir_refuses_to_escape(cache_root: Path, part: str) -> None:
    with pytest.raises(ValueError):
        cache.cache_dir(part)


# --- layout -----------------------------------------------------------------------------------


def test_fetch_lays_out_one_commit_on_main(download: FakeDownload, cache_root: Path) -> None:
    root = fetch_release(VERSION)

    assert root == cache_root.resolve() / "releases" / TOP
    assert (root / "src/transformers/__init__.py").read_text() == f'__version__ = "{VERSION}"\n'
    assert (root / "src/transformers/generation/utils.py").is_file()
    assert not (root / TOP).exists()  # top folder stripped
    assert git(root, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert git(root, "rev-list", "--count", "main") == "1"
    assert git(root, "status", "--porcelain", "--untracked-files=all", "--ignored") == ""
    assert "notes.log" in git(root, "ls-files").splitlines()  # ignored by the sdist's .gitignore, still committed
    log = git(root, "log", "--format=%an <%ae>|%cn <%ce>|%aI|%cI|%s")
    assert log == (
        "transformers-codemod <codemod@localhost>|transformers-codemod <codemod@localhost>|"
        f"2000-01-01T00:00:00+00:00|2000-01-01T00:00:00+00:00|transformers {VERSION} (sdist from PyPI)"
    )
    assert fetch.checkout_problem(root) is None
    assert download.calls == [VERSION]
    assert releases(cache_root) == [f"{TOP}", f"{TOP}.lock"]


def test_commit_id_depends_only_on_contents(download: FakeDownload, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    first = git(fetch_release(VERSION), "rev-parse", "HEAD")
    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "other-cache"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "someone else")  # the caller's git env must not leak in
    assert git(fetch_release(VERSION), "rev-parse", "HEAD") == first


def test_second_call_returns_cache_without_download(download: FakeDownload) -> None:
    first = fetch_release(VERSION)
    download.error = AssertionError("downloaded twice")
    assert fetch_release(VERSION) == first
    assert release_checkout(VERSION) == first
    assert download.calls == [VERSION]


def test_progress_reports_steps(download: FakeDownload) -> None:
    messages: list[str] = []
    fetch_release(VERSION, progress=messages.append)
    assert messages == [f"downloading transformers {VERSION} sdist", "extracting", "committing"]
    messages.clear()
    fetch_release(VERSION, progress=messages.append)
    assert messages == [f"using cached transformers {VERSION}"]


def test_default_is_silent(download: FakeDownload, capsys: pytest.CaptureFixture[str]) -> None:
    fetch_release(VERSION)
    assert capsys.readouterr() == ("", "")


# --- dest -------------------------------------------------------------------------------------


def test_dest_copies_the_cached_checkout(download: FakeDownload, tmp_path: Path) -> None:
    cached = fetch_release(VERSION)
    dest = fetch_release(VERSION, tmp_path / "work" / "tf")

    assert dest == tmp_path / "work" / "tf"
    assert download.calls == [VERSION]
    assert git(dest, "rev-parse", "HEAD") == git(cached, "rev-parse", "HEAD")
    assert fetch.checkout_problem(dest) is None
    (dest / "src/transformers/__init__.py").write_text("changed\n")
    assert fetch.checkout_problem(cached) is None  # a real copy, not a link to the cache
    assert sorted(p.name for p in dest.parent.iterdir()) == ["tf"]  # no scratch left


def test_dest_fills_the_cache_first(download: FakeDownload, tmp_path: Path, cache_root: Path) -> None:
    fetch_release(VERSION, tmp_path / "a")
    fetch_release(VERSION, tmp_path / "b")
    assert download.calls == [VERSION]
    assert fetch.checkout_problem(cache_root / "releases" / TOP) is None


def test_dest_may_be_an_empty_directory(download: FakeDownload, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert fetch.checkout_problem(fetch_release(VERSION, tmp_path / "empty")) is None


@pytest.mark.parametrize("occupant", ["file-inside", "is-a-file"])
def test_non_empty_dest_is_refused(download: FakeDownload, tmp_path: Path, occupant: str) -> None:
    dest = tmp_path / "dest"
    if occupant == "file-inside":
        dest.mkdir()
        (dest / "keep.txt").write_text("mine")
    else:
        dest.write_text("mine")
    with pytest.raises(FetchError, match="not empty"):
        fetch_release(VERSION, dest)
    assert download.calls == []  # refused before any download
    assert (dest / "keep.txt" if occupant == "file-inside" else dest).read_text() == "mine"


# --- safety -----------------------------------------------------------------------------------


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> Callable[[tarfile.TarFile], None]:
    return lambda archive: _add(archive, name, b"evil", kind=kind, link=link)


@pytest.mark.parametrize(
    "extra",
    [
        _member("../evil"),
        _member(f"{TOP}/../../evil"),
        _member("/tmp/codemod-test-evil-absolute"),
        _member(f"{TOP}/evil-link", kind=tarfile.SYMTYPE, link="../../evil"),
        _member(f"{TOP}/evil-hardlink", kind=tarfile.LNKTYPE, link="/etc/passwd"),
        _member(f"{TOP}/.git/config"),
        _member("stray-top-level-file"),
    ],
    ids=["dotdot", "nested-dotdot", "absolute", "symlink", "hardlink", "dot-git", "stray"],
)
def test_malicious_members_are_rejected(download: FakeDownload, tmp_path: Path, cache_root: Path,
                                        extra: Callable[[tarfile.TarFile], None]) -> None:  # fmt: skip
    download.sdist = make_sdist(tmp_path / "bad" / f"{TOP}.tar.gz", extra=extra)
    with pytest.raises(FetchError, match="refusing|stray"):
        fetch_release(VERSION)
    assert not (tmp_path / "evil").exists()
    assert not (cache_root / "evil").exists()
    assert not Path("/tmp/codemod-test-evil-absolute").exists()
    assert releases(cache_root) == [f"{TOP}.lock"]


@pytest.mark.parametrize("error", [FetchError("network failure"), KeyboardInterrupt()], ids=["error", "interrupt"])
def test_interrupted_fetch_leaves_nothing_behind(
    download: FakeDownload, cache_root: Path, error: BaseException
) -> None:
    download.error = error
    with pytest.raises(type(error)):
        fetch_release(VERSION)
    assert releases(cache_root) == [f"{TOP}.lock"]
    download.error = None
    assert fetch.checkout_problem(fetch_release(VERSION)) is None


def test_failed_commit_leaves_nothing_behind(download: FakeDownload, cache_root: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    def broken_commit(tree: Path, version: str) -> None:
        raise FetchError("git commit failed")

    monkeypatch.setattr(fetch, "_commit", broken_commit)
    with pytest.raises(FetchError):
        fetch_release(VERSION)
    assert releases(cache_root) == [f"{TOP}.lock"]


def test_stale_scratch_of_a_killed_fetch_is_cleaned(download: FakeDownload, cache_root: Path) -> None:
    stale = cache.cache_dir("releases") / f".{TOP}.tmp-killed"
    (stale / "extract").mkdir(parents=True)
    fetch_release(VERSION)
    assert releases(cache_root) == [f"{TOP}", f"{TOP}.lock"]


def test_modified_cache_is_refused_not_rebuilt(download: FakeDownload) -> None:
    root = fetch_release(VERSION)
    (root / "src/transformers/generation/utils.py").write_text("rewritten in place\n")
    with pytest.raises(FetchError, match="uncommitted changes.*delete"):
        fetch_release(VERSION)
    assert (root / "src/transformers/generation/utils.py").read_text() == "rewritten in place\n"
    assert download.calls == [VERSION]


@pytest.mark.parametrize("version", ["../4.45.2", "4.45.2/x", "", "latest", "4.45.2 --index-url=x"])
def test_bad_version_is_refused(download: FakeDownload, version: str) -> None:
    with pytest.raises(FetchError, match="not a transformers version"):
        fetch_release(version)
    assert download.calls == []


def test_missing_git_is_reported_before_downloading(download: FakeDownload, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(FetchError, match="git was not found"):
        fetch_release(VERSION)
    assert download.calls == []


def test_non_tar_gz_download_is_refused(download: FakeDownload, tmp_path: Path, cache_root: Path) -> None:
    download.sdist = tmp_path / f"{TOP}.zip"
    download.sdist.write_bytes(b"PK\x03\x04")
    with pytest.raises(FetchError, match="not a .tar.gz"):
        fetch_release(VERSION)
    assert releases(cache_root) == [f"{TOP}.lock"]


def test_corrupt_archive_is_refused(download: FakeDownload, tmp_path: Path) -> None:
    download.sdist = tmp_path / f"{TOP}.tar.gz"
    download.sdist.write_bytes(b"not gzip at all")
    with pytest.raises(FetchError, match="not a readable"):
        fetch_release(VERSION)


def test_archive_without_the_package_is_refused(download: FakeDownload, tmp_path: Path) -> None:
    download.sdist = make_sdist(tmp_path / "other" / f"{TOP}.tar.gz", files={"setup.py": ""})
    with pytest.raises(FetchError, match="not a transformers sdist"):
        fetch_release(VERSION)


def test_concurrent_fetches_download_once(download: FakeDownload) -> None:
    download.delay_s = 0.3
    results: list[Path] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def worker() -> None:
        start.wait()
        try:
            results.append(fetch_release(VERSION))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert download.calls == [VERSION]
    assert len(set(results)) == 1 and fetch.checkout_problem(results[0]) is None


# --- the download step ------------------------------------------------------------------------


def test_pip_download_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        seen.append(command)
        Path(command[command.index("-d") + 1], f"{TOP}.tar.gz").write_bytes(b"")
        return subprocess.CompletedProcess(command, 0, "Saved\n", "")

    monkeypatch.setattr(fetch.subprocess, "run", run)
    assert fetch._download_with_pip(VERSION, tmp_path) == tmp_path / f"{TOP}.tar.gz"
    command = seen[0]
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert {"--no-deps", "--no-binary", ":all:", f"transformers=={VERSION}"} <= set(command)


@pytest.mark.parametrize(
    ("output", "released", "expected"),
    [
        ("ERROR: No matching distribution found for transformers==0.0.1", set(), "was not found on PyPI"),
        ("ERROR: No matching distribution found for transformers==9.9.9", {"9.9.9"}, "no source distribution"),
        (
            "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError(...)'\n"
            "ERROR: No matching distribution found for transformers==9.9.9",
            {"9.9.9"},
            "network failure",
        ),
        ("ERROR: something odd via https://user:hunter2@index.example/simple", None, "could not download"),
    ],
    ids=["not-found", "wheels-only", "network", "other"],
)
def test_pip_failures_are_classified(monkeypatch: pytest.MonkeyPatch, output: str,
                                     released: set[str] | None, expected: str) -> None:  # fmt: skip
    monkeypatch.setattr(fetch, "_released_versions", lambda: released)
    error = fetch._pip_failure(VERSION, output)
    assert expected in str(error)
    assert "hunter2" not in str(error)


def test_pip_error_detail_is_short() -> None:
    versions = ", ".join(f"4.{i}.0" for i in range(500))
    output = (
        "ERROR: Ignored the following yanked versions: 4.14.0\n"
        f"ERROR: Could not find a version that satisfies the requirement transformers==0.0.1 (from versions: {versions})\n"
        "ERROR: No matching distribution found for transformers==0.0.1\n"
    )
    detail = fetch._pip_error_lines(output)
    assert "4.499.0" not in detail and "yanked" not in detail
    assert detail.endswith("No matching distribution found for transformers==0.0.1")


class FakeResponse(io.BytesIO):
    def __enter__(self) -> FakeResponse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fake_pypi(monkeypatch: pytest.MonkeyPatch, metadata: dict | Exception, payload: bytes = b"") -> None:
    def urlopen(url: str, timeout: float) -> FakeResponse:
        if url.endswith("/json"):
            if isinstance(metadata, Exception):
                raise metadata
            return FakeResponse(json.dumps(metadata).encode())
        return FakeResponse(payload)

    monkeypatch.setattr(fetch.urllib.request, "urlopen", urlopen)


def _release_json(payload: bytes, digest: str | None = None, packagetype: str = "sdist") -> dict:
    return {"urls": [{
        "packagetype": packagetype, "filename": f"{TOP}.tar.gz",
        "url": f"https://files.example/{TOP}.tar.gz",
        "digests": {"sha256": digest or hashlib.sha256(payload).hexdigest()},
    }]}  # fmt: skip


def test_json_fallback_downloads_and_verifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_pypi(monkeypatch, _release_json(b"sdist bytes"), b"sdist bytes")
    path = fetch._download_from_pypi_json(VERSION, tmp_path)
    assert path.read_bytes() == b"sdist bytes"


def test_json_fallback_is_used_without_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_pypi(monkeypatch, _release_json(b"sdist bytes"), b"sdist bytes")
    monkeypatch.setattr(fetch.importlib.util, "find_spec", lambda name: None)
    assert fetch._download_sdist(VERSION, tmp_path).name == f"{TOP}.tar.gz"


@pytest.mark.parametrize(
    ("metadata", "payload", "expected"),
    [
        (_release_json(b"published", digest="0" * 64), b"tampered", "does not match"),
        (_release_json(b"x", packagetype="bdist_wheel"), b"", "no source distribution"),
        (urllib.error.HTTPError("u", 404, "Not Found", None, None), b"", "was not found on PyPI"),  # type: ignore[arg-type]
        (urllib.error.URLError("Name or service not known"), b"", "network failure"),
    ],
    ids=["bad-digest", "wheels-only", "404", "offline"],
)
def test_json_fallback_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, metadata: dict | Exception,
                              payload: bytes, expected: str) -> None:  # fmt: skip
    _fake_pypi(monkeypatch, metadata, payload)
    with pytest.raises(FetchError, match=expected):
        fetch._download_from_pypi_json(VERSION, tmp_path)
    assert list(tmp_path.iterdir()) == []


# --- the real thing ---------------------------------------------------------------------------


@pytest.mark.network
def test_real_release_from_pypi() -> None:
    """Uses the machine's shared cache on purpose: the ~8 MB sdist is downloaded once per machine."""
    root = release_checkout("4.45.2")
    assert (root / "src/transformers/models/llama/modeling_llama.py").is_file()
    assert git(root, "rev-list", "--count", "HEAD") == "1"
    assert len(git(root, "log", "--format=%H").splitlines()) == 1
    assert fetch.checkout_problem(root) is None


@pytest.mark.network
def test_unknown_release_is_reported(cache_root: Path) -> None:
    with pytest.raises(FetchError, match="not found on PyPI"):
        fetch_release("0.0.0.post999")
