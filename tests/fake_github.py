"""A loopback stand-in for the slice of GitHub's REST API that ``codemod pr`` uses.

It serves, on ``127.0.0.1`` (an ephemeral port, in a daemon thread), with the request and response
shapes of GitHub's REST docs (API version 2022-11-28):

* ``GET  /repos/{owner}/{repo}/pulls`` — ``state`` (open/closed/all), ``head`` (``owner:branch``),
  ``per_page``/``page`` with a ``Link`` header (``rel="next"``/``rel="last"``), newest first;
* ``GET  /repos/{owner}/{repo}/pulls/{number}``;
* ``POST /repos/{owner}/{repo}/pulls`` — ``{title, head, base, body, maintainer_can_modify}``; 422 with
  an ``errors`` list when a field is missing, the head branch does not exist on the remote, or an
  open pull request for the head already exists;
* ``PATCH /repos/{owner}/{repo}/pulls/{number}`` — ``{title, body, state, base}``;
* ``POST /repos/{owner}/{repo}/issues/{number}/labels`` — ``{labels: [...]}``.

Pull requests live in memory. When given the bare git remote, a pull request's ``head.sha`` is the
branch's current SHA there (as on GitHub, where pushing moves it). Every request is recorded; the
``Authorization: Bearer <token>`` header is checked (401 "Bad credentials" otherwise); and
:meth:`FakeGitHub.fail` makes matching requests answer an error (401, 403 rate limit, 422, …).
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DOCS = "https://docs.github.com/rest"


@dataclasses.dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    headers: dict[str, str]  # lower-case names; the token is not kept, only the scheme ("authorization-scheme")


@dataclasses.dataclass
class Failure:
    method: str
    path: re.Pattern[str]
    status: int
    body: Any
    headers: dict[str, str]
    times: int


class FakeGitHub:
    """The in-memory state and the server; use as a context manager (or ``start``/``stop``)."""

    def __init__(self, repo: str, token: str, bare: Path | None = None, *, max_per_page: int = 100) -> None:
        self.repo = repo
        self.owner = repo.split("/")[0]
        self.token = token
        self.bare = bare
        self.max_per_page = max_per_page
        #: a public repository answers GETs without a token (a wrong token is still a 401)
        self.public = True
        self.pulls: dict[int, dict[str, Any]] = {}
        self.requests: list[Recorded] = []
        self._failures: list[Failure] = []
        self._next_number = 1
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(_Handler):
            github = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- test controls and views -----------------------------------------------------------

    def fail(
        self,
        method: str,
        path: str,
        status: int,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` requests whose method matches and whose path matches the regex ``path``."""
        with self._lock:
            self._failures.append(Failure(method.upper(), re.compile(path), status, body, headers or {}, times))

    def writes(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method != "GET"]

    def add_pull(
        self,
        *,
        head: str,
        body: str = "",
        title: str = "a pull request",
        state: str = "open",
        merged: bool = False,
        user: str = "octocat",
    ) -> dict[str, Any]:
        """A pull request made outside the bot (by a person, or an earlier bot run)."""
        with self._lock:
            pull = self._new_pull(
                title=title, head=head, base="main", body=body, sha=self._branch_sha(head) or "0" * 40, user=user
            )
            pull["state"] = state
            if merged:
                pull["merged_at"] = "2024-01-01T00:00:00Z"
            return pull

    def close(self, number: int, *, merged: bool = False) -> None:
        with self._lock:
            self.pulls[number]["state"] = "closed"
            self.pulls[number]["closed_at"] = "2024-01-01T00:00:00Z"
            if merged:
                self.pulls[number]["merged_at"] = "2024-01-01T00:00:00Z"

    def labels(self, number: int) -> list[str]:
        with self._lock:
            return [label["name"] for label in self.pulls[number]["labels"]]

    # -- behaviour -------------------------------------------------------------------------

    def _branch_sha(self, branch: str) -> str | None:
        if self.bare is None:
            return None
        done = subprocess.run(
            ["git", "--git-dir", str(self.bare), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip() or None

    def _new_pull(
        self, *, title: str, head: str, base: str, body: str, sha: str, user: str = "github-actions[bot]"
    ) -> dict[str, Any]:
        number = self._next_number
        self._next_number += 1
        pull = {
            "url": f"{self.url}/repos/{self.repo}/pulls/{number}",
            "id": 1000 + number,
            "number": number,
            "state": "open",
            "locked": False,
            "title": title,
            "body": body,
            "user": {"login": user, "type": "Bot" if user.endswith("[bot]") else "User"},
            "labels": [],
            "created_at": "2024-01-01T00:00:00Z",
            "closed_at": None,
            "merged_at": None,
            "draft": False,
            "maintainer_can_modify": True,
            "html_url": f"https://github.test/{self.repo}/pull/{number}",
            "head": {"label": f"{self.owner}:{head}", "ref": head, "sha": sha, "repo": {"full_name": self.repo}},
            "base": {"label": f"{self.owner}:{base}", "ref": base, "sha": "0" * 40, "repo": {"full_name": self.repo}},
        }
        self.pulls[number] = pull
        return pull

    def _view(self, pull: dict[str, Any]) -> dict[str, Any]:
        view = json.loads(json.dumps(pull))
        view["head"]["sha"] = self._branch_sha(pull["head"]["ref"]) or pull["head"]["sha"]
        return view

    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], raw_body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        parts = urllib.parse.urlsplit(raw_path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(parts.query).items()}
        try:
            body = json.loads(raw_body) if raw_body else None
        except ValueError:
            return 400, {"message": "Problems parsing JSON", "documentation_url": DOCS}, {}
        headers = {k.lower(): v for k, v in headers.items()}  # HTTP header names are case-insensitive
        with self._lock:
            recorded_headers = {k: v for k, v in headers.items() if k != "authorization"}
            recorded_headers["authorization-scheme"] = headers.get("authorization", "").split(" ")[0]
            self.requests.append(Recorded(method, parts.path, query, body, recorded_headers))
            anonymous_read = self.public and method == "GET" and "authorization" not in headers
            if headers.get("authorization") != f"Bearer {self.token}" and not anonymous_read:
                return 401, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"}, {}
            for failure in self._failures:
                if failure.times > 0 and failure.method == method and failure.path.search(parts.path):
                    failure.times -= 1
                    return failure.status, failure.body, failure.headers
            return self._route(method, parts.path, query, body)

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any, dict[str, str]]:
        prefix = f"/repos/{self.repo}"
        not_found = (404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"}, {})
        if not path.startswith(prefix + "/"):
            return not_found
        rest = path[len(prefix) :]
        if rest == "/pulls" and method == "GET":
            return self._list(path, query)
        if rest == "/pulls" and method == "POST":
            return self._create(body or {})
        match = re.fullmatch(r"/pulls/(\d+)", rest)
        if match and int(match.group(1)) in self.pulls:
            number = int(match.group(1))
            if method == "GET":
                return 200, self._view(self.pulls[number]), {}
            if method == "PATCH":
                pull = self.pulls[number]
                for key in ("title", "body", "state", "base"):
                    if key in (body or {}):
                        pull[key] = body[key] if key != "base" else {**pull["base"], "ref": body[key]}
                return 200, self._view(pull), {}
        match = re.fullmatch(r"/issues/(\d+)/labels", rest)
        if match and int(match.group(1)) in self.pulls and method == "POST":
            pull = self.pulls[int(match.group(1))]
            names = [label["name"] for label in pull["labels"]]
            for name in (body or {}).get("labels", []):
                if name not in names:
                    names.append(name)
            pull["labels"] = [
                {"id": i, "name": n, "color": "ededed", "default": False} for i, n in enumerate(names, 1)
            ]
            return 200, pull["labels"], {}
        return not_found

    def _list(self, path: str, query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        state = query.get("state", "open")
        pulls = sorted(self.pulls.values(), key=lambda p: -p["number"])
        if state != "all":
            pulls = [p for p in pulls if p["state"] == state]
        if "head" in query:
            pulls = [p for p in pulls if p["head"]["label"] == query["head"]]
        per_page = min(int(query.get("per_page", 30)), 100, self.max_per_page)
        page = int(query.get("page", 1))
        last = max(1, -(-len(pulls) // per_page))
        chunk = pulls[(page - 1) * per_page : page * per_page]
        headers = {}
        if page < last:

            def link(n: int) -> str:
                return f"{self.url}{path}?{urllib.parse.urlencode({**query, 'per_page': per_page, 'page': n})}"

            headers["Link"] = f'<{link(page + 1)}>; rel="next", <{link(last)}>; rel="last"'
        return 200, [self._view(p) for p in chunk], headers

    def _create(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        missing = [f for f in ("title", "head", "base") if not body.get(f)]
        if missing:
            errors = [{"resource": "PullRequest", "field": f, "code": "missing_field"} for f in missing]
            return (
                422,
                {"message": "Validation Failed", "errors": errors, "documentation_url": DOCS, "status": "422"},
                {},
            )
        head = body["head"].split(":", 1)[-1]
        sha = self._branch_sha(head)
        if self.bare is not None and sha is None:
            errors = [{"resource": "PullRequest", "field": "head", "code": "invalid"}]
            return (
                422,
                {"message": "Validation Failed", "errors": errors, "documentation_url": DOCS, "status": "422"},
                {},
            )
        if any(p["state"] == "open" and p["head"]["ref"] == head for p in self.pulls.values()):
            errors = [
                {
                    "resource": "PullRequest",
                    "code": "custom",
                    "message": f"A pull request already exists for {self.owner}:{head}.",
                }
            ]
            return (
                422,
                {"message": "Validation Failed", "errors": errors, "documentation_url": DOCS, "status": "422"},
                {},
            )
        pull = self._new_pull(
            title=body["title"], head=head, base=body["base"], body=body.get("body") or "", sha=sha or "0" * 40
        )
        return 201, self._view(pull), {"Location": pull["url"]}


class _Handler(BaseHTTPRequestHandler):
    github: FakeGitHub
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        status, body, headers = self.github.handle(self.command, self.path, dict(self.headers.items()), raw)
        payload = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("X-GitHub-Media-Type", "github.v3; format=json")
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        pass
