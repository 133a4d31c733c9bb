"""The git edge: every git command the tool runs goes through :func:`run`.

One place decides how git is called: never interactively (``GIT_TERMINAL_PROMPT=0``, no stdin), with
a timeout, and with its failures as one redacted line in the error type of the stage that asked
(``error=``): a fetch failure is a ``FetchError``, a bot's a ``PrError``, a verification's a
``VerificationError``, all of them ``CodemodError``\\ s. ``isolated=True`` also drops the caller's
``GIT_*`` environment and pins what a commit needs (identity, no signing, no CRLF conversion): for
repositories the tool makes itself (a fetched release), whose bytes must not depend on the user's
configuration.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from codemod.errors import CodemodError, one_line, redact

#: a git command that takes longer than this is stuck (a hung remote, a lock): fail instead of waiting
TIMEOUT_S = 600

#: a fixed identity and date make a commit's id a function of its contents alone (a fetched release's
#: commit is the same on every machine); the user's and the system's git config (hooks, excludes,
#: signing, autocrlf) must not change what gets committed or how the tree is judged clean
_ISOLATED_ENV = {
    "GIT_AUTHOR_NAME": "transformers-codemod",
    "GIT_AUTHOR_EMAIL": "codemod@localhost",
    "GIT_COMMITTER_NAME": "transformers-codemod",
    "GIT_COMMITTER_EMAIL": "codemod@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
#: configuration that would change a commit's bytes or block it (a signing key's passphrase prompt)
_ISOLATED_CONFIG = ("-c", "commit.gpgsign=false", "-c", "core.autocrlf=false")


class GitError(CodemodError):
    """A git command failed (or git is missing) where no stage-specific error was asked for."""


@dataclasses.dataclass(frozen=True)
class Done:
    """What a git command returned: its exit status, its output as bytes (a file's content from ``show``
    must stay bytes: an encoding cookie or a BOM decides its text) and its error output."""

    returncode: int
    raw: bytes
    stderr: str

    @property
    def stdout(self) -> str:
        return self.raw.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run(
    root: Path,
    *args: str,
    check: bool = True,
    error: type[CodemodError] = GitError,
    secrets: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    isolated: bool = False,
    timeout: float = TIMEOUT_S,
) -> Done:
    """``git -C root ARGS``. With ``check``, a non-zero exit raises ``error`` with git's last lines."""
    base_env = {
        k: v for k, v in os.environ.items() if not (isolated and k.startswith("GIT_") and k != "GIT_EXEC_PATH")
    }
    full_env = {**base_env, **(_ISOLATED_ENV if isolated else {}), "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    command = ["git", *(_ISOLATED_CONFIG if isolated else ()), "-C", str(root), *args]
    try:
        completed = subprocess.run(
            command, env=full_env, capture_output=True, timeout=timeout, check=False,
            input=input.encode() if input is not None else None,
            stdin=subprocess.DEVNULL if input is None else None,
        )  # fmt: skip
    except FileNotFoundError:
        raise error("git was not found on PATH") from None
    except (OSError, subprocess.TimeoutExpired) as failure:
        raise error(redact(f"git {args[0]} failed: {failure}", secrets)) from None
    stderr = completed.stderr.decode("utf-8", "replace")
    done = Done(completed.returncode, completed.stdout, stderr)
    if check and not done.ok:
        last = " / ".join(line.strip() for line in stderr.strip().splitlines()[-3:] if line.strip())
        raise error(
            redact(
                f"git {' '.join(args[:2])} failed in {root}: {one_line(last) or f'exit {done.returncode}'}", secrets
            )
        )
    return done


def output(root: Path, *args: str) -> str | None:
    """What a query prints, stripped, or None when it fails (not a repository, no such ref, no git)."""
    try:
        done = run(root, *args, check=False)
    except GitError:
        return None
    return done.stdout.strip() if done.ok else None


def show(root: Path, revision: str, path: str) -> bytes | None:
    """The bytes of ``path`` at ``revision`` (relative to ``root``'s repository top), or None where it has none."""
    try:
        done = run(root, "show", f"{revision}:{path}", check=False)
    except GitError:
        return None
    return done.raw if done.ok else None


def repository_root(root: Path) -> Path:
    """The top of ``root``'s git work tree (``root`` itself outside any)."""
    top = output(root, "rev-parse", "--show-toplevel")
    return Path(top) if top else root


def prefix(root: Path) -> str:
    """``root`` relative to the top of its git work tree ("" at the top, or outside any)."""
    return output(root, "rev-parse", "--show-prefix") or ""


@contextlib.contextmanager
def worktree(
    repo: Path,
    revision: str,
    *,
    error: type[CodemodError] = GitError,
    secrets: tuple[str, ...] = (),
    parent: Path | None = None,
    name: str = "tree",
) -> Iterator[Path]:
    """A detached worktree of ``revision`` in a new temporary directory (under ``parent`` if given),
    removed and pruned whatever happens: the user's repository keeps no trace of it. The worktrees a killed
    run left (its process is gone) are pruned first."""
    prune_stale_worktrees(repo)
    scratch = Path(tempfile.mkdtemp(prefix=f"{WORKTREE_PREFIX}{os.getpid()}-", dir=parent))
    path = scratch / name
    try:
        run(repo, "worktree", "add", "--detach", "--quiet", str(path), revision, error=error, secrets=secrets)
        yield path
    finally:
        with contextlib.suppress(CodemodError):
            run(repo, "worktree", "remove", "--force", str(path), check=False)
        shutil.rmtree(scratch, ignore_errors=True)
        with contextlib.suppress(CodemodError):
            run(repo, "worktree", "prune", check=False)


#: the name of a worktree's temporary directory starts with this and the pid of the process that made it
WORKTREE_PREFIX = "codemod-worktree-"
_OWNER = re.compile(re.escape(WORKTREE_PREFIX) + r"(\d+)-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def prune_stale_worktrees(repo: Path) -> list[Path]:
    """Remove the worktrees of ``repo`` that a run of this tool made and could not remove (it was killed): their
    directory names the process, which is gone. Returns the worktrees removed; a failure is left for later."""
    listed = output(repo, "worktree", "list", "--porcelain")
    removed = []
    for line in (listed or "").splitlines():
        path = Path(line.removeprefix("worktree ")) if line.startswith("worktree ") else None
        owner = _OWNER.match(path.parent.name) if path is not None else None
        if path is None or owner is None or _alive(int(owner.group(1))):
            continue
        with contextlib.suppress(CodemodError):
            run(repo, "worktree", "remove", "--force", str(path), check=False)
        shutil.rmtree(path.parent, ignore_errors=True)
        removed.append(path)
    if removed:
        with contextlib.suppress(CodemodError):
            run(repo, "worktree", "prune", check=False)
    return removed
