"""``codemod pr``: planning (pure), the GitHub client, and whole runs against a real bare git remote
and a loopback fake of GitHub's REST API (``tests/fake_github.py``).

The migration engine is replaced by :class:`FakeMigrate`, which deletes marked blocks from the
fake model files in the worktree it is given and returns the matching ``Migration``.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from codemod.contracts import Held, HeldCause
from codemod.errors import redact
from codemod.github import GitHubClient, GitHubError, Retry, retry_hint, validation_errors
from codemod.migration import MIXIN_MODEL, ClassOutcome, Migration, ModelOutcome
from codemod.publish import pr
from codemod.publish.pr import PrOptions, PrRuntime, run_pr
from codemod.publish.pr.plan import (
    BRANCH_PREFIX,
    Action,
    BranchPlan,
    BranchState,
    PrError,
    PrReport,
    PullRequest,
    RemoteBranch,
    branch_name,
    decide,
    group_models,
    parse_marker,
    plan_prs,
    screen,
)
from tests.fake_github import FakeGitHub

TOKEN = "ghp_S3CRETt0ken1234567890abcdefXYZ"
REPO = "acme/transformers"
MODELS = "src/transformers/models"
HUMAN = {
    "GIT_AUTHOR_NAME": "Alice",
    "GIT_AUTHOR_EMAIL": "alice@example.com",
    "GIT_COMMITTER_NAME": "Alice",
    "GIT_COMMITTER_EMAIL": "alice@example.com",
}


# ---------------------------------------------------------------------------------------------
# Fake model files and a fake migration engine.
# ---------------------------------------------------------------------------------------------


def model_source(cls: str) -> str:
    """A model file with two removable blocks: plan v1 removes ``codemod``, plan v2 removes ``codemod-v2`` too."""
    return (
        f"class {cls}:\n"
        "    # >>> codemod\n"
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        '        return {"input_ids": input_ids}\n'
        "    # <<< codemod\n"
        "\n"
        "    # >>> codemod-v2\n"
        "    def _legacy(self):\n"
        "        return None\n"
        "    # <<< codemod-v2\n"
        "\n"
        "    def forward(self, input_ids):\n"
        "        return input_ids\n"
    )


@dataclasses.dataclass(frozen=True)
class Spec:
    files: tuple[str, ...]
    classes: tuple[tuple[str, str], ...]  # (file, class name)


SPECS: dict[str, Spec] = {
    "llama": Spec(
        (f"{MODELS}/llama/modeling_llama.py",), ((f"{MODELS}/llama/modeling_llama.py", "LlamaForCausalLM"),)
    ),
    "gpt2": Spec((f"{MODELS}/gpt2/modeling_gpt2.py",), ((f"{MODELS}/gpt2/modeling_gpt2.py", "GPT2LMHeadModel"),)),
    "mistral": Spec(
        (f"{MODELS}/mistral/modeling_mistral.py",), ((f"{MODELS}/mistral/modeling_mistral.py", "MistralForCausalLM"),)
    ),
    # a modular parent whose change regenerates its child's modeling file: the files overlap
    "gemma": Spec(
        (f"{MODELS}/gemma/modeling_gemma.py", f"{MODELS}/gemma2/modeling_gemma2.py"),
        ((f"{MODELS}/gemma/modeling_gemma.py", "GemmaForCausalLM"),),
    ),
    "gemma2": Spec(
        (f"{MODELS}/gemma2/modeling_gemma2.py", f"{MODELS}/gemma2/modular_gemma2.py"),
        ((f"{MODELS}/gemma2/modular_gemma2.py", "Gemma2ForCausalLM"),),
    ),
}
SEED_FILES = {
    "README.md": "fake transformers\n",
    f"{MODELS}/__init__.py": "",
    f"{MODELS}/llama/modeling_llama.py": model_source("LlamaForCausalLM"),
    f"{MODELS}/gpt2/modeling_gpt2.py": model_source("GPT2LMHeadModel"),
    f"{MODELS}/mistral/modeling_mistral.py": model_source("MistralForCausalLM"),
    f"{MODELS}/gemma/modeling_gemma.py": model_source("GemmaForCausalLM"),
    f"{MODELS}/gemma2/modeling_gemma2.py": model_source("Gemma2ForCausalLM"),
    f"{MODELS}/gemma2/modular_gemma2.py": model_source("Gemma2ForCausalLM"),
}


def remove_block(text: str, tag: str) -> tuple[str, int]:
    out, removed, inside = [], 0, False
    for line in text.splitlines(keepends=True):
        if line.strip() == f"# >>> {tag}":
            inside = True
        if inside:
            removed += 1
        else:
            out.append(line)
        if line.strip() == f"# <<< {tag}":
            inside = False
    return "".join(out), removed


@dataclasses.dataclass
class FakeMigrate:
    """Stands in for ``codemod.migrate.run_migration``: edits the worktree, returns what it kept."""

    version: int = 1
    verdicts: dict[str, str] = dataclasses.field(default_factory=dict)
    scenarios: tuple[str, ...] = ("greedy", "beam-search", "static-cache")
    calls: list[tuple[Path, list[str], list[str]]] = dataclasses.field(default_factory=list)

    def __call__(self, root: Path, only: list[str], skip: list[str]) -> Migration:
        self.calls.append((root, list(only), list(skip)))
        assert (root / "README.md").exists(), "the engine runs in a checkout"
        names = [m for m in sorted(SPECS) if (not only or m in only) and m not in skip]
        tags = ["codemod"] + (["codemod-v2"] if self.version >= 2 else [])
        removed: dict[str, int] = {}
        for name in names:
            for file in SPECS[name].files:
                path = root / file
                text = path.read_text()
                for tag in tags:
                    text, count = remove_block(text, tag)
                    removed[file] = removed.get(file, 0) + count
                path.write_text(text)
        models = tuple(
            ModelOutcome(
                model=name,
                files=SPECS[name].files,
                classes=tuple(
                    ClassOutcome(
                        file,
                        cls,
                        "generic",
                        "delete",
                        removed.get(file, 0),
                        self.verdicts.get(name, "identical"),
                        self.scenarios,
                    )
                    for file, cls in SPECS[name].classes
                ),
            )
            for name in names
        )
        return Migration(
            models=models, reverted=(Held("bert", HeldCause.NOT_VERIFIED, "verification crashed"),) if not only else ()
        )


class Boom(RuntimeError):
    pass


def exploding_migrate(root: Path, only: list[str], skip: list[str]) -> Migration:
    (root / "README.md").write_text("half-applied\n")
    raise Boom("engine failed")


# ---------------------------------------------------------------------------------------------
# A real bare remote, a user's clone, and the fake GitHub.
# ---------------------------------------------------------------------------------------------


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})}, check=False
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
    return done.stdout


@dataclasses.dataclass
class World:
    tmp: Path
    bare: Path
    checkout: Path
    github: FakeGitHub
    scratch: Path
    output: list[str] = dataclasses.field(default_factory=list)

    def run(self, migrate: Any = None, **kwargs: Any) -> PrReport:
        kwargs.setdefault("token", TOKEN)
        kwargs.setdefault("api_url", self.github.url)
        kwargs.setdefault("retry", Retry(sleep=lambda seconds: None))
        wiring = {f.name for f in dataclasses.fields(PrRuntime)}
        options = PrOptions(REPO, "origin", "main", **{k: v for k, v in kwargs.items() if k not in wiring})
        runtime = PrRuntime(
            migrate=migrate or FakeMigrate(),
            echo=self.output.append,
            scratch=self.scratch,
            **{k: v for k, v in kwargs.items() if k in wiring},
        )
        return run_pr(self.checkout, options, runtime)

    def remote_refs(self) -> dict[str, str]:
        lines = git(self.bare, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
        return dict(line.split(" ") for line in lines)

    def remote_sha(self, branch: str) -> str | None:
        return self.remote_refs().get(f"refs/heads/{branch}")

    def branch_log(self, branch: str) -> list[tuple[str, str, str]]:
        """(subject, author, committer) of each commit on the branch since main, oldest first."""
        out = git(
            self.bare,
            "log",
            "--reverse",
            "--format=%s%x1f%an <%ae>%x1f%cn <%ce>",
            f"refs/heads/{branch}",
            "--not",
            "refs/heads/main",
        )
        return [tuple(line.split("\x1f")) for line in out.splitlines()]  # type: ignore[misc]

    def checkout_state(self) -> tuple[str, str, str, str]:
        return (
            git(self.checkout, "rev-parse", "HEAD"),
            git(self.checkout, "symbolic-ref", "HEAD"),
            git(self.checkout, "status", "--porcelain", "--untracked-files=all"),
            (self.checkout / "README.md").read_text() + (self.checkout / "notes.txt").read_text(),
        )

    def worktrees(self) -> list[str]:
        return [
            line
            for line in git(self.checkout, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")
        ]


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """A bare remote with ``main``, the user's clone (with local edits), and a fake GitHub on loopback."""
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Alice\n\temail = alice@example.com\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")

    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "--bare", "-b", "main", str(bare))
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(bare), str(checkout))
    for name, text in SEED_FILES.items():
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text(text)
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "initial", env=HUMAN)
    git(checkout, "push", "-q", "origin", "main")
    # the user is mid-work: an uncommitted edit and an untracked file must survive every run
    git(checkout, "switch", "-q", "-c", "my-feature")
    (checkout / "README.md").write_text("fake transformers, edited locally\n")
    (checkout / "notes.txt").write_text("untracked notes\n")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with FakeGitHub(REPO, TOKEN, bare) as github:
        yield World(tmp_path, bare, checkout, github, scratch)


def human_commit_on(world: World, branch: str) -> str:
    """Alice pushes a commit onto the bot's branch (as a reviewer fixing something would)."""
    other = world.tmp / "alice"
    git(world.tmp, "clone", "-q", "-b", branch, str(world.bare), str(other))
    (other / "README.md").write_text("a fix by a person\n")
    git(other, "commit", "-q", "-am", "fix by hand", env=HUMAN)
    git(other, "push", "-q", "origin", branch)
    return git(other, "rev-parse", "HEAD").strip()


def everything_printed(world: World, capfd: pytest.CaptureFixture[str], *texts: str) -> str:
    """All output, error text, commit messages on every ref and PR bodies: where a token must never be."""
    out, err = capfd.readouterr()
    logs = git(world.bare, "log", "--all", "--format=%H %an %ae %s%n%b")
    bodies = "\n".join(f"{p['title']}\n{p['body']}" for p in world.github.pulls.values())
    paths = "\n".join(r.path + str(r.query) for r in world.github.requests)
    return "\n".join([out, err, logs, bodies, paths, *world.output, *texts])


# ---------------------------------------------------------------------------------------------
# Pure planning.
# ---------------------------------------------------------------------------------------------


def outcome(model: str, files: Sequence[str], verdict: str = "identical", action: str = "delete") -> ModelOutcome:
    return ModelOutcome(
        model,
        tuple(files),
        (ClassOutcome(files[0], f"{model.title()}Model", "generic", action, 5, verdict, ("greedy",)),),
    )


def test_group_by_model_family_and_all() -> None:
    models = [
        outcome("llama", [f"{MODELS}/llama/modeling_llama.py"]),
        outcome("gemma", [f"{MODELS}/gemma/modeling_gemma.py", f"{MODELS}/gemma2/modeling_gemma2.py"]),
        outcome("gemma2", [f"{MODELS}/gemma2/modular_gemma2.py", f"{MODELS}/gemma2/modeling_gemma2.py"]),
        outcome("llama_fast", [f"{MODELS}/llama/modeling_llama_fast.py"]),  # same directory as llama
        outcome("gpt2", [f"{MODELS}/gpt2/modeling_gpt2.py"]),
    ]
    by_model = group_models(models, "model")
    # gemma's change reaches gemma2's generated file: a file holds one content, so they land together
    assert [(g.name, [m.model for m in g.models]) for g in by_model] == [
        ("gemma", ["gemma", "gemma2"]),
        ("gpt2", ["gpt2"]),
        ("llama", ["llama"]),
        ("llama_fast", ["llama_fast"]),
    ]
    # a copy group lands as one, named after the model the copies follow
    copies = [
        dataclasses.replace(
            outcome(m, [f"{MODELS}/{m}/modeling_{m}.py" for m in ("dbrx", "llama", "olmo")]),
            lead="" if m == "llama" else "llama",
        )
        for m in ("dbrx", "llama", "olmo")
    ]
    assert [(g.name, [m.model for m in g.models]) for g in group_models(copies, "model")] == [
        ("llama", ["dbrx", "llama", "olmo"]),
    ]
    by_family = group_models(models, "family")
    assert [(g.name, [m.model for m in g.models]) for g in by_family] == [
        ("gemma", ["gemma", "gemma2"]),
        ("gpt2", ["gpt2"]),
        ("llama", ["llama", "llama_fast"]),
    ]
    (everything,) = group_models(models, "all")
    assert everything.name == "all" and len(everything.models) == 5
    # input order does not matter
    assert group_models(list(reversed(models)), "family") == by_family
    with pytest.raises(PrError, match="--group-by"):
        group_models(models, "size")


def test_branch_names_are_deterministic_and_ref_safe() -> None:
    assert branch_name("llama") == "codemod/prepare-inputs/llama"
    assert branch_name("all") == "codemod/prepare-inputs/all"
    assert branch_name("Qwen2.5 VL..x") == "codemod/prepare-inputs/qwen2.5-vl.x"
    assert branch_name("a.lock") == "codemod/prepare-inputs/a"
    for name in ("llama", "Qwen2.5 VL..x", "x~y^z:w?*[", "/weird/"):
        assert branch_name(name) == branch_name(name)
        subprocess.run(["git", "check-ref-format", f"refs/heads/{branch_name(name)}"], check=True)


def test_plan_hash_body_and_commit_message() -> None:
    llama = outcome("llama", [f"{MODELS}/llama/modeling_llama.py"])
    migration = Migration((llama,))
    plan = plan_prs(migration, "model", "main")
    (branch,) = plan.branches
    assert branch.plan_hash == migration.plan_hash
    assert parse_marker(branch.body) == branch.plan_hash
    assert f"<!-- transformers-codemod plan={branch.plan_hash} -->" in branch.body
    assert "| `LlamaModel` |" in branch.body and "| generic | delete | 5 | identical | greedy |" in branch.body
    assert "pip install transformers-codemod" in branch.body
    assert "codemod apply --verify . --only llama" in branch.body and "codemod verify . --only llama" in branch.body
    (commit,) = branch.commits
    assert commit.subject == "llama: remove prepare_inputs_for_generation overrides now covered by GenerationMixin"
    assert "LlamaModel" in commit.body and "category: generic; action: delete; lines removed: 5" in commit.body
    assert "verdict: identical; scenarios: greedy" in commit.body
    # stable: the same plan gives the same text; scenarios and verdict texts are not part of the hash
    assert plan_prs(migration, "model", "main") == plan
    other = dataclasses.replace(
        llama, classes=(dataclasses.replace(llama.classes[0], scenarios=("greedy", "sample")),)
    )
    assert plan_prs(Migration((other,)), "model", "main").branches[0].plan_hash == branch.plan_hash
    changed = dataclasses.replace(llama, classes=(dataclasses.replace(llama.classes[0], lines_removed=9),))
    assert plan_prs(Migration((changed,)), "model", "main").branches[0].plan_hash != branch.plan_hash


def test_only_identical_models_are_published_and_shared_files_follow() -> None:
    models = (
        outcome("llama", [f"{MODELS}/llama/modeling_llama.py"]),
        outcome(
            "gemma", [f"{MODELS}/gemma/modeling_gemma.py", f"{MODELS}/gemma2/modeling_gemma2.py"], verdict="differs"
        ),
        outcome("gemma2", [f"{MODELS}/gemma2/modeling_gemma2.py"]),
        outcome("gpt2", [f"{MODELS}/gpt2/modeling_gpt2.py"], verdict="unverified"),
        outcome("opt", [f"{MODELS}/opt/modeling_opt.py"], verdict="crashed", action="keep"),  # not a change
    )
    kept, withheld = screen(models)
    assert [m.model for m in kept] == ["llama", "opt"]
    reasons = {h.subject: h.detail for h in withheld}
    assert {h.subject: h.cause for h in withheld} == {
        "gemma": HeldCause.NOT_IDENTICAL,
        "gpt2": HeldCause.NOT_IDENTICAL,
        "gemma2": HeldCause.SHARES_A_FILE,
    }
    assert set(reasons) == {"gemma", "gemma2", "gpt2"}
    assert "differs" in reasons["gemma"] and "unverified" in reasons["gpt2"]
    assert "shares" in reasons["gemma2"] and "gemma" in reasons["gemma2"]


def test_the_hoisted_mixin_goes_first_into_every_branch_and_never_alone() -> None:
    mixin = ModelOutcome(MIXIN_MODEL, ("src/transformers/generation/utils.py",), ())
    llama = outcome("llama", [f"{MODELS}/llama/modeling_llama.py"])
    gpt2 = outcome("gpt2", [f"{MODELS}/gpt2/modeling_gpt2.py"])
    plan = plan_prs(Migration((mixin, gpt2, llama)), "model", "main")
    assert [b.group for b in plan.branches] == ["gpt2", "llama"]
    for branch, model in zip(plan.branches, ("gpt2", "llama"), strict=False):
        assert [c.model for c in branch.commits] == [MIXIN_MODEL, model]
        assert branch.title.startswith(f"{model}: ")
        assert "only raises in this release" in branch.body and f"--only {model}\n" in branch.body
        assert "GenerationMixin" in branch.commits[0].subject
    assert not plan_prs(Migration((mixin,)), "model", "main").branches
    # a copy that loses its marker is listed under the model whose removal causes it
    with_copy = dataclasses.replace(llama, files=(*llama.files, f"{MODELS}/olmo/modeling_olmo.py"))
    body = plan_prs(Migration((with_copy,)), "model", "main").branches[0].body
    assert "Also touched" in body and "olmo/modeling_olmo.py" in body


def _branch(hash_: str = "aaaa") -> BranchPlan:
    return dataclasses.replace(
        plan_prs(Migration((outcome("llama", [f"{MODELS}/llama/m.py"]),)), "model", "main").branches[0],
        plan_hash=hash_,
    )


def _pull(number: int, hash_: str | None, state: str = "open", merged: bool = False) -> PullRequest:
    body = f"text\n<!-- transformers-codemod plan={hash_} -->\n" if hash_ else "edited by hand"
    return PullRequest(number, state, merged, body, BRANCH_PREFIX + "llama", "f" * 40, f"https://x/{number}")


@pytest.mark.parametrize(
    ("remote", "pulls", "open_count", "max_open", "action"),
    [
        (None, (), 0, None, Action.CREATE),
        (None, (), 3, 3, Action.SKIP_MAX_OPEN),
        (None, (), 2, 3, Action.CREATE),
        (RemoteBranch("s"), (_pull(1, "aaaa"),), 9, 1, Action.UNCHANGED),
        (RemoteBranch("s"), (_pull(1, "bbbb"),), 9, 1, Action.UPDATE),  # updating is not opening
        (RemoteBranch("s"), (_pull(1, None),), 0, None, Action.SKIP_FOREIGN),
        (RemoteBranch("s", ("abc by Alice",)), (_pull(1, "bbbb"),), 0, None, Action.SKIP_FOREIGN),
        (RemoteBranch("s"), (_pull(1, "aaaa", "closed"),), 0, None, Action.SKIP_CLOSED),
        (RemoteBranch("s"), (_pull(1, "bbbb", "closed"),), 0, None, Action.CREATE),
        (None, (_pull(1, "aaaa", "closed", merged=True),), 0, None, Action.SKIP_MERGED),
        (None, (_pull(1, "aaaa", "closed"), _pull(2, "bbbb", "closed")), 0, None, Action.CREATE),  # the latest counts
    ],
)
def test_decide(
    remote: RemoteBranch | None, pulls: tuple[PullRequest, ...], open_count: int, max_open: int | None, action: Action
) -> None:
    decision = decide(_branch("aaaa"), BranchState(remote, pulls), open_count=open_count, max_open=max_open)
    assert decision.action == action
    if action in (Action.CREATE, Action.UPDATE):
        assert decision.lease == (remote.sha if remote else "")


# ---------------------------------------------------------------------------------------------
# The GitHub client on its own.
# ---------------------------------------------------------------------------------------------


def test_client_headers_pagination_and_no_token_in_urls(world: World) -> None:
    github = world.github
    github.max_per_page = 2
    for i in range(5):
        github.add_pull(head=f"feature-{i}")
    client = GitHubClient(REPO, TOKEN, github.url)
    assert len(client.open_pulls()) == 5
    gets = [r for r in github.requests if r.method == "GET"]
    assert len(gets) == 3 and [r.query.get("page", "1") for r in gets] == ["1", "2", "3"]
    for request in gets:
        assert request.headers["accept"] == "application/vnd.github+json"
        assert request.headers["x-github-api-version"] == "2022-11-28"
        assert request.headers["authorization-scheme"] == "Bearer"
        assert TOKEN not in request.path + str(request.query)
    assert TOKEN not in repr(client)


def test_client_refuses_to_follow_links_to_another_host(world: World) -> None:
    client = GitHubClient(REPO, TOKEN, world.github.url)
    with pytest.raises(GitHubError, match="another host"):
        client._next_link('<https://evil.example/repos/x?page=2>; rel="next"', "/repos/x")
    with pytest.raises(GitHubError, match="credentials"):
        GitHubClient(REPO, TOKEN, f"https://user:{TOKEN}@example.com")
    with pytest.raises(GitHubError, match="OWNER/NAME"):
        GitHubClient("not a repo", TOKEN)


def test_error_helpers() -> None:
    assert redact(f"x {TOKEN} y https://bot:pw@host/r", [TOKEN]) == "x *** y https://***@host/r"
    assert retry_hint({"Retry-After": "60"}) == "retry after 60 s"
    import datetime

    now = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    hint = retry_hint({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(now.timestamp()) + 90)}, now)
    assert hint == "retry after 2024-01-01 00:01:30 UTC (in 90 s)"
    data = {
        "message": "Validation Failed",
        "errors": [
            {"resource": "PullRequest", "field": "head", "code": "invalid"},
            {"message": "No commits between main and x"},
        ],
    }
    assert validation_errors(data) == "PullRequest.head invalid; No commits between main and x"


# ---------------------------------------------------------------------------------------------
# Whole runs.
# ---------------------------------------------------------------------------------------------


def test_first_run_pushes_one_branch_and_opens_one_pr(world: World) -> None:
    before = world.checkout_state()
    report = world.run(group_by="all", only=["llama", "gpt2", "mistral"], labels=["bot", "generation"])
    (opened,) = report.outcomes
    assert opened.action == Action.CREATE and opened.pushed and opened.pr_number == 1
    branch = "codemod/prepare-inputs/all"
    assert world.branch_log(branch) == [
        (
            f"{m}: remove prepare_inputs_for_generation overrides now covered by GenerationMixin",
            "transformers-codemod <transformers-codemod@users.noreply.github.com>",
            "transformers-codemod <transformers-codemod@users.noreply.github.com>",
        )
        for m in ("gpt2", "llama", "mistral")
    ]
    message = git(world.bare, "log", "-1", "--format=%B", f"refs/heads/{branch}~2")
    assert "GPT2LMHeadModel (src/transformers/models/gpt2/modeling_gpt2.py)" in message
    assert "category: generic; action: delete; lines removed: 4" in message
    assert "verdict: identical; scenarios: greedy, beam-search, static-cache" in message
    # the branch holds exactly the migration's edits
    changed = git(world.bare, "diff", "--name-only", "refs/heads/main", f"refs/heads/{branch}").split()
    assert changed == [SPECS[m].files[0] for m in ("gpt2", "llama", "mistral")]
    shown = git(world.bare, "show", f"refs/heads/{branch}:{MODELS}/llama/modeling_llama.py")
    assert "prepare_inputs_for_generation" not in shown and "_legacy" in shown

    (pull,) = world.github.pulls.values()
    assert pull["state"] == "open" and pull["head"]["ref"] == branch and pull["base"]["ref"] == "main"
    assert pull["maintainer_can_modify"] is True
    body = pull["body"]
    for model, cls in (("llama", "LlamaForCausalLM"), ("gpt2", "GPT2LMHeadModel"), ("mistral", "MistralForCausalLM")):
        assert f"### `{model}`" in body and f"| `{cls}` |" in body
    assert "| Class | File | Category | Action | Lines removed | Verification | Scenarios |" in body
    assert "| generic | delete | 4 | identical | greedy, beam-search, static-cache |" in body
    assert "codemod apply --verify . --only gpt2,llama,mistral" in body
    hash_ = parse_marker(body)
    assert (
        hash_ is not None
        and len(hash_) == 16
        and body.rstrip().endswith(f"<!-- transformers-codemod plan={hash_} -->")
    )
    assert world.github.labels(1) == ["transformers-codemod", "bot", "generation"]
    posted = [r for r in world.github.writes() if r.path.endswith("/pulls")]
    assert posted[0].body["head"] == branch and posted[0].body["base"] == "main"
    assert world.checkout_state() == before
    assert len(world.worktrees()) == 1 and not any(world.scratch.iterdir())


def test_second_run_with_the_same_plan_does_nothing(world: World) -> None:
    world.run(only=["llama"])
    refs, writes = world.remote_refs(), len(world.github.writes())
    report = world.run(only=["llama"])
    assert [o.action for o in report.outcomes] == [Action.UNCHANGED]
    assert world.remote_refs() == refs
    assert len(world.github.writes()) == writes
    assert len(world.github.pulls) == 1


def test_changed_plan_updates_the_same_pr_in_place(world: World) -> None:
    world.run(only=["llama"])
    branch = "codemod/prepare-inputs/llama"
    old_sha, old_body = world.remote_sha(branch), world.github.pulls[1]["body"]
    writes_before = len(world.github.writes())
    report = world.run(migrate=FakeMigrate(version=2), only=["llama"])
    (updated,) = report.outcomes
    assert updated.action == Action.UPDATE and updated.pr_number == 1 and updated.pushed
    assert list(world.github.pulls) == [1] and world.github.pulls[1]["state"] == "open"
    new_sha = world.remote_sha(branch)
    assert new_sha != old_sha and len(world.branch_log(branch)) == 1  # replaced (force-pushed), not stacked
    assert world.github.pulls[1]["body"] != old_body and parse_marker(world.github.pulls[1]["body"]) != parse_marker(
        old_body
    )
    new_writes = world.github.writes()[writes_before:]
    assert [(r.method, r.path.rsplit("/", 2)[-2:]) for r in new_writes] == [
        ("PATCH", ["pulls", "1"]),
        ("POST", ["1", "labels"]),
    ]
    assert all("state" not in (r.body or {}) for r in world.github.writes())  # never closed or reopened
    assert "lines removed: 8" in git(world.bare, "log", "-1", "--format=%B", f"refs/heads/{branch}")


def test_a_human_commit_on_the_branch_makes_the_bot_back_off(world: World) -> None:
    world.run(only=["llama"])
    branch = "codemod/prepare-inputs/llama"
    human_sha = human_commit_on(world, branch)
    writes = len(world.github.writes())
    report = world.run(migrate=FakeMigrate(version=2), only=["llama"])
    (skipped,) = report.outcomes
    assert skipped.action == Action.SKIP_FOREIGN and "Alice <alice@example.com>" in skipped.reason
    assert any("Alice" in line and branch in line for line in world.output)
    assert world.remote_sha(branch) == human_sha
    assert len(world.github.writes()) == writes


def test_401_is_a_clear_error_and_the_token_is_nowhere(world: World, capfd: pytest.CaptureFixture[str]) -> None:
    world.github.token = "ghp_the_token_github_expects"
    refs = world.remote_refs()
    with pytest.raises(PrError) as caught:
        world.run(only=["llama"])
    text = str(caught.value)
    assert "401" in text and "GITHUB_TOKEN" in text and "\n" not in text
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert TOKEN not in repr(caught.value.__context__)
    assert world.remote_refs() == refs  # the token is checked before anything is pushed
    assert TOKEN not in everything_printed(world, capfd, text, repr(caught.value))
    assert len(world.worktrees()) == 1


def test_token_revoked_after_push_says_what_was_pushed_and_the_next_run_reuses_it(
    world: World, capfd: pytest.CaptureFixture[str]
) -> None:
    world.github.fail("POST", r"/pulls$", 401, body={"message": f"Bad credentials for {TOKEN}"})
    with pytest.raises(PrError) as caught:
        world.run(only=["llama"])
    text = str(caught.value)
    branch = "codemod/prepare-inputs/llama"
    assert "401" in text and f"branch {branch} was pushed to origin" in text
    assert "could not be opened; the next run will reuse the branch and open it" in text
    assert TOKEN not in everything_printed(world, capfd, text)
    sha = world.remote_sha(branch)
    assert sha is not None and not world.github.pulls
    report = world.run(only=["llama"])
    assert report.outcomes[0].action == Action.CREATE and not report.outcomes[0].pushed
    assert world.remote_sha(branch) == sha and world.github.pulls[1]["head"]["sha"] == sha


def test_rate_limit_says_when_to_retry(world: World) -> None:
    world.github.fail(
        "GET",
        r"/pulls$",
        403,
        body={
            "message": "API rate limit exceeded for installation ID 42.",
            "documentation_url": "https://docs.github.com/rest",
        },
        headers={"X-RateLimit-Limit": "1000", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "4102444800"},
    )
    refs = world.remote_refs()
    with pytest.raises(PrError, match=r"rate limit exceeded .*retry after 2100-01-01 00:00:00 UTC") as caught:
        world.run(only=["llama"])
    assert "\n" not in str(caught.value)
    assert world.remote_refs() == refs and not world.github.writes()

    world.github.fail(
        "GET",
        r"/pulls$",
        403,
        body={"message": "You have exceeded a secondary rate limit."},
        headers={"Retry-After": "60"},
        times=4,  # one more than the retries: a single one is waited out (tests/test_reliability.py)
    )
    with pytest.raises(PrError, match="retry after 60 s"):
        world.run(only=["llama"])


def test_422_reports_githubs_validation_errors(world: World) -> None:
    world.github.fail(
        "POST",
        r"/pulls$",
        422,
        body={
            "message": "Validation Failed",
            "errors": [
                {
                    "resource": "PullRequest",
                    "code": "custom",
                    "message": "No commits between main and codemod/prepare-inputs/llama",
                }
            ],
        },
    )
    with pytest.raises(PrError) as caught:
        world.run(only=["llama"])
    text = str(caught.value)
    assert "422 Validation Failed" in text and "No commits between main and codemod/prepare-inputs/llama" in text
    assert "codemod/prepare-inputs/llama was pushed" in text


def test_closed_pr_skips_its_models_until_the_plan_changes(world: World) -> None:
    world.run(only=["llama"])
    world.github.close(1)
    writes = len(world.github.writes())
    report = world.run(only=["llama"])
    assert report.outcomes[0].action == Action.SKIP_CLOSED and "#1" in report.outcomes[0].reason
    assert len(world.github.writes()) == writes
    report = world.run(migrate=FakeMigrate(version=2), only=["llama"])
    assert report.outcomes[0].action == Action.CREATE and report.outcomes[0].pr_number == 2
    assert world.github.pulls[1]["state"] == "closed" and world.github.pulls[2]["state"] == "open"


def test_max_open_counts_the_bots_open_prs(world: World) -> None:
    world.github.add_pull(head="codemod/prepare-inputs/opt", body="<!-- transformers-codemod plan=0123 -->")
    world.github.add_pull(head="someone-elses-feature")  # not the bot's: does not count
    report = world.run(group_by="model", only=["llama", "gpt2", "mistral"], max_open=2)
    actions = {o.branch.rsplit("/", 1)[1]: o.action for o in report.outcomes}
    assert actions == {"gpt2": Action.CREATE, "llama": Action.SKIP_MAX_OPEN, "mistral": Action.SKIP_MAX_OPEN}
    assert world.remote_sha("codemod/prepare-inputs/llama") is None
    assert any("--max-open 2" in line for line in world.output)


def test_dry_run_touches_nothing(world: World, capfd: pytest.CaptureFixture[str]) -> None:
    before, refs = world.checkout_state(), world.remote_refs()
    report = world.run(group_by="family", dry_run=True, token=None)  # no token needed to look
    assert world.remote_refs() == refs
    assert not world.github.writes() and not world.github.pulls
    assert world.checkout_state() == before
    assert len(world.worktrees()) == 1 and not any(world.scratch.iterdir())
    assert {o.action for o in report.outcomes} == {Action.CREATE}
    printed = "\n".join(world.output)
    for family in ("gemma", "gpt2", "llama", "mistral"):
        assert f"codemod/prepare-inputs/{family}" in printed
    assert "-- commit 2/2: gemma2: remove prepare_inputs_for_generation overrides" in printed
    assert (
        "-- open pull request: gemma: remove prepare_inputs_for_generation overrides now covered by GenerationMixin (gemma, gemma2)"
        in printed
    )
    assert "<!-- transformers-codemod plan=" in printed
    assert printed.count("would open") == 4
    assert "reverted bert: verification crashed" in printed


def test_worktree_is_removed_and_checkout_untouched_when_the_engine_fails(world: World) -> None:
    before, refs = world.checkout_state(), world.remote_refs()
    with pytest.raises(Boom):
        world.run(migrate=exploding_migrate)
    assert world.checkout_state() == before and world.remote_refs() == refs
    assert len(world.worktrees()) == 1 and not any(world.scratch.iterdir())
    assert not world.github.writes()


def test_engine_runs_in_a_worktree_of_the_remote_base_not_the_checkout(world: World) -> None:
    migrate = FakeMigrate()
    world.run(migrate=migrate, only=["llama"], skip=["gpt2"])
    ((root, only, skip),) = migrate.calls
    assert root.resolve() != world.checkout.resolve() and world.scratch in root.parents
    assert (only, skip) == (["llama"], ["gpt2"])


def test_group_by_family_keeps_a_modular_parent_and_its_child_together(world: World) -> None:
    report = world.run(group_by="family")
    by_branch = {o.branch: o.models for o in report.outcomes}
    assert by_branch == {
        "codemod/prepare-inputs/gemma": ("gemma", "gemma2"),
        "codemod/prepare-inputs/gpt2": ("gpt2",),
        "codemod/prepare-inputs/llama": ("llama",),
        "codemod/prepare-inputs/mistral": ("mistral",),
    }
    log = world.branch_log("codemod/prepare-inputs/gemma")
    assert [subject.split(":")[0] for subject, _, _ in log] == ["gemma", "gemma2"]
    files = git(
        world.bare, "diff", "--name-only", "refs/heads/main", "refs/heads/codemod/prepare-inputs/gemma"
    ).split()
    assert files == [
        f"{MODELS}/gemma/modeling_gemma.py",
        f"{MODELS}/gemma2/modeling_gemma2.py",
        f"{MODELS}/gemma2/modular_gemma2.py",
    ]
    assert "reverted bert: verification crashed" in world.output


def test_models_not_verified_identical_stay_out(world: World) -> None:
    report = world.run(group_by="all", only=["llama", "gpt2"], migrate=FakeMigrate(verdicts={"gpt2": "differs"}))
    assert report.outcomes[0].models == ("llama",)
    assert (
        Held("gpt2", HeldCause.NOT_IDENTICAL, "GPT2LMHeadModel was not verified identical: differs") in report.withheld
    )
    files = git(world.bare, "diff", "--name-only", "refs/heads/main", "refs/heads/codemod/prepare-inputs/all").split()
    assert files == [f"{MODELS}/llama/modeling_llama.py"]
    assert "gpt2" not in world.github.pulls[1]["body"]


def test_missing_token_is_a_clear_error(world: World) -> None:
    with pytest.raises(PrError, match="GITHUB_TOKEN is not set"):
        world.run(token=None)


def test_end_to_end_the_way_ci_runs_it(
    world: World, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """``codemod pr . --repo … --remote origin --base main --only llama,gpt2,mistral --api-url …`` twice."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.chdir(world.checkout)
    options = PrOptions(
        repo=REPO,
        remote="origin",
        base="main",
        api_url=world.github.url,
        group_by="family",
        max_open=5,
        only=["llama", "gpt2", "mistral"],
        skip=[],
        dry_run=False,
        labels=["ci"],
    )
    runtime = PrRuntime(migrate=FakeMigrate(), scratch=world.scratch)
    first = run_pr(Path("."), options, runtime)
    assert sorted(o.pr_number for o in first.outcomes) == [1, 2, 3]
    assert {o.action for o in first.outcomes} == {Action.CREATE}
    for number in (1, 2, 3):
        assert world.github.labels(number) == ["transformers-codemod", "ci"]
    out, _ = capfd.readouterr()
    assert out.count("opened #") == 3 and TOKEN not in out
    second = run_pr(Path("."), options, runtime)
    assert {o.action for o in second.outcomes} == {Action.UNCHANGED}
    out, err = capfd.readouterr()
    assert TOKEN not in out + err
    assert len(world.worktrees()) == 1


def test_the_cli_runs_the_bot_as_ci_would(world, monkeypatch) -> None:
    """`codemod pr <clone> --repo … --remote origin --base main --api-url …` through typer's CliRunner."""
    from typer.testing import CliRunner

    from codemod.cli import app

    monkeypatch.setattr(pr, "_default_migrate", FakeMigrate())
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    args = [
        "pr",
        str(world.checkout),
        "--repo",
        REPO,
        "--remote",
        "origin",
        "--base",
        "main",
        "--api-url",
        world.github.url,
        "--only",
        "llama,gpt2,mistral",
    ]
    runner = CliRunner()
    dry = runner.invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert not world.github.pulls
    real = runner.invoke(app, args)
    assert real.exit_code == 0, real.output
    assert len(world.github.pulls) == 3
    world.github.token = "another token"
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "401" in refused.output
    assert TOKEN not in refused.output
