"""How fast is verification? Classes per minute on the 4.45.2 migration.

    .venv/bin/python bench/verify.py                        # every class the 4.45.2 migration changes, 2 jobs
    .venv/bin/python bench/verify.py --only llama,gpt2,t5   # a subset
    .venv/bin/python bench/verify.py --device cuda --jobs 4 # on a GPU machine

It applies the migration to a fresh copy of the release (fetched from PyPI once and cached), runs
the verification with ``--jobs`` worker pairs, and prints classes per minute, the verdicts and the
time per class. It prints numbers and asserts nothing: not a test. The verification environment is
created on the first run and reused (its creation is timed apart).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codemod.analyse.scan import scan  # noqa: E402
from codemod.checkout import resolve  # noqa: E402
from codemod.environment import ensure_environment  # noqa: E402
from codemod.fetch import fetch_release  # noqa: E402
from codemod.transform.apply import compute_changes, write  # noqa: E402
from codemod.verify.options import VerifyOptions  # noqa: E402
from codemod.verify.session import targets_from_plan, verify_change  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--release", default="4.45.2")
    parser.add_argument("--only", default="")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    only = [m for m in args.only.split(",") if m]

    with tempfile.TemporaryDirectory(prefix="codemod-bench-verify-") as scratch:
        checkout = resolve(fetch_release(args.release, Path(scratch) / "checkout"))
        started = time.perf_counter()
        environment = ensure_environment(checkout, args.device)
        environment_seconds = time.perf_counter() - started
        result = scan(checkout).select(only, ())
        changes = compute_changes(result)
        write(checkout, changes)
        targets, _ = targets_from_plan(result, changes.plan)
        options = VerifyOptions(device=args.device, jobs=args.jobs, python=environment.python)
        report = verify_change(checkout, targets, options=options)

    counts = Counter(v.verdict for v in report.verdicts)
    per_class = [v.seconds for v in report.verdicts if v.seconds]
    scenarios = [len(v.compared) for v in report.verdicts if v.verdict == "identical"]
    print(f"transformers {args.release}, device {args.device}, {args.jobs} jobs, {os.cpu_count()} CPUs")
    print(f"environment: {'created' if environment.created else 'reused'} in {environment_seconds:.1f}s")
    print(f"classes verified:        {len(report.verdicts)}")
    print(f"verification wall time:  {report.seconds:.1f}s")
    print(f"classes per minute:      {report.classes_per_minute:.1f}")
    if per_class:
        print(f"per class (both sides):  median {statistics.median(per_class):.1f}s, max {max(per_class):.1f}s")
    if scenarios:
        print(f"scenarios per identical class: min {min(scenarios)}, median {statistics.median(scenarios):.0f}")
    print("verdicts:                " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
