"""Fetch a transformers release as a pristine, one-commit git checkout.

The codemod is tested and benchmarked against real releases, and its rewrites are reviewed as a
``git diff``. So a release is laid out as a git repository whose single commit on ``main`` is the
release's source distribution from PyPI, byte for byte: anything the codemod changes then shows
up as an uncommitted change, and the commit id is the same on every machine (fixed identity and
date).

Releases are cached in ``cache_dir("releases")`` and fetched at most once per machine, even by
concurrent test workers. A build happens in a temporary sibling directory that is renamed into
place only when complete, so an interrupted fetch never leaves a half-built checkout behind.

The download goes through ``pip download`` (which honours the machine's index configuration,
proxies and certificates); PyPI's JSON API is the fallback only when pip is not installed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from codemod import git
from codemod.cache import cache_dir
from codemod.errors import CodemodError, redact

if sys.platform != "win32":  # POSIX; on Windows the atomic rename below still keeps concurrent fetches correct
    import fcntl

Progress = Callable[[str], None]

#: PEP 440 characters only: the version becomes part of a path and of a pip requirement
_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+!_-]*$")
PACKAGE = "transformers"
_PYPI_JSON = "https://pypi.org/pypi/transformers/{version}/json"
_PIP_TIMEOUT_S = 1800
_HTTP_TIMEOUT_S = 60


#: phrases in pip's output that mean the index could not be reached, not that nothing matched
_NETWORK_MARKERS = (
    "NewConnectionError",
    "Failed to establish a new connection",
    "Max retries exceeded",
    "Could not fetch URL",
    "ConnectionError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ProxyError",
    "SSLError",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
)
_NOT_FOUND_MARKERS = ("No matching distribution found", "Could not find a version that satisfies")


class FetchError(CodemodError):
    """A release could not be fetched; the message says why and what to do."""


def release_checkout(version: str) -> Path:
    """The cached checkout of ``version``, fetched on first use (for tests and benchmarks)."""
    return fetch_release(version)


def fetch_release(version: str, dest: Path | None = None, *, progress: Progress | None = None) -> Path:
    """Return the root of a one-commit git checkout of transformers ``version``'s sdist.

    Without ``dest`` this is the shared cached checkout: treat it as read-only. With ``dest`` the
    checkout is copied there (from the cache, which is filled first if needed) so it can be
    rewritten freely; ``dest`` must not exist or be an empty directory.
    """
    _check_version(version)
    say = progress or _quiet
    cached = cache_dir("releases") / f"transformers-{version}"
    if dest is None:
        return _ensure_cached(version, cached, say)
    target = Path(dest).expanduser().absolute()
    if target.resolve() == cached.resolve():
        return _ensure_cached(version, cached, say)
    _require_free(target)
    source = _ensure_cached(version, cached, say)
    return _copy_checkout(source, target, say)


def fetch_package(version: str, *, progress: Progress | None = None) -> Path:
    """The ``transformers`` package directory of release ``version``, for resolving names in it.

    A wheel is enough (and quick): only its ``transformers/`` Python files are unpacked, once per
    machine, into ``cache_dir("packages")``, under the same lock and atomic rename as a release.
    Treat it as read-only.
    """
    _check_version(version)
    say = progress or _quiet
    path = cache_dir("packages") / f"transformers-{version}"
    package = path / PACKAGE
    if (package / "__init__.py").is_file():
        return package
    with _locked(path.with_name(path.name + ".lock")):
        if (package / "__init__.py").is_file():  # another process unpacked it while we waited
            return package
        _remove_stale_builds(path)
        scratch = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
        try:
            say(f"downloading the transformers {version} wheel")
            download = scratch / "download"
            download.mkdir()
            _pip_download(version, download, "--only-binary")
            wheels = sorted(download.glob("*.whl"))
            if len(wheels) != 1:
                raise FetchError(f"expected one wheel of transformers {version}, pip saved {len(wheels)}")
            tree = scratch / "tree"
            _extract_package(wheels[0], tree)
            os.replace(tree, path)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return package


def _extract_package(wheel: Path, into: Path) -> None:
    """Unpack the ``transformers/`` Python files of ``wheel`` below ``into`` (names checked first)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = [n for n in archive.namelist() if n.startswith(f"{PACKAGE}/") and n.endswith(".py")]
            for name in members:
                pure = PurePosixPath(name)
                if pure.is_absolute() or ".." in pure.parts:
                    raise FetchError(f"{wheel.name}: refusing unsafe member {name!r}")
            if f"{PACKAGE}/__init__.py" not in members:
                raise FetchError(f"{wheel.name} is not a transformers wheel: no {PACKAGE}/__init__.py")
            for name in members:
                target = into.joinpath(*PurePosixPath(name).parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(name))
    except (zipfile.BadZipFile, OSError) as error:
        raise FetchError(f"{wheel.name} is not a readable wheel: {error}") from None


def _quiet(message: str) -> None:
    """The default progress callback: fetching is silent unless the caller asks."""


def _check_version(version: str) -> None:
    """Refuse anything but a version number before it reaches a path or a pip command line."""
    if not _VERSION.match(version):
        raise FetchError(f"{version!r} is not a transformers version number (e.g. 4.45.2)")


# --- the cache --------------------------------------------------------------------------------


def _ensure_cached(version: str, path: Path, say: Progress) -> Path:
    """Return the cached checkout at ``path``, building it once under a lock if it is missing."""
    _require_git()
    if path.exists():
        return _reuse(version, path, say)
    with _locked(path.with_name(path.name + ".lock")):
        if path.exists():  # another process built it while we waited
            return _reuse(version, path, say)
        _remove_stale_builds(path)
        _build(version, path, say)
    return path


def _reuse(version: str, path: Path, say: Progress) -> Path:
    """Return an existing cached checkout, or refuse if someone changed it.

    A modified cache is never silently rebuilt: the changes may be someone's work (e.g. the
    codemod run in place), and deleting it is the user's call.
    """
    problem = checkout_problem(path)
    if problem is not None:
        raise FetchError(
            f"the cached checkout {path} is not a pristine transformers {version} release "
            f"({problem}); delete that directory to fetch it again"
        )
    say(f"using cached transformers {version}")
    return path


def checkout_problem(root: Path) -> str | None:
    """Why ``root`` is not a pristine fetched release, or None when it is.

    Pristine: ``src/transformers/__init__.py``, HEAD on ``main``, exactly one commit, no changes.
    """
    if not root.is_dir():
        return "not a directory"
    if not (root / "src" / "transformers" / "__init__.py").is_file():
        return "no src/transformers/__init__.py"
    if not (root / ".git").is_dir():  # never let git walk up into an enclosing repository
        return "not a git repository"
    head = _git(root, "symbolic-ref", "-q", "HEAD", check=False)
    if head.returncode != 0 or head.stdout.strip() != "refs/heads/main":
        return "HEAD is not on branch main"
    count = _git(root, "rev-list", "--count", "refs/heads/main", check=False)
    if count.returncode != 0 or count.stdout.strip() != "1":
        return f"branch main has {count.stdout.strip() or 'no'} commits, expected 1"
    status = _git(root, "--no-optional-locks", "status", "--porcelain", "--untracked-files=all", check=False)
    if status.returncode != 0:
        return "git status failed"
    if status.stdout.strip():
        return "the tree has uncommitted changes"
    return None


def _remove_stale_builds(path: Path) -> None:
    """Delete temporary build directories of processes that died mid-fetch (we hold the lock)."""
    for stale in path.parent.glob(f".{path.name}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` so only one process downloads a release.

    The lock file stays behind: removing it would race with a process about to lock it.
    """
    with open(lock_path, "a+b") as handle:
        if sys.platform != "win32":
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if sys.platform != "win32":
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# --- building and copying ---------------------------------------------------------------------


def _build(version: str, path: Path, say: Progress) -> None:
    """Download, extract and commit in a temporary sibling of ``path``, then rename it into place."""
    scratch = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        say(f"downloading transformers {version} sdist")
        download = scratch / "download"
        download.mkdir()
        sdist = _download_sdist(version, download)
        say("extracting")
        tree = _extract_sdist(sdist, scratch / "extract")
        say("committing")
        _commit(tree, version)
        _install(tree, path, accept_valid=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _require_free(dest: Path) -> None:
    """Refuse to lay a checkout over anything: ``dest`` must be absent or an empty directory."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise FetchError(f"refusing to fetch into {dest}: it exists and is not empty")


def _copy_checkout(source: Path, dest: Path, say: Progress) -> Path:
    """Copy the cached checkout to ``dest`` via a temporary sibling, so ``dest`` is all or nothing."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    try:
        say(f"copying to {dest}")
        tree = scratch / "tree"
        shutil.copytree(source, tree, symlinks=True)
        # new inodes make every index entry look stale; refresh once so `git status` stays fast
        _git(tree, "update-index", "-q", "--refresh", check=False)
        _install(tree, dest, accept_valid=False)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return dest


def _install(tree: Path, dest: Path, *, accept_valid: bool) -> None:
    """Atomically rename the finished ``tree`` to ``dest`` (which may be an empty directory).

    If another process got there first (possible only where file locks are unavailable) and
    ``accept_valid``, its valid checkout is kept and ours is discarded by the caller.
    """
    try:
        os.replace(tree, dest)
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
            if accept_valid and checkout_problem(dest) is None:
                return
            raise FetchError(f"refusing to fetch into {dest}: it exists and is not empty") from None
        raise FetchError(f"could not move the checkout into {dest}: {error.strerror}") from error


# --- downloading ------------------------------------------------------------------------------


def _download_sdist(version: str, into: Path) -> Path:
    """Download transformers ``version``'s sdist into the directory ``into``; return the file.

    This is the only step that touches the network (tests replace it).
    """
    if importlib.util.find_spec("pip") is not None:
        return _download_with_pip(version, into)
    return _download_from_pypi_json(version, into)


def _download_with_pip(version: str, into: Path) -> Path:
    """``pip download`` the sdist: pip knows this machine's indexes, proxies and certificates."""
    _pip_download(version, into, "--no-binary")
    return _single_sdist(version, into)


def _pip_download(version: str, into: Path, binary: str) -> None:
    """``pip download`` transformers ``version`` into ``into``: ``--no-binary`` for the sdist,
    ``--only-binary`` for a wheel."""
    command = [
        sys.executable, "-m", "pip", "download",
        "--no-deps", binary, ":all:", "--no-input", "--disable-pip-version-check",
        "--progress-bar", "off",
        "-d", str(into), f"transformers=={version}",
    ]  # fmt: skip
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise FetchError(
            f"network failure: pip did not download transformers {version} within {_PIP_TIMEOUT_S} s"
        ) from None
    if result.returncode != 0:
        raise _pip_failure(version, result.stdout + "\n" + result.stderr)


def _pip_failure(version: str, output: str) -> FetchError:
    """Turn a failed ``pip download`` into an error that says which of the usual causes it was."""
    detail = _pip_error_lines(output)
    if any(marker in output for marker in _NETWORK_MARKERS):
        return FetchError(f"network failure while downloading transformers {version} with pip: {detail}")
    if any(marker in output for marker in _NOT_FOUND_MARKERS):
        released = _released_versions()
        if released is not None and version in released:
            return FetchError(f"transformers {version} has no source distribution (sdist) on PyPI, only wheels")
        return FetchError(
            f"transformers {version} was not found on PyPI (no such release, or no sdist for it): {detail}"
        )
    return FetchError(f"pip could not download transformers {version}: {detail}")


def _pip_error_lines(output: str) -> str:
    """pip's ``ERROR:`` lines (or its last line), with any credentials in URLs blanked."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:") and "yanked versions" not in line]
    text = " ".join((errors or lines[-1:])[-2:])
    text = re.sub(r"\(from versions: [^)]*\)", "", text)  # every release ever made: noise here
    text = redact(re.sub(r"\s+", " ", text).strip())
    return (text[:400] + " ...") if len(text) > 400 else text or "no output"


def _released_versions() -> set[str] | None:
    """All transformers versions the index knows (wheels too), or None if pip cannot say.

    Only consulted after a failure, to tell "no such release" from "no sdist".
    """
    command = [sys.executable, "-m", "pip", "index", "versions", "transformers", "--pre",
               "--disable-pip-version-check", "--no-input"]  # fmt: skip
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"^Available versions:\s*(.+)$", result.stdout, re.MULTILINE)
    if result.returncode != 0 or match is None:
        return None
    return {v.strip() for v in match.group(1).split(",")}


def _single_sdist(version: str, into: Path) -> Path:
    """The one archive pip saved, which must be a ``.tar.gz`` sdist."""
    files = [p for p in into.iterdir() if p.is_file()]
    archives = [p for p in files if p.name.endswith(".tar.gz")]
    if len(archives) != 1:
        names = ", ".join(sorted(p.name for p in files)) or "nothing"
        raise FetchError(f"expected one .tar.gz sdist of transformers {version}, pip saved {names}")
    return archives[0]


def _download_from_pypi_json(version: str, into: Path) -> Path:
    """Fallback without pip: find the sdist via PyPI's JSON API and check its sha256 digest."""
    entry = _sdist_entry(version, _pypi_metadata(version))
    url, filename, expected = entry["url"], PurePosixPath(entry["filename"]).name, entry["digests"]["sha256"]
    if urllib.parse.urlsplit(url).scheme != "https" or not filename.endswith(".tar.gz"):
        raise FetchError(f"PyPI's sdist of transformers {version} is not a .tar.gz over https: {filename}")
    target = into / filename
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=_HTTP_TIMEOUT_S) as response, open(target, "wb") as out:
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except (urllib.error.URLError, OSError) as error:
        raise FetchError(f"network failure while downloading {filename} from PyPI: {_reason(error)}") from None
    if digest.hexdigest() != expected:
        target.unlink()
        raise FetchError(f"{filename} from PyPI does not match its published sha256 digest")
    return target


def _pypi_metadata(version: str) -> dict[str, Any]:
    """PyPI's JSON description of one transformers release."""
    url = _PYPI_JSON.format(version=urllib.parse.quote(version, safe=""))
    try:
        with urllib.request.urlopen(url, timeout=_HTTP_TIMEOUT_S) as response:
            metadata: dict[str, Any] = json.load(response)  # PyPI's JSON API: an object
            return metadata
    except urllib.error.HTTPError as error:
        if error.code == 404:
            raise FetchError(f"transformers {version} was not found on PyPI") from None
        raise FetchError(f"network failure: PyPI answered HTTP {error.code} for transformers {version}") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise FetchError(f"network failure while asking PyPI about transformers {version}: {_reason(error)}") from None


def _sdist_entry(version: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """The release file entry of the ``.tar.gz`` sdist, or an error saying there is none."""
    sdists: list[dict[str, Any]] = [u for u in metadata.get("urls", []) if u.get("packagetype") == "sdist"]
    if not sdists:
        raise FetchError(f"transformers {version} has no source distribution (sdist) on PyPI, only wheels")
    for entry in sdists:
        if str(entry.get("filename", "")).endswith(".tar.gz") and entry.get("digests", {}).get("sha256"):
            return entry
    raise FetchError(f"transformers {version}'s sdist on PyPI is not a .tar.gz with a sha256 digest")


def _reason(error: BaseException) -> str:
    """A short reason for a network error, without URLs that could carry credentials."""
    reason = getattr(error, "reason", None) or error
    return redact(str(reason))


# --- extracting -------------------------------------------------------------------------------


def _extract_sdist(sdist: Path, into: Path) -> Path:
    """Safely extract ``sdist`` below ``into`` and return its single top folder.

    Every member is checked before anything is written: absolute names, ``..``, links and
    devices are refused; the ``data`` filter (where Python has it) is a second line of defence.
    """
    if not sdist.name.endswith(".tar.gz"):
        raise FetchError(f"{sdist.name} is not a .tar.gz sdist")
    try:
        with tarfile.open(sdist, mode="r:gz") as archive:
            members = archive.getmembers()
            top = _top_folder(sdist, members)
            into.mkdir(parents=True, exist_ok=True)
            if hasattr(tarfile, "data_filter"):
                archive.extractall(into, members=members, filter="data")
            else:  # pragma: no cover - Python without extraction filters
                archive.extractall(into, members=members)
    except (tarfile.TarError, EOFError, OSError) as error:
        raise FetchError(f"{sdist.name} is not a readable .tar.gz sdist: {error}") from None
    root = into / top
    if not (root / "src" / "transformers" / "__init__.py").is_file():
        raise FetchError(f"{sdist.name} is not a transformers sdist: no src/transformers/__init__.py")
    return root


def _top_folder(sdist: Path, members: list[tarfile.TarInfo]) -> str:
    """The one ``transformers-*`` folder every member lies in; refuse unsafe or stray members."""
    tops: set[str] = set()
    for member in members:
        name = PurePosixPath(member.name)
        if name.is_absolute() or ".." in name.parts or not name.parts:
            raise FetchError(f"{sdist.name}: refusing unsafe member {member.name!r}")
        if ".git" in name.parts:  # a shipped .git could carry config that makes git run commands
            raise FetchError(f"{sdist.name}: refusing member {member.name!r} inside a .git directory")
        if not (member.isfile() or member.isdir()):
            raise FetchError(f"{sdist.name}: refusing member {member.name!r} (links and devices are not allowed)")
        if len(name.parts) == 1 and not member.isdir():
            raise FetchError(f"{sdist.name}: stray file {member.name!r} outside the top folder")
        tops.add(name.parts[0])
    if len(tops) != 1 or not next(iter(tops)).lower().startswith("transformers-"):
        raise FetchError(f"{sdist.name}: expected one top folder transformers-VERSION, found {sorted(tops)}")
    return tops.pop()


# --- git --------------------------------------------------------------------------------------


def _require_git() -> None:
    """Fail before downloading anything if git, which lays out the checkout, is missing."""
    if shutil.which("git") is None:
        raise FetchError("git was not found on PATH; it is needed to lay out the release as a repository")


def _commit(tree: Path, version: str) -> None:
    """Make ``tree`` a repository whose one commit on ``main`` holds every extracted file."""
    if _git(tree, "init", "-q", "-b", "main", check=False).returncode != 0:  # git < 2.28
        _git(tree, "init", "-q")
        _git(tree, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(tree, "add", "-A", "--force")  # --force: the sdist's own .gitignore must not drop files
    _git(tree, "commit", "-q", "--no-verify", "-m", f"transformers {version} (sdist from PyPI)")


def _git(root: Path, *args: str, check: bool = True) -> git.Done:
    """git in a repository this module makes: isolated from the caller's git environment and
    configuration (the commit's id depends on the release's contents alone), failing as a FetchError."""
    return git.run(root, *args, check=check, error=FetchError, isolated=True)
