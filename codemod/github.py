"""A tiny GitHub REST client on ``urllib.request``: just what ``codemod pr`` needs, no dependencies.

Why not PyGithub or ``gh``: the bot runs in CI with nothing but ``pip install transformers-codemod``,
and the four endpoints it uses fit in a page. Requests carry the headers GitHub documents for the
2022-11-28 API version; bodies are JSON both ways; lists follow the ``Link: <…>; rel="next"`` header.

Safety rules this module keeps:

* the token travels only in the ``Authorization`` header — never in a URL, a message or a ``repr``;
* any text that comes back from the server (and could echo the token) is redacted before it is
  put into an exception;
* ``Link`` URLs and redirects are followed only to the same scheme and host as ``api_url``, so the
  token is never sent to another host;
* every failure is a :class:`GitHubError` whose ``str`` is one line that says what to do (for a
  rate limit: when to retry).

A transient failure is retried (:class:`Retry`: a few times, with a doubling wait, each retry logged): no answer
(a timeout, a dropped connection), a 5xx, a secondary rate limit (or any ``Retry-After`` short enough to wait
for). Only requests that can be repeated safely are retried as they are (reads, edits, adding labels); a pull
request whose creation got no answer is first looked up by its branch (:meth:`GitHubClient.create_pull`), since
GitHub may have made it.
"""

from __future__ import annotations

import datetime
import http.client
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.client import HTTPMessage
from typing import IO, Any

from codemod.errors import CodemodError, redact

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
#: at most this many pages are read from one listing (100 per page): a bound on a runaway ``Link`` chain
MAX_PAGES = 50
_TIMEOUT_S = 30.0
_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class GitHubError(CodemodError):
    """A failed API call, as one line a user can act on; ``status`` is the HTTP status (0: no answer)."""

    def __init__(
        self, message: str, *, status: int = 0, method: str = "", path: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.method = method
        self.path = path
        #: the wait the server asked for (``Retry-After``), when it asked
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        """Whether the same request may well succeed later: no answer, a server error, a secondary rate limit."""
        return self.status in (0, 500, 502, 503, 504) or (self.status in (403, 429) and self.retry_after is not None)


def _no_log(line: str) -> None:
    pass


@dataclass(frozen=True)
class Retry:
    """How transient failures are retried: ``attempts`` tries in all, waiting ``first_wait_s`` then twice as long
    each time (or what ``Retry-After`` asks, up to ``max_wait_s``: a longer wait is not waited for); ``log`` gets
    one line per retry; ``sleep`` waits (a test's does not)."""

    attempts: int = 4
    first_wait_s: float = 2.0
    max_wait_s: float = 60.0
    log: Callable[[str], None] = _no_log
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)

    def wait(self, error: GitHubError, attempt: int) -> float | None:
        """Seconds to wait before try ``attempt + 1`` after ``error`` (None: give up)."""
        if not error.transient or attempt >= self.attempts:
            return None
        wait = error.retry_after if error.retry_after is not None else self.first_wait_s * 2 ** (attempt - 1)
        return wait if wait <= self.max_wait_s else None

    def pause(self, error: GitHubError, attempt: int, wait: float) -> None:
        self.log(f"{error}; retry {attempt} of {self.attempts - 1} in {wait:g} s")
        self.sleep(wait)


@dataclass(frozen=True)
class Response:
    status: int
    data: Any
    headers: Mapping[str, str]


class _SameHostRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects, but drop ``Authorization`` when one leaves the API's host (urllib keeps it)."""

    def redirect_request(
        self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: HTTPMessage, newurl: str
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            new.remove_header("Authorization")
        return new


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class GitHubClient:
    """The endpoints of one repository (``owner/name``) on one API host (github.com or an Enterprise server)."""

    def __init__(
        self,
        repo: str,
        token: str | None,
        api_url: str = DEFAULT_API_URL,
        *,
        timeout: float = _TIMEOUT_S,
        retry: Retry = Retry(),
    ):
        if not _REPO.match(repo):
            raise GitHubError(f"--repo must look like OWNER/NAME, not {repo!r}")
        parts = urllib.parse.urlsplit(api_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise GitHubError(f"--api-url must be an http(s) URL, not {api_url!r}")
        if parts.username or parts.password:
            raise GitHubError("--api-url must not contain credentials: the token comes from GITHUB_TOKEN")
        self.repo = repo
        self.owner = repo.split("/", 1)[0]
        self.api_url = api_url.rstrip("/")
        self._token = token
        self._timeout = timeout
        self.retry = retry
        self._opener = urllib.request.build_opener(_SameHostRedirects())

    def __repr__(self) -> str:  # the token stays out of tracebacks and logs
        return f"GitHubClient(repo={self.repo!r}, api_url={self.api_url!r}, token={'***' if self._token else None})"

    # -- endpoints ---------------------------------------------------------------------------

    def pulls_for_branch(self, branch: str, state: str = "all") -> list[dict[str, Any]]:
        """Pull requests whose head is ``owner:branch`` in this repository, newest first."""
        return self._paginate(f"/repos/{self.repo}/pulls", {"state": state, "head": f"{self.owner}:{branch}"})

    def open_pulls(self) -> list[dict[str, Any]]:
        """Every open pull request of the repository (paginated)."""
        return self._paginate(f"/repos/{self.repo}/pulls", {"state": "open"})

    def create_pull(self, *, title: str, head: str, base: str, body: str) -> dict[str, Any]:
        """Open a pull request. A creation is not repeated blindly: after a try that got no clear answer (a
        timeout, a 5xx) the open pull request of ``head`` is looked up, and it is the answer when GitHub made it."""
        payload = {"title": title, "head": head, "base": base, "body": body, "maintainer_can_modify": True}

        def made(error: GitHubError) -> Response | None:
            pull = next((p for p in self.pulls_for_branch(head, "open") if p.get("head", {}).get("ref") == head), None)
            if pull is None:
                return None
            self.retry.log(f"{error}; GitHub made the pull request all the same: #{pull.get('number')}")
            return Response(201, pull, {})

        path = f"/repos/{self.repo}/pulls"
        created: dict[str, Any] = self._send("POST", self._url(path, {}), payload, path, True, made).data
        return created

    def update_pull(self, number: int, *, title: str | None = None, body: str | None = None) -> dict[str, Any]:
        payload = {k: v for k, v in (("title", title), ("body", body)) if v is not None}
        pull: dict[str, Any] = self.request("PATCH", f"/repos/{self.repo}/pulls/{number}", body=payload).data
        return pull

    def add_labels(self, number: int, labels: Iterable[str]) -> list[dict[str, Any]]:
        """Add labels to an issue or pull request (existing ones stay; GitHub creates missing labels)."""
        added: list[dict[str, Any]] = self.request(
            "POST", f"/repos/{self.repo}/issues/{number}/labels", body={"labels": list(labels)}, repeatable=True
        ).data
        return added

    # -- transport ---------------------------------------------------------------------------

    def _paginate(self, path: str, query: Mapping[str, str]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for page in self._pages(path, {**query, "per_page": "100"}):
            if not isinstance(page, list):
                raise GitHubError(f"GitHub answered GET {path} with {type(page).__name__}, expected a list")
            items.extend(page)
        return items

    def _pages(self, path: str, query: Mapping[str, str]) -> Iterator[Any]:
        url: str | None = self._url(path, query)
        for _ in range(MAX_PAGES):
            if url is None:
                return
            response = self._send("GET", url, None, path)
            yield response.data
            url = self._next_link(response.headers.get("Link", ""), path)
        raise GitHubError(
            f"GET {path}: more than {MAX_PAGES} pages; refusing to read further", method="GET", path=path
        )

    def _next_link(self, header: str, path: str) -> str | None:
        match = _LINK_NEXT.search(header or "")
        if match is None:
            return None
        url = match.group(1)
        if _origin(url) != _origin(self.api_url):
            raise GitHubError(f"GET {path}: the next page is on another host; not sending the token there")
        return url

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        repeatable: bool | None = None,
    ) -> Response:
        """One call; ``path`` is relative to ``api_url`` (``/repos/…``). ``repeatable``: whether the call may be
        sent again after a transient failure (default: for every method but POST)."""
        return self._send(method, self._url(path, query or {}), body, path, repeatable)

    def _url(self, path: str, query: Mapping[str, str]) -> str:
        return self.api_url + path + (f"?{urllib.parse.urlencode(query)}" if query else "")

    def _headers(self, has_body: bool) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": "transformers-codemod",
        }
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        if has_body:
            headers["Content-Type"] = "application/json"
        return headers

    def _send(
        self,
        method: str,
        url: str,
        body: Any,
        path: str,
        repeatable: bool | None = None,
        made: Callable[[GitHubError], Response | None] | None = None,
    ) -> Response:
        """``_send_once``, retried on a transient failure when the request can be repeated safely. ``made``: looks
        up, before each retry, what a try that got no clear answer may have made all the same (the answer if so)."""
        repeatable = method != "POST" if repeatable is None else repeatable
        attempt = 1
        while True:
            try:
                return self._send_once(method, url, body, path)
            except GitHubError as error:
                wait = self.retry.wait(error, attempt) if repeatable else None
                if wait is None:
                    raise
                if made is not None and (answer := made(error)) is not None:
                    return answer
                self.retry.pause(error, attempt, wait)
                attempt += 1

    def _send_once(self, method: str, url: str, body: Any, path: str) -> Response:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method=method, headers=self._headers(data is not None))
        try:
            with self._opener.open(request, timeout=self._timeout) as answer:
                raw = answer.read()
                return Response(answer.status, _json(raw), dict(answer.headers.items()))
        except urllib.error.HTTPError as error:
            raw = error.read() if error.fp is not None else b""
            raise self._error(method, path, error.code, dict(error.headers.items()), raw) from None
        except (urllib.error.URLError, OSError, TimeoutError, http.client.HTTPException) as error:
            reason = getattr(error, "reason", error)
            text = redact(f"could not reach {self.api_url} ({method} {path}): {reason}", [self._token])
            raise GitHubError(text, method=method, path=path) from None

    def _error(self, method: str, path: str, status: int, headers: Mapping[str, str], raw: bytes) -> GitHubError:
        text = redact(describe_error(method, path, status, headers, raw), [self._token])
        return GitHubError(
            text, status=status, method=method, path=path, retry_after=_retry_after(status, headers, raw)
        )


def _json(raw: bytes) -> Any:
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def describe_error(method: str, path: str, status: int, headers: Mapping[str, str], raw: bytes) -> str:
    """The one-line message for an error answer: what failed, GitHub's reason, and what to do next."""
    data = _json(raw)
    message = (data.get("message") if isinstance(data, dict) else None) or (data if isinstance(data, str) else "")
    message = " ".join(str(message).split())[:300]
    lower = {k.lower(): v for k, v in headers.items()}
    where = f"{method} {path}"
    if status == 401:
        return (
            f"GitHub rejected the token on {where} (401 {message or 'Unauthorized'}): "
            "check that GITHUB_TOKEN is set, valid and not expired"
        )
    if status in (403, 429) and _is_rate_limited(lower, message):
        return f"GitHub API rate limit exceeded on {where} ({status} {message or 'rate limited'}): {retry_hint(lower)}"
    if status == 403:
        return (
            f"GitHub refused {where} (403 {message or 'Forbidden'}): "
            "the token needs 'contents: write' and 'pull-requests: write' on the repository"
        )
    if status == 404:
        return (
            f"GitHub found nothing at {where} (404 {message or 'Not Found'}): "
            "check --repo, --api-url and that the token can see the repository"
        )
    if status == 422:
        details = validation_errors(data)
        return f"GitHub rejected {where} (422 {message or 'Validation Failed'})" + (f": {details}" if details else "")
    return f"GitHub answered {where} with {status}" + (f": {message}" if message else "")


def _retry_after(status: int, headers: Mapping[str, str], raw: bytes) -> float | None:
    """The wait a refusal asks for: its ``Retry-After``; for a secondary rate limit that names none, a minute
    (GitHub's advice); None for anything else (a primary limit's reset is too far off to wait for here)."""
    lower = {k.lower(): v.strip() for k, v in headers.items()}
    if lower.get("retry-after", "").isdigit():
        return float(lower["retry-after"])
    data = _json(raw)
    message = str(data.get("message", "")) if isinstance(data, dict) else str(data or "")
    if status in (403, 429) and "secondary rate limit" in message.lower():
        return 60.0
    return None


def _is_rate_limited(headers: Mapping[str, str], message: str) -> bool:
    return headers.get("x-ratelimit-remaining") == "0" or "retry-after" in headers or "rate limit" in message.lower()


def retry_hint(headers: Mapping[str, str], now: datetime.datetime | None = None) -> str:
    """When to retry, from ``Retry-After`` (seconds) or ``X-RateLimit-Reset`` (epoch seconds, UTC)."""
    lower = {k.lower(): v for k, v in headers.items()}
    retry_after = lower.get("retry-after", "").strip()
    if retry_after.isdigit():
        return f"retry after {int(retry_after)} s"
    reset = lower.get("x-ratelimit-reset", "").strip()
    if reset.isdigit():
        when = datetime.datetime.fromtimestamp(int(reset), tz=datetime.timezone.utc)
        now = now or datetime.datetime.now(tz=datetime.timezone.utc)
        wait = max(0, int((when - now).total_seconds()))
        return f"retry after {when:%Y-%m-%d %H:%M:%S} UTC (in {wait} s)"
    return "wait at least a minute before retrying"


def validation_errors(data: Any) -> str:
    """GitHub's ``errors`` list of a 422 as ``; ``-joined text (each a message, or resource.field code)."""
    if not isinstance(data, dict) or not isinstance(data.get("errors"), list):
        return ""
    parts = []
    for item in data["errors"]:
        if isinstance(item, dict):
            where = f"{item.get('resource', '')}.{item.get('field', '')}".strip(".")
            text = item.get("message") or " ".join(str(v) for v in (where, item.get("code")) if v)
        else:
            text = str(item)
        if text:
            parts.append(" ".join(str(text).split()))
    return "; ".join(parts)
