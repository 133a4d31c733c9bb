"""The PR bot with the real engine, the way CI runs it, on a real transformers release.

``tests/test_pr.py`` drives the bot with a stand-in engine; here nothing is stood in but GitHub:
a pristine 4.45.2 (from PyPI) is the remote's ``main``, the user's clone is the path the bot gets,
and ``codemod pr <clone> --repo acme/transformers --remote origin --base main --api-url … --only
llama,granite,mistral`` scans, applies and verifies in a worktree, then pushes and opens pull requests
on the loopback fake. Downloads the release and its verification environment (``network``) and
verifies a handful of tiny models (``slow``).
"""

from __future__ import annotations

import ast
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod.cli import app
from codemod.fetch import fetch_release
from tests.fake_github import FakeGitHub

pytestmark = [pytest.mark.network, pytest.mark.slow]

TOKEN = "ghp_R3alEng1neT0ken0987654321zyxwVU"
REPO = "acme/transformers"
ONLY = "llama,granite,mistral"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


@pytest.fixture
def clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, FakeGitHub]]:
    """(the user's clone, the bare remote, the fake GitHub): the remote's main is the release."""
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Alice\n\temail = alice@example.com\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    release = fetch_release("4.45.2", tmp_path / "release")
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(release), str(bare))
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(bare), str(checkout))
    with FakeGitHub(REPO, TOKEN, bare) as github:
        yield checkout, bare, github


MARKER = re.compile(r"# Copied from transformers\.models\.(\w+)\.(\w+)\.(\w+)\.prepare_inputs_for_generation")


def defines_method(text: str, class_name: str) -> bool:
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return any(isinstance(n, ast.FunctionDef) and n.name == "prepare_inputs_for_generation" for n in node.body)
    return False


def dangling_markers(bare: Path, ref: str) -> list[str]:
    """Method-level "# Copied from" markers on ``ref`` whose source method no longer exists
    (what the checkout's utils/check_copies.py would reject)."""
    found = subprocess.run(
        ["git", "grep", "-n", "-E", MARKER.pattern.replace("\\w", "[A-Za-z0-9_]"), ref, "--", "src"],
        cwd=bare,
        capture_output=True,
        text=True,
    ).stdout
    dangling = []
    for line in found.splitlines():
        match = MARKER.search(line)
        package, module, class_name = match.groups()
        source = git(bare, "show", f"{ref}:src/transformers/models/{package}/{module}.py")
        if not defines_method(source, class_name):
            dangling.append(line.split(":", 1)[1])  # without the ref: comparable across refs
    return dangling


def test_the_bot_migrates_verifies_and_opens_prs_on_a_real_release(clone) -> None:
    checkout, bare, github = clone
    args = [
        "pr",
        str(checkout),
        "--repo",
        REPO,
        "--remote",
        "origin",
        "--base",
        "main",
        "--api-url",
        github.url,
        "--only",
        ONLY,
    ]
    before = git(checkout, "status", "--porcelain"), git(checkout, "rev-parse", "HEAD")

    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert TOKEN not in first.output
    # one pull request per model (the default grouping), each with its evidence
    pulls = {p["head"]["ref"].rsplit("/", 1)[-1]: p for p in github.pulls.values()}
    broken_on_main = set(dangling_markers(bare, "refs/heads/main"))
    assert sorted(pulls) == ["granite", "llama", "mistral"]
    for model, name in (
        ("granite", "GraniteForCausalLM"),
        ("llama", "LlamaForCausalLM"),
        ("mistral", "MistralForCausalLM"),
    ):
        body = pulls[model]["body"]
        assert pulls[model]["title"].startswith(f"{model}: ")
        assert f"`{name}`" in body and "| identical |" in body and "greedy" in body
        assert f"codemod apply --verify . --only {model}\n" in body

        ref = f"refs/heads/{pulls[model]['head']['ref']}"
        changed = git(bare, "diff", "--name-only", "refs/heads/main", ref).split()
        assert f"src/transformers/models/{model}/modeling_{model}.py" in changed
        # 4.45's mixin only raises: each branch carries the generic implementation its deletions rely on
        mixin = git(bare, "show", f"{ref}:src/transformers/generation/utils.py")
        method = mixin.split("def prepare_inputs_for_generation")[1].split("\n    def ")[0]
        assert "NotImplementedError" not in method
        commits = git(bare, "log", "--reverse", "--format=%s", ref, "--not", "refs/heads/main").splitlines()
        assert commits[0].startswith("generation: ") and commits[1].startswith(f"{model}: ")
        modeling = git(bare, "show", f"{ref}:src/transformers/models/{model}/modeling_{model}.py")
        assert not defines_method(modeling, name)
        # no copy is left pointing at a method the branch removes (4.45.2 ships one broken marker,
        # markuplm's, naming a BertModel method that never existed: not this branch's doing)
        assert set(dangling_markers(bare, ref)) <= broken_on_main
    # Llama's method had copies elsewhere: their markers go with Llama's branch
    llama_ref = f"refs/heads/{pulls['llama']['head']['ref']}"
    assert len(git(bare, "diff", "--name-only", "refs/heads/main", llama_ref).split()) > 2
    assert "Also touched" in pulls["llama"]["body"]
    # the user's clone is untouched: the engine ran in a worktree of origin/main
    assert (git(checkout, "status", "--porcelain"), git(checkout, "rev-parse", "HEAD")) == before

    refs = git(bare, "for-each-ref", "--format=%(refname) %(objectname)")
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    assert len(github.pulls) == 3
    assert git(bare, "for-each-ref", "--format=%(refname) %(objectname)") == refs  # same plan: no push
    bodies = "".join(p["body"] for p in github.pulls.values())
    assert TOKEN not in second.output + git(bare, "log", "--all", "--format=%B") + bodies
