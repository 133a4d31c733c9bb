"""Writing into a checkout without losing anyone's work: all files or none, whatever stops the run.

``replace_all`` stages every new text beside its file, then moves each over its original, and keeps three
promises:

* a file is replaced only while it is still the file that was read (its content hash): an edit made by
  another process since is never overwritten; the run stops with one line naming the file and puts back
  what it replaced;
* a file is recorded as replaced *before* its rename, and Ctrl-C is held off to the next step: an
  interrupt at any instant puts back every file already replaced and says so in one line (exit 130);
* before its first step it leaves a journal (the original bytes and the staged files' names) in the tool's
  cache: a run killed outright (SIGKILL, a power cut) is undone by the next run that works on the checkout
  (``attend``), which also removes the staged files it left.

One run at a time works on a checkout: ``hold`` takes a lock file per checkout (in the tool's cache, never
in the tree), held until the process ends. ``attend`` also reports the note ``apply --verify`` leaves
while the tree holds changes it has not verified yet (``mark_unverified``), with the way out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import os
import pickle
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from codemod.cache import cache_dir
from codemod.checkout import Checkout, git_state
from codemod.errors import CodemodError

#: the suffix of a staged file: ``.<name>.<run token><random>.codemod`` beside the file it replaces
STAGED_SUFFIX = ".codemod"

#: a test hook: called with (step, path) before each step of a write ("stage", "check", "replace", "done"); a test
#: raises ``KeyboardInterrupt`` from it to interrupt the write at that exact step
step_hook: Callable[[str, str], None] | None = None


class WriteError(CodemodError):
    """A changed file could not be written (or changed underneath); the tree was put back as it was."""


class Interrupted(CodemodError):
    """Ctrl-C during a write: every file already replaced was put back."""

    exit_code = 130


class Busy(CodemodError):
    """Another run of the tool holds the checkout's lock."""


@dataclasses.dataclass(frozen=True)
class Replacement:
    """One file to replace: ``target`` (the real file, a symlink's target), ``label`` (its path as the user reads
    it), ``old`` (the bytes the new text was computed from) and ``new``."""

    target: Path
    label: str
    old: bytes
    new: bytes


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------------- the lock

#: the checkouts this process holds the lock of: key -> the open lock file (released when the process ends)
_held: dict[str, int] = {}
#: at most this many locks are held at once, the most recent (each is an open file)
_MAX_HELD = 16


def _key(root: Path) -> str:
    return sha(str(root.resolve()).encode("utf-8", "surrogateescape"))[:24]


def _state(root: Path, suffix: str) -> Path:
    """The tool's own file about ``root`` (its lock, its journal, its unverified note), in the cache."""
    return cache_dir("runs") / f"{_key(root)}.{suffix}"


def hold(root: Path) -> None:
    """Take the lock of the checkout at ``root`` for the rest of this process (again: nothing to do); raises
    ``Busy`` when another process holds it. The kernel releases it when the process ends, however it ends."""
    key = _key(root)
    if key in _held:
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock (Windows): runs are not serialised
        return
    path = _state(root, "lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "?"
        os.close(fd)
        raise Busy(f"another codemod run (pid {holder}) is working on {root}: wait for it to finish") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[key] = fd
    while len(_held) > _MAX_HELD:  # a process that works on checkout after checkout (a test session) keeps the last
        os.close(_held.pop(next(iter(_held))))


def _held_elsewhere(root: Path) -> bool:
    """Whether another process holds the checkout's lock now (a run under way), without taking it."""
    if _key(root) in _held:
        return False
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock (Windows)
        return False
    try:
        fd = os.open(_state(root, "lock"), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


# --------------------------------------------------------------------------------------------- interrupts


@contextlib.contextmanager
def _held_off() -> Iterator[list[bool]]:
    """Ctrl-C only marks the run as interrupted; the write checks the mark between steps (``_step``) and never
    during the rollback, which must finish. Outside the main thread signals cannot be handled: nothing changes."""
    interrupted = [False]
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return

    def mark(signum: int, frame: FrameType | None) -> None:
        interrupted[0] = True

    previous = signal.signal(signal.SIGINT, mark)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


def _step(step: str, label: str, interrupted: list[bool]) -> None:
    if step_hook is not None:
        step_hook(step, label)
    if interrupted[0]:
        raise KeyboardInterrupt


# --------------------------------------------------------------------------------------------- the write


def replace_all(root: Path, replacements: Sequence[Replacement]) -> None:
    """Replace every file, all or nothing (see the module's docstring); raises ``WriteError``, ``Interrupted``
    or ``Busy`` with the tree as it was."""
    hold(root)
    token = os.urandom(4).hex()
    journal = _state(root, "journal")
    _write_journal(journal, root, token, replacements)
    staged: list[Path] = []
    replaced: list[Replacement] = []
    current = ""
    with _held_off() as interrupted:
        try:
            for r in replacements:
                current = r.label
                _step("stage", r.label, interrupted)
                staged.append(_stage(r.target, r.new, token))
            for r, tmp in zip(replacements, staged, strict=True):
                current = r.label
                _step("check", r.label, interrupted)
                if _read_or_none(r.target) != r.old:
                    raise _Changed(r.label)
                replaced.append(r)  # before the rename: an interrupt between the two still puts it back
                _step("replace", r.label, interrupted)
                os.replace(tmp, r.target)
            _step("done", "", interrupted)
        except BaseException as error:
            for tmp in staged:
                tmp.unlink(missing_ok=True)
            back, lost = _put_back(replaced)
            journal.unlink(missing_ok=True)
            raise _reported(error, root, current, back, lost) from None
    journal.unlink(missing_ok=True)


class _Changed(Exception):
    """A file is no longer what the run read."""


def _reported(error: BaseException, root: Path, current: str, back: list[str], lost: list[str]) -> BaseException:
    """The one line a failed write ends with: what stopped it and what was put back."""
    put_back = f" (put back {len(back)} already replaced: {', '.join(back)})" if back else ""
    outcome = f"could not put back {', '.join(lost)}" if lost else f"no file was changed{put_back}"
    if isinstance(error, KeyboardInterrupt):
        return Interrupted(f"interrupted: {outcome}")
    if isinstance(error, _Changed):
        return WriteError(
            f"{current} changed on disk since it was read (another process edited it): stopped before replacing it; "
            f"{outcome}; run again to include the edit"
        )
    if isinstance(error, OSError):
        return WriteError(f"cannot write {current} in {root}: {error.strerror or error}; {outcome}")
    return error


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _put_back(replaced: Sequence[Replacement]) -> tuple[list[str], list[str]]:
    """Put back the originals of the files replaced: returns the labels put back and those that could not be. A
    file that is neither what was read nor what was written was changed by someone else since: it is left as it
    is, and named."""
    back, lost = [], []
    for r in replaced:
        now = _read_or_none(r.target)
        if now == r.old:
            continue  # interrupted before its rename
        try:
            if now != r.new:
                raise OSError("changed by another process")
            os.replace(_stage(r.target, r.old, "back"), r.target)
            back.append(r.label)
        except OSError:
            lost.append(r.label)
    return back, lost


def put_back(originals: Mapping[Path, tuple[str, bytes]]) -> list[str]:
    """Put back each file (real path -> (label, bytes)) atomically; returns the labels that could not be."""
    lost = []
    for target, (label, data) in originals.items():
        try:
            os.replace(_stage(target, data, "back"), target)
        except OSError:
            lost.append(label)
    return lost


def _stage(target: Path, data: bytes, token: str) -> Path:
    """``data`` in a new file beside ``target``, with its mode: ready to be moved over it."""
    mode = target.stat().st_mode
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.{token}", suffix=STAGED_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode & 0o7777)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


# --------------------------------------------------------------------------------------------- what a killed run left


@dataclasses.dataclass(frozen=True)
class _Entry:
    target: str
    label: str
    old: bytes
    new_sha: str


def _write_journal(path: Path, root: Path, token: str, replacements: Iterable[Replacement]) -> None:
    entries = [_Entry(str(r.target), r.label, r.old, sha(r.new)) for r in replacements]
    with path.open("wb") as handle:
        pickle.dump((str(root), token, entries), handle, protocol=pickle.HIGHEST_PROTOCOL)


def _load(path: Path, fields: int) -> tuple[Any, ...] | None:
    """The tuple of ``fields`` values this module pickled in ``path``; None where there is none, or where a run
    was killed while writing it (nothing depended on it yet: it is removed)."""
    try:
        with path.open("rb") as handle:
            state = pickle.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
        state = None
    if isinstance(state, tuple) and len(state) == fields:
        return state
    path.unlink(missing_ok=True)
    return None


def _recover(root: Path) -> list[str]:
    """Undo the write a killed run left half done (its journal): remove its staged files and put back the files
    it replaced. Only under the lock: the run that wrote the journal is gone."""
    path = _state(root, "journal")
    if (journal := _load(path, 3)) is None:  # written by _write_journal
        return []
    _, token, entries = journal
    removed, back, left = 0, [], []
    for entry in entries:
        target = Path(entry.target)
        for tmp in target.parent.glob(f".{target.name}.{token}*{STAGED_SUFFIX}"):
            tmp.unlink(missing_ok=True)
            removed += 1
        now = _read_or_none(target)
        if now is None or now == entry.old:
            continue
        if sha(now) == entry.new_sha and not put_back({target: (entry.label, entry.old)}):
            back.append(entry.label)
        else:
            left.append(entry.label)
    path.unlink(missing_ok=True)
    lines = []
    if removed or back:
        lines.append(
            f"an earlier run on {root} was stopped while writing: removed {removed} staged files, put back "
            f"{len(back)} files it had replaced" + (f" ({', '.join(back)})" if back else "")
        )
    if left:
        lines.append(f"an earlier, stopped run left {', '.join(left)} changed since; check them (git diff)")
    return lines


# --------------------------------------------------------------------------------------------- unverified changes


def mark_unverified(root: Path, originals: Mapping[str, bytes]) -> None:
    """Note that the files of ``originals`` (path relative to ``root`` -> the bytes before) are about to hold
    changes not verified yet: ``attend`` reports the note until ``clear_unverified`` or until they are back."""
    note = {path: sha(data) for path, data in originals.items()}
    started = datetime.datetime.now(tz=datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with _state(root, "unverified").open("wb") as handle:
        pickle.dump((os.getpid(), started, note), handle)


def clear_unverified(root: Path) -> None:
    _state(root, "unverified").unlink(missing_ok=True)


def _unverified(root: Path) -> list[str]:
    path = _state(root, "unverified")
    if (unverified := _load(path, 3)) is None:  # written by mark_unverified
        return []
    pid, started, note = unverified
    changed = sorted(
        p for p, digest in note.items() if (now := _read_or_none(root / p)) is not None and sha(now) != digest
    )
    if not changed:
        path.unlink(missing_ok=True)  # everything is back as it was: nothing to say
        return []
    return [
        f"{root} holds unverified changes: an `apply --verify` started {started} (pid {pid}) was stopped during "
        f"verification, leaving {len(changed)} files changed ({_first_three(changed)}); put them back with "
        f"`git -C {root} checkout -- {' '.join(changed)}`, or check them with `codemod verify {root}` and then "
        f"delete {path}"
    ]


def _first_three(names: Sequence[str]) -> str:
    """``a, b, c and 4 more``: the files a one-line message names."""
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def attend(root: Path, *, recover: bool) -> list[str]:
    """What an earlier run left at ``root``, as lines to show: a write it was killed in (undone here when
    ``recover``, which takes the checkout's lock; only named otherwise) and unverified changes. A run under way
    (it holds the lock) has left nothing yet."""
    if recover:
        hold(root)
        return _recover(root) + _unverified(root)
    if _held_elsewhere(root):
        return []
    lines = []
    if _state(root, "journal").exists() and _key(root) not in _held:
        lines.append(
            f"an earlier run on {root} was stopped while writing: the next `codemod apply` puts back what it replaced"
        )
    return lines + _unverified(root)


def recovered(checkout: Checkout, *, recover: bool) -> tuple[Checkout, list[str]]:
    """``attend`` for a checkout: the lines to show, and the checkout with its git state read again when an
    earlier run's write was undone (it was dirty with that write)."""
    lines = attend(checkout.root, recover=recover)
    if lines and recover and checkout.git is not None:
        checkout = dataclasses.replace(checkout, git=git_state(checkout.root))
    return checkout, lines


def stopped(error: BaseException, restored: Iterable[str]) -> NoReturn:
    """End a run that has put the files ``restored`` back after ``error`` (call it where ``error`` is handled): for
    Ctrl-C with one line that says so (exit 130); for anything else with ``error`` itself."""
    if not isinstance(error, KeyboardInterrupt):
        raise error
    files = sorted(restored)
    raise Interrupted(
        f"interrupted: put back the {len(files)} files it had changed ({_first_three(files)}); the tree is as it was"
    ) from None
