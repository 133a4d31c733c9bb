"""The git side of ``codemod pr``: the remote's base and the bot's branches, the worktree the engine
migrates, and the bot's commits and pushes, every command through :func:`codemod.git.run`.

The user's checkout is never modified: the engine runs in a temporary worktree (removed and pruned
whatever happens), commits are built in a private index with ``commit-tree``, and the only refs
written locally are the remote-tracking ones ``fetch`` updates.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Mapping
from pathlib import Path

from codemod import git
from codemod.publish.pr.plan import BRANCH_PREFIX, BranchPlan, PrError, RemoteBranch


@dataclasses.dataclass(frozen=True)
class Identity:
    """Who the bot's commits are by: commits by anyone else on its branches mean "hands off"."""

    name: str = "transformers-codemod"
    email: str = "transformers-codemod@users.noreply.github.com"


BOT = Identity()


@dataclasses.dataclass(frozen=True)
class Git:
    """``git`` in a repository, with errors as one redacted line and no interactive prompts."""

    cwd: Path
    secrets: tuple[str, ...] = ()

    def run(
        self, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None, input: str | None = None
    ) -> str:
        return git.run(cwd or self.cwd, *args, error=PrError, secrets=self.secrets, env=env, input=input).stdout


def repository_root(path: Path) -> tuple[Path, Path]:
    """The repository's top level and ``path`` relative to it (the checkout root the plan's files are under)."""
    path = path.resolve()
    if not path.is_dir():
        raise PrError(f"{path} is not a directory (codemod pr needs a transformers git checkout)")
    try:
        top = Path(Git(path).run("rev-parse", "--show-toplevel").strip()).resolve()
    except PrError:
        raise PrError(f"{path} is not inside a git checkout") from None
    return top, path.relative_to(top)


def fetch(git: Git, remote: str, base: str) -> tuple[str, dict[str, str]]:
    """``git fetch REMOTE BASE`` plus the bot's branches; the base SHA and ``{branch: sha}`` on the remote."""
    tracking = f"refs/remotes/{remote}/"
    git.run(
        "fetch",
        "--no-tags",
        "--prune",
        remote,
        f"+refs/heads/{base}:{tracking}{base}",
        f"+refs/heads/{BRANCH_PREFIX}*:{tracking}{BRANCH_PREFIX}*",
    )
    base_sha = git.run("rev-parse", "--verify", f"{tracking}{base}^{{commit}}").strip()
    listing = git.run("for-each-ref", "--format=%(objectname) %(refname)", f"{tracking}{BRANCH_PREFIX}")
    branches = {}
    for line in listing.splitlines():
        sha, ref = line.split(" ", 1)
        branches[ref.removeprefix(tracking)] = sha
    return base_sha, branches


def remote_branch(git: Git, sha: str | None, base_sha: str, identity: Identity) -> RemoteBranch | None:
    """The branch at ``sha`` on the remote (None: it has none), with its commits since its merge base
    with the base whose author or committer is not the bot."""
    if not sha:
        return None
    log = git.run("log", "--format=%h%x1f%an%x1f%ae%x1f%cn%x1f%ce", sha, "--not", base_sha)
    foreign = []
    for line in log.splitlines():
        short, an, ae, cn, ce = line.split("\x1f")
        bot = an == identity.name and ae.lower() == identity.email.lower() and ce.lower() == identity.email.lower()
        if not bot:
            foreign.append(f"{short} by {an} <{ae}>" + ("" if (cn, ce) == (an, ae) else f", committed by {cn} <{ce}>"))
    return RemoteBranch(sha, tuple(foreign))


def worktree(repo: Git, base_sha: str, scratch: Path | None) -> contextlib.AbstractContextManager[Path]:
    """A detached worktree of the base in a temporary directory (under ``scratch``), removed and pruned
    whatever happens."""
    return git.worktree(repo.cwd, base_sha, error=PrError, secrets=repo.secrets, parent=scratch, name="checkout")


def build_branch(git: Git, root: Path, base_sha: str, plan: BranchPlan, identity: Identity, index: Path) -> str:
    """One commit per model on top of the base, from the worktree's files, without touching any index or ref.

    A private index (``GIT_INDEX_FILE``) starts as the base's tree; each model's files are added to it
    and committed with ``commit-tree`` as the bot. A file shared by two models lands in the first
    commit; the second model still gets its own (possibly empty) commit, so every model has one.
    """
    env = {
        "GIT_INDEX_FILE": str(index),
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_AUTHOR_NAME": identity.name,
        "GIT_AUTHOR_EMAIL": identity.email,
        "GIT_COMMITTER_NAME": identity.name,
        "GIT_COMMITTER_EMAIL": identity.email,
    }
    index.unlink(missing_ok=True)
    git.run("read-tree", base_sha, cwd=root, env=env)
    parent = base_sha
    for commit in plan.commits:
        listed = git.run("ls-files", "-z", "--", *commit.files, cwd=root, env=env) if commit.files else ""
        tracked = set(listed.split("\0"))
        paths = [f for f in commit.files if f in tracked or (root / f).exists()]
        if paths:
            git.run("add", "-A", "--", *paths, cwd=root, env=env)
        tree = git.run("write-tree", cwd=root, env=env).strip()
        parent = git.run(
            "commit-tree", "--no-gpg-sign", tree, "-p", parent, "-F", "-", cwd=root, env=env, input=commit.message
        ).strip()
    return parent


def push_branch(
    git: Git, root: Path, base_sha: str, remote: str, plan: BranchPlan, lease: str, identity: Identity
) -> bool:
    """Build the branch and force-push it, unless the remote's already holds the same tree; whether it pushed.

    The push has a lease on the SHA observed (``lease``; "" = the branch must not exist), so nobody's work is lost.
    """
    with tempfile.TemporaryDirectory(prefix="codemod-pr-index-") as scratch:
        head = build_branch(git, root, base_sha, plan, identity, Path(scratch) / "index")
    if lease and git.run("rev-parse", f"{lease}^{{tree}}").strip() == git.run("rev-parse", f"{head}^{{tree}}").strip():
        return False
    ref = f"refs/heads/{plan.branch}"
    git.run("push", "--porcelain", f"--force-with-lease={ref}:{lease}", remote, f"{head}:{ref}")
    return True
