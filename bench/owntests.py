"""The checkout's own generation tests on every model a migration changed: pristine clone against migrated tree.

    .venv/bin/python bench/owntests.py --tests CLONE --migrated REPO --python ENV_PY
        [--only bert,ctrl] [--keyword EXPR] [--jobs 1] [--json out.json]

``CLONE`` is a git clone of transformers at the release the migration started from (it has ``tests/``; a PyPI
sdist does not). ``REPO`` is the migrated tree: a git repository whose ``HEAD`` is that release and whose working
tree holds ``codemod apply``'s result (``make run`` leaves one in the user cache). ``ENV_PY`` is an interpreter
with torch, pytest and the release's test dependencies (``codemod verify`` makes one per release).

The migrated side is a worktree of ``CLONE`` at its ``HEAD`` with the files ``REPO`` changed (``git diff HEAD``)
copied in: the same tests, the migrated ``src/``. Each changed model's PyTorch modeling test modules run on both
sides with ``codemod.verify.owntests`` (offline, one pytest per model and side); a regression is a test that
passed before and does not after, or was skipped before and fails after (a test may decide by the migrated code
whether it applies: upstream's embeddings tests read ``prepare_inputs_for_generation``'s signature). This is what
``codemod verify --own-tests`` does for a clone, over a whole migration; it prints counts and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from codemod import git  # noqa: E402
from codemod.checkout import resolve  # noqa: E402
from codemod.sources import model_name  # noqa: E402
from codemod.verify.owntests import KEYWORD, verify_own_tests  # noqa: E402


def changed_models(migrated: Path) -> tuple[list[str], list[str]]:
    """(the files under src/ the migration changed, the models they belong to, in order: the scan's names,
    ``codemod.sources.model_name``, a deprecated model's own)."""
    listed = git.output(migrated, "diff", "HEAD", "--name-only")
    if listed is None:
        raise SystemExit(f"{migrated}: not a git repository with a HEAD to compare with")
    files = [f for f in listed.splitlines() if f.startswith("src/")]
    checkout = resolve(migrated, with_git=False)
    models = (model_name(checkout, migrated / f) for f in files if "/models/" in f)
    return files, list(dict.fromkeys(m for m in models if m is not None))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=Path, required=True, help="a git clone of transformers at the release")
    parser.add_argument("--migrated", type=Path, required=True, help="the migrated tree (HEAD: the release)")
    parser.add_argument("--python", type=Path, required=True, help="an interpreter with torch and pytest")
    parser.add_argument("--only", default="", help="model names, comma-separated (default: every changed model)")
    parser.add_argument("--keyword", default=KEYWORD, help=f"pytest -k (default: {KEYWORD!r})")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="pytest-xdist workers per run")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per model and side")
    parser.add_argument("--json", type=Path, help="write the verdicts here")
    args = parser.parse_args(argv)

    files, models = changed_models(args.migrated)
    if args.only:
        wanted = set(args.only.split(","))
        models = [m for m in models if m in wanted]
    started = time.perf_counter()
    with git.worktree(args.tests, "HEAD", name="migrated") as new_tree:
        for path in files:
            source, target = args.migrated / path, new_tree / path
            if source.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
            elif target.exists():
                target.unlink()
        verdicts = verify_own_tests(
            args.python,
            args.tests,
            new_tree,
            models,
            jobs=args.jobs,
            timeout=args.timeout,
            keyword=args.keyword,
            progress=lambda line: print(line, flush=True),
        )
    before: Counter[str] = Counter()
    after: Counter[str] = Counter()
    for verdict in verdicts:
        before.update(verdict.before.outcomes.values())
        after.update(verdict.after.outcomes.values())
    regressed = [v for v in verdicts if not v.ok]
    seconds = time.perf_counter() - started
    print(f"\n{len(verdicts)} models with tests of {len(models)} changed ({seconds / 60:.1f} min)")
    print(f"before: {dict(sorted(before.items()))}")
    print(f"after:  {dict(sorted(after.items()))}")
    print(f"models with regressions or a failed run: {len(regressed)}")
    for verdict in regressed:
        print(f"  {verdict.describe()}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"seconds": round(seconds, 1), "keyword": args.keyword, "verdicts": [v.to_json() for v in verdicts]},
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
