"""The GitHub side of ``codemod pr``: what GitHub says about the bot's pull requests, and opening or
updating one (with its labels) once its branch is pushed, every call through :class:`GitHubClient`.

A write that fails after a push says what it left (a pushed branch without its pull request, a pull
request without labels) and that the next run picks it up; :class:`Journal` keeps what the run wrote
before, so that any error can say that too. The next run completes it: it opens the pull request of a
pushed branch, and gives an up-to-date pull request the labels it lacks (:func:`complete`).
"""

from __future__ import annotations

import dataclasses

from codemod.github import GitHubClient, GitHubError
from codemod.publish.pr.plan import Action, BranchPlan, Decision, GroupOutcome, PrError, PullRequest, outcome


@dataclasses.dataclass
class Journal:
    """What this run already wrote, so that an error can say exactly what it left behind."""

    done: list[str] = dataclasses.field(default_factory=list)

    def suffix(self) -> str:
        return f" (done before the error: {'; '.join(self.done)})" if self.done else ""


def open_by_bot(client: GitHubClient) -> int:
    """How many of the repository's open pull requests are the bot's (what ``--max-open`` counts)."""
    return sum(1 for p in map(PullRequest.from_api, client.open_pulls()) if p.by_bot)


def pulls_of(client: GitHubClient, branch: str) -> tuple[PullRequest, ...]:
    """The pull requests, open or closed, whose head is ``branch``."""
    pulls = (PullRequest.from_api(p) for p in client.pulls_for_branch(branch))
    return tuple(p for p in pulls if p.head_ref == branch)


def write(
    client: GitHubClient,
    plan: BranchPlan,
    decision: Decision,
    labels: tuple[str, ...],
    journal: Journal,
    pushed_to: str | None,
) -> GroupOutcome:
    """Open or update the branch's pull request (a CREATE or UPDATE decision) and label it; ``pushed_to``
    is the remote this run pushed the branch to (None: it already held these commits)."""
    try:
        if decision.action == Action.UPDATE:
            assert decision.pull is not None
            data = client.update_pull(decision.pull.number, title=plan.title, body=plan.body)
            wrote = f"updated #{decision.pull.number}"
        else:
            data = client.create_pull(title=plan.title, head=plan.branch, base=plan.base, body=plan.body)
            wrote = f"opened #{data['number']}"
    except GitHubError as error:
        if pushed_to is None:
            raise
        verb, done = ("update", "updated") if decision.action == Action.UPDATE else ("open", "opened")
        raise PrError(
            f"{error} — branch {plan.branch} was pushed to {pushed_to} but its pull request could not be {done}; "
            f"the next run will reuse the branch and {verb} it"
        ) from None
    journal.done += [f"pushed {plan.branch}", wrote] if pushed_to is not None else [wrote]
    pull = PullRequest.from_api(data)
    try:
        client.add_labels(pull.number, labels)
    except GitHubError as error:
        state = "updated" if decision.pull else "open"
        raise PrError(
            f"{error} — #{pull.number} ({plan.branch}) is {state} but has no labels yet; the next run adds them"
        ) from None
    return outcome(plan, decision, pull, pushed=pushed_to is not None)


def complete(
    client: GitHubClient, plan: BranchPlan, decision: Decision, labels: tuple[str, ...], journal: Journal
) -> GroupOutcome:
    """An up-to-date pull request (an UNCHANGED decision) with the labels an earlier run could not add."""
    pull = decision.pull
    missing = tuple(label for label in labels if pull is not None and label not in pull.labels)
    if pull is None or not missing:
        return outcome(plan, decision)
    client.add_labels(pull.number, missing)
    journal.done.append(f"labelled #{pull.number}")
    reason = f"{decision.reason}; added the labels an earlier run left out: {', '.join(missing)}"
    return outcome(plan, dataclasses.replace(decision, reason=reason))
