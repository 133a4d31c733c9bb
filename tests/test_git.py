"""codemod/git.py: the one way the tool runs git (errors in the asking stage's type, redacted; worktrees
that leave no trace; commits the user's configuration cannot change)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codemod import git
from codemod.errors import CodemodError
from codemod.fetch import FetchError


def make_repo(root: Path) -> Path:
    root.mkdir()
    git.run(root, "init", "-q", "-b", "main", isolated=True)
    (root / "a.py").write_text("x = 1\n")
    (root / "sub").mkdir()
    (root / "sub" / "b.py").write_bytes(b"\xef\xbb\xbfy = 2\n")
    git.run(root, "add", "-A", isolated=True)
    git.run(root, "commit", "-q", "-m", "one", isolated=True)
    return root


def test_a_failure_is_the_asking_stages_error_with_gits_last_line(tmp_path) -> None:
    repo = make_repo(tmp_path / "r")
    with pytest.raises(FetchError, match=r"git rev-parse --verify failed in .*: fatal: Needed a single revision"):
        git.run(repo, "rev-parse", "--verify", "no-such-ref", error=FetchError)
    with pytest.raises(git.GitError):
        git.run(repo, "rev-parse", "--verify", "no-such-ref")
    assert issubclass(git.GitError, CodemodError)


def test_credentials_never_reach_the_message(tmp_path) -> None:
    repo = make_repo(tmp_path / "r")
    # git echoes the revision it cannot find: the secret would be in its last line
    assert "ghp_abc123" in git.run(repo, "show", "ghp_abc123:a.py", check=False).stderr
    with pytest.raises(git.GitError) as caught:
        git.run(repo, "show", "ghp_abc123:a.py", secrets=("ghp_abc123",))
    assert "ghp_abc123" not in str(caught.value) and "***" in str(caught.value)
    with pytest.raises(git.GitError) as caught:  # a URL's credentials, without being told the secret
        git.run(repo, "show", "https://ghp_abc123@github.com/o/r:a.py")
    assert "ghp_abc123" not in str(caught.value)


def test_unchecked_failures_return_the_exit_status(tmp_path) -> None:
    repo = make_repo(tmp_path / "r")
    done = git.run(repo, "rev-parse", "--verify", "-q", "no-such-ref", check=False)
    assert not done.ok and done.returncode != 0
    assert git.output(repo, "rev-parse", "--verify", "-q", "no-such-ref") is None
    assert git.output(tmp_path, "rev-parse", "--is-inside-work-tree") is None  # not a repository at all


def test_show_returns_the_committed_bytes_and_none_where_there_are_none(tmp_path) -> None:
    repo = make_repo(tmp_path / "r")
    (repo / "a.py").write_text("x = 2\n")  # the working tree's change is not what show reads
    assert git.show(repo, "HEAD", "a.py") == b"x = 1\n"
    assert git.show(repo, "HEAD", "sub/b.py") == b"\xef\xbb\xbfy = 2\n"  # bytes: a BOM survives
    assert git.show(repo, "HEAD", "missing.py") is None
    assert git.prefix(repo) == ""
    assert git.prefix(repo / "sub") == "sub/"


def test_isolated_commits_do_not_depend_on_the_users_configuration(tmp_path, monkeypatch) -> None:
    first = make_repo(tmp_path / "one")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "someone else")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2020-02-02T00:00:00Z")
    second = make_repo(tmp_path / "two")
    assert git.output(first, "rev-parse", "HEAD") == git.output(second, "rev-parse", "HEAD")


def test_a_worktree_is_removed_and_pruned_even_when_the_body_fails(tmp_path) -> None:
    repo = make_repo(tmp_path / "r")
    (repo / "a.py").write_text("x = 3\n")
    seen: list[Path] = []
    with pytest.raises(ZeroDivisionError), git.worktree(repo, "HEAD", parent=tmp_path) as tree:
        seen.append(tree)
        assert (tree / "a.py").read_text() == "x = 1\n"  # the revision, not the working tree
        1 / 0  # noqa: B018 - the body fails
    assert not seen[0].exists()
    listed = subprocess.run(["git", "-C", str(repo), "worktree", "list"], capture_output=True, text=True).stdout
    assert len(listed.strip().splitlines()) == 1, listed
    assert (repo / "a.py").read_text() == "x = 3\n"  # the user's tree untouched


def test_a_worktree_of_a_revision_that_does_not_exist_is_the_stages_error(tmp_path) -> None:
    repo = make_repo(tmp_path / "r")
    with (
        pytest.raises(FetchError, match="worktree add"),
        git.worktree(repo, "no-such-ref", error=FetchError, parent=tmp_path),
    ):
        pass
    assert [p for p in tmp_path.iterdir() if p.name.startswith("codemod-worktree-")] == []
