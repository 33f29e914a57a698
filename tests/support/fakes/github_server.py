"""A fake GitHub: a real aiohttp server on loopback that checks everything against GitHub's own
REST description and GraphQL schema.

Every request is validated against `rest-api-subset.json` before it is answered, and every answer
is validated before it is sent. Any failure answers 510 and is appended to `errors`; the pytest
fixture fails the test at teardown when `errors` is not empty, so a test cannot pass while the bot
sends something GitHub would reject or the fake answers something GitHub would not.

State is built through small builders with valid defaults (`add_repo`, `add_commit`, `add_pull`,
`set_permission`, ...). Faults are injected per operation id (`inject`). An installation's (or the
App's) primary rate limit can be used up until a reset (`exhaust_rate_limit`), and an operation's
answers can be held back until released (`hold`), as a GitHub that hangs. Every call is recorded
in `calls` for tests and benchmarks that count requests by kind.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import string
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote

import jwt
from aiohttp import web
from graphql import execute, parse, validate
from graphql.error import GraphQLError
from multidict import MultiDict
from openapi_core.datatypes import RequestParameters

from tests.support.fakes import github_openapi as oa
from tests.support.fakes.github_graphql import GraphQLContext, github_schema
from tests.support.fakes.github_handlers import RestHandlers
from tests.support.fakes.github_hooks import HookDeliveryHandlers
from tests.support.fakes.github_http import DOCS, FakeGitHubError, Handler, Incoming, Reply, iso
from tests.support.fakes.github_manifests import ManifestHandlers
from tests.support.fakes.github_merge_queue import MergeQueueModel
from tests.support.fakes.github_merges import MergeHandlers
from tests.support.fakes.github_model import (
    CheckRun,
    Comment,
    CommitStatus,
    Issue,
    Label,
    Pull,
    Repo,
    Review,
    ReviewComment,
)
from tests.support.fakes.github_shapes import Shapes

# A 5xx GitHub never sends and clients do not retry, yet a valid HTTPStatus for gidgethub.
VALIDATION_FAILED_STATUS = 510
_TOKEN_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Call:
    """One request as the fake saw it."""

    method: str
    path: str
    template: str
    operation_id: str
    status: int
    time: float


@dataclass
class Fault:
    status: int
    headers: dict[str, str]
    body: Any
    times: int


@dataclass(frozen=True)
class Installation:
    id: int
    account: str


@dataclass(frozen=True)
class IssuedToken:
    installation_id: int
    expires_at: datetime


# Operations GitHub answers without a token or JWT.
UNAUTHENTICATED = frozenset({"apps/create-from-manifest"})


class FakeGitHub:
    """See the module docstring. Start with `await start()`, stop with `await close()`."""

    def __init__(
        self,
        *,
        app_id: int,
        public_key: Any,
        app_slug: str = "judge-bot",
        ghes: bool = False,
        token_lifetime: timedelta = timedelta(hours=1),
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.app_id = app_id
        self.app_slug = app_slug
        self._public_key = public_key
        self._prefix = oa.GHES_PREFIX if ghes else ""
        self._graphql_path = "/api/graphql" if ghes else "/graphql"
        self.token_lifetime = token_lifetime
        self.clock = clock
        self.errors: list[str] = []
        self.calls: list[Call] = []
        self.repos: dict[str, Repo] = {}
        self.installations: dict[int, Installation] = {}
        self.tokens: dict[str, IssuedToken] = {}
        self._faults: dict[str, deque[Fault]] = {}
        # Installation id (None: the App's JWT calls) -> when its used-up limit resets.
        self._exhausted: dict[int | None, datetime] = {}
        self._holds: dict[str, int] = {}
        self._released = asyncio.Event()
        self.held = asyncio.Event()
        self._users: dict[str, int] = {}
        self._next_id = 1000
        self._runner: web.AppRunner | None = None
        self._port = 0
        self.shapes = Shapes(self)
        # One handler object per feature; tests reach each one's state through its attribute.
        self.hooks = HookDeliveryHandlers(self, self.shapes)
        self.manifests = ManifestHandlers(self, self.shapes)
        self.merges = MergeHandlers(self, self.shapes)
        self.merge_queue = MergeQueueModel(self)
        self._handlers: dict[str, Handler] = {
            **self.merge_queue.table(),
            **RestHandlers(self, self.shapes).table(),
            **self.hooks.table(),
            **self.manifests.table(),
            **self.merges.table(),
        }

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._entry)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def base_url(self) -> str:
        return self.origin + self._prefix

    @property
    def graphql_url(self) -> str:
        return self.origin + self._graphql_path

    # -- builders ----------------------------------------------------------------------------

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def user_id(self, login: str) -> int:
        return self._users.setdefault(login, 5000 + len(self._users))

    @property
    def known_users(self) -> frozenset[str]:
        return frozenset(self._users)

    def add_installation(self, installation_id: int, account: str = "octo") -> Installation:
        installation = Installation(installation_id, account)
        self.installations[installation_id] = installation
        return installation

    def add_repo(
        self,
        full_name: str,
        *,
        default_branch: str = "main",
        installation_id: int = 1,
        private: bool = False,
        files: Mapping[str, str | bytes] | None = None,
    ) -> Repo:
        """A repository with one initial commit on its default branch."""
        owner, name = full_name.split("/")
        if installation_id not in self.installations:
            self.add_installation(installation_id, owner)
        repo = Repo(self._new_id(), owner, name, default_branch, private, installation_id)
        self.repos[full_name.lower()] = repo
        self.add_commit(
            repo,
            files=files if files is not None else {"README.md": f"# {name}\n"},
            message="Initial commit",
            author=owner,
            parents=[],
            branch=default_branch,
        )
        return repo

    def repo(self, full_name: str) -> Repo:
        return self.repos[full_name.lower()]

    def _as_repo(self, repo: Repo | str) -> Repo:
        return self.repo(repo) if isinstance(repo, str) else repo

    def add_commit(
        self,
        repo: Repo | str,
        files: Mapping[str, str | bytes | None],
        *,
        message: str = "Update files",
        author: str = "octocat",
        parents: Iterable[str] | None = None,
        branch: str | None = None,
        date: datetime | None = None,
    ) -> str:
        """Commit `files` on top of the first parent (a value of None deletes the path).

        Without `parents` the commit goes on top of `branch` (default branch when not given; a
        new branch forks from the default branch) and moves it; with explicit `parents` only the
        named `branch`, if any, moves.
        """
        repo = self._as_repo(repo)
        if parents is None:
            branch = branch or repo.default_branch
            # A new branch starts from the default branch, as `git switch -c` would.
            head = repo.branches.get(branch) or repo.branches.get(repo.default_branch)
            parent_list = [head] if head is not None else []
        else:
            parent_list = list(parents)
        content: dict[str, bytes] = {}
        if parent_list:
            content = {p: repo.blobs[sha] for p, sha in repo.files_at(parent_list[0]).items()}
        for path, value in files.items():
            if value is None:
                content.pop(path, None)
            else:
                content[path] = value.encode() if isinstance(value, str) else value
        tree = repo.store_tree(content)
        when = date or self.clock()
        sha = repo.store_commit(tree, tuple(parent_list), message, author, when)
        if branch is not None:
            repo.branches[branch] = sha
        return sha

    def add_branch(self, repo: Repo | str, name: str, sha: str) -> None:
        self._as_repo(repo).branches[name] = sha

    def add_pull(
        self,
        repo: Repo | str,
        number: int | None,
        head_sha: str,
        base: str | None = None,
        *,
        head_ref: str | None = None,
        author: str = "octocat",
        title: str | None = None,
        body: str | None = "",
        draft: bool = False,
        labels: Iterable[str] = (),
        state: str = "open",
    ) -> int:
        """An open pull request from `head_sha` into `base` (the default branch unless given)."""
        repo = self._as_repo(repo)
        number = number if number is not None else repo.next_issue_number()
        base_ref = base or repo.default_branch
        head_ref = head_ref or f"feature-{number}"
        repo.branches.setdefault(head_ref, head_sha)
        for label in labels:
            self.add_label(repo, label)
        repo.issues[number] = Issue(
            number,
            self._new_id(),
            title or f"Pull request {number}",
            body,
            author,
            state=state,
            labels=list(labels),
            created_at=self.clock(),
            updated_at=self.clock(),
            is_pull=True,
        )
        repo.pulls[number] = Pull(
            number, self._new_id(), head_sha, head_ref, base_ref, repo.branches[base_ref], draft
        )
        return number

    def add_issue(
        self,
        repo: Repo | str,
        *,
        title: str = "An issue",
        body: str | None = "",
        author: str = "octocat",
        labels: Iterable[str] = (),
        state: str = "open",
    ) -> int:
        repo = self._as_repo(repo)
        number = repo.next_issue_number()
        for label in labels:
            self.add_label(repo, label)
        repo.issues[number] = Issue(
            number,
            self._new_id(),
            title,
            body,
            author,
            state=state,
            labels=list(labels),
            created_at=self.clock(),
            updated_at=self.clock(),
        )
        return number

    def add_comment(self, repo: Repo | str, number: int, body: str, author: str = "octocat") -> int:
        repo = self._as_repo(repo)
        comment = Comment(self._new_id(), number, body, author, self.clock(), self.clock())
        repo.comments[comment.id] = comment
        return comment.id

    def add_label(self, repo: Repo | str, name: str, color: str = "ededed") -> Label:
        repo = self._as_repo(repo)
        existing = repo.labels.get(name.lower())
        if existing is not None:
            return existing
        label = Label(self._new_id(), name, color)
        repo.labels[name.lower()] = label
        return label

    def add_check_run(
        self,
        repo: Repo | str,
        sha: str,
        name: str,
        *,
        conclusion: str | None = "success",
        app_slug: str = "ci",
        app_id: int = 15368,
        title: str | None = None,
        summary: str | None = None,
    ) -> int:
        """Another app's check run on a commit (a CI system's); `conclusion` None leaves it
        in progress. Returns its id."""
        repo = self._as_repo(repo)
        run = CheckRun(
            id=self._new_id(),
            head_sha=sha,
            name=name,
            status="completed" if conclusion is not None else "in_progress",
            conclusion=conclusion,
            started_at=self.clock(),
            completed_at=self.clock() if conclusion is not None else None,
            details_url=None,
            external_id=None,
            output={"title": title, "summary": summary} if title or summary else {},
            check_suite_id=int(sha[:6], 16) + app_id,
            app_id=app_id,
            app_slug=app_slug,
        )
        repo.check_runs[run.id] = run
        return run.id

    def add_status(
        self,
        repo: Repo | str,
        sha: str,
        context: str,
        state: str,
        *,
        description: str | None = None,
        creator: str = "ci-bot",
        target_url: str | None = None,
    ) -> CommitStatus:
        """A commit status (`error`, `failure`, `pending` or `success`) on a commit."""
        if state not in {"error", "failure", "pending", "success"}:
            raise ValueError(f"unknown status state {state!r}")
        repo = self._as_repo(repo)
        status = CommitStatus(
            self._new_id(), sha, context, state, description, target_url, creator, self.clock()
        )
        repo.statuses.append(status)
        return status

    def require_checks(self, repo: Repo | str, branch: str, *names: str) -> None:
        """The branch's protection requires these checks and statuses to pass."""
        self._as_repo(repo).required_checks[branch] = tuple(names)

    def add_pull_review(
        self,
        repo: Repo | str,
        number: int,
        login: str,
        body: str,
        *,
        state: str = "COMMENTED",
        comments: Iterable[tuple[str, str]] = (),
    ) -> Review:
        """A review with a body and inline comments ((path, body) pairs) on the head."""
        repo = self._as_repo(repo)
        pull = repo.pulls[number]
        self.user_id(login)
        review = Review(
            self._new_id(),
            login,
            state,
            pull.head_sha,
            self.clock(),
            body=body,
            comments=[ReviewComment(path, text) for path, text in comments],
        )
        pull.reviews.append(review)
        return review

    def set_permission(self, repo: Repo | str, user: str, permission: str) -> None:
        """`admin`, `maintain`, `write`, `triage`, `read` or `none` for a user on a repo."""
        if permission not in {"admin", "maintain", "write", "triage", "read", "none"}:
            raise ValueError(f"unknown permission {permission!r}")
        self._as_repo(repo).permissions[user] = permission

    def inject(
        self,
        operation_id: str,
        *,
        status: int,
        headers: Mapping[str, str] | None = None,
        body: Any = None,
        times: int = 1,
    ) -> None:
        """Make the next `times` calls of an operation answer `status` (after request checks)."""
        if operation_id not in oa.operation_ids() and operation_id != "graphql":
            raise ValueError(f"{operation_id!r} is not an operation in the description")
        default = {"message": f"injected {status}", "documentation_url": DOCS}
        self._faults.setdefault(operation_id, deque()).append(
            Fault(status, dict(headers or {}), default if body is None else body, times)
        )

    def exhaust_rate_limit(self, installation_id: int | None, until: datetime) -> None:
        """Answer every call of the installation (None: the App's JWT calls) as GitHub does
        once the hourly limit is used up: 403, `x-ratelimit-remaining: 0`, reset at `until`
        (on the fake's clock), until then."""
        self._exhausted[installation_id] = until

    def hold(self, operation_id: str, *, times: int = 1) -> None:
        """Keep the next `times` calls of an operation waiting, unanswered, until `release()`
        (a GitHub that hangs). `held` is set when the first of them arrives."""
        self._holds[operation_id] = self._holds.get(operation_id, 0) + times

    def release(self) -> None:
        self._released.set()

    async def _wait_if_held(self, operation_id: str) -> None:
        if self._holds.get(operation_id, 0) <= 0:
            return
        self._holds[operation_id] -= 1
        self.held.set()
        await self._released.wait()

    def _check_rate_limit(self, scope: int | None) -> None:
        until = self._exhausted.get(scope)
        if until is None:
            return
        if self.clock() >= until:
            del self._exhausted[scope]
            return
        who = "the App" if scope is None else f"installation ID {scope}"
        raise FakeGitHubError(
            403,
            f"API rate limit exceeded for {who}.",
            {
                "x-ratelimit-limit": "5000",
                "x-ratelimit-remaining": "0",
                "x-ratelimit-used": "5000",
                "x-ratelimit-reset": str(int(until.timestamp())),
            },
        )

    def revoke_tokens(self, installation_id: int) -> None:
        """Invalidate every token of an installation, as GitHub does on reinstall."""
        for token, issued in list(self.tokens.items()):
            if issued.installation_id == installation_id:
                del self.tokens[token]

    def issue_token(self, installation_id: int, lifetime: timedelta | None = None) -> str:
        token = "ghs_" + "".join(secrets.choice(_TOKEN_ALPHABET) for _ in range(36))
        expires = self.clock() + (lifetime or self.token_lifetime)
        self.tokens[token] = IssuedToken(installation_id, expires)
        return token

    def count(self, operation_id: str) -> int:
        return sum(1 for call in self.calls if call.operation_id == operation_id)

    # -- request pipeline --------------------------------------------------------------------

    async def _entry(self, request: web.Request) -> web.StreamResponse:
        raw_path = request.rel_url.raw_path
        body = await request.read()
        if request.method == "POST" and raw_path == self._graphql_path:
            return await self._graphql_entry(request, body)
        if not raw_path.startswith(self._prefix):
            return self._fail(request, "?", "?", f"path {raw_path} is outside {self._prefix}")
        found = oa.find_operation(request.method, raw_path[len(self._prefix) :])
        if found is None:
            return self._fail(
                request, "?", "?", f"{request.method} {raw_path} is not in the description"
            )
        operation, raw_values = found
        names = [part[1:-1] for part in operation.template.split("/") if part.startswith("{")]
        params = {name: unquote(value) for name, value in zip(names, raw_values, strict=True)}
        oa_request = oa.OARequest(
            method=request.method.lower(),
            path=raw_path,
            parameters=RequestParameters(
                query=MultiDict(request.rel_url.query),
                header=request.headers,
                cookie=MultiDict(),
            ),
            body=body or None,
            content_type=request.content_type if body else "application/json",
        )
        try:
            oa.openapi().validate_request(oa_request)
        except Exception as exc:  # noqa: BLE001 - any validator failure is a finding to report
            return self._fail(
                request,
                operation.template,
                operation.operation_id,
                f"request {operation.operation_id}: {_explain(exc)}",
            )
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = None
        incoming = Incoming(request, operation, params, request.rel_url.query, payload)
        await self._wait_if_held(operation.operation_id)
        try:
            reply = self._fault(operation.operation_id) or await self._authorise_and_handle(
                incoming
            )
        except FakeGitHubError as err:
            reply = Reply(
                err.status, {"message": err.message, "documentation_url": DOCS}, err.headers
            )
        return self._respond(request, operation, oa_request, reply)

    def _fault(self, operation_id: str) -> Reply | None:
        queue = self._faults.get(operation_id)
        if not queue:
            return None
        fault = queue[0]
        fault.times -= 1
        if fault.times <= 0:
            queue.popleft()
        return Reply(fault.status, fault.body, dict(fault.headers))

    async def _authorise_and_handle(self, incoming: Incoming) -> Reply:
        if incoming.operation.operation_id in UNAUTHENTICATED:
            pass  # the one-time code in the path is the credential
        elif incoming.operation.template.startswith("/app"):
            self._check_app_jwt(incoming.request)
        else:
            incoming.installation_id = self._check_token(incoming.request)
        self._check_rate_limit(incoming.installation_id)
        handler = self._handlers.get(incoming.operation.operation_id)
        if handler is None:
            self.errors.append(f"fake does not implement {incoming.operation.operation_id}")
            raise FakeGitHubError(404, "Not Found (not implemented by the fake)")
        return await handler(incoming)

    def _respond(
        self,
        request: web.Request,
        operation: oa.Operation,
        oa_request: oa.OARequest,
        reply: Reply,
    ) -> web.StreamResponse:
        if isinstance(reply.body, str) and reply.content_type != "application/json":
            data = reply.body.encode()
        else:
            data = b"" if reply.body is None else json.dumps(reply.body).encode()
        headers = {**self._rate_headers(), **reply.headers}
        problem: str | None = None
        if reply.status in operation.documented_statuses:
            try:
                oa.openapi().validate_response(
                    oa_request, oa.OAResponse(reply.status, data, headers, reply.content_type)
                )
            except Exception as exc:  # noqa: BLE001 - any validator failure is a finding
                problem = f"response {operation.operation_id} {reply.status}: {_explain(exc)}"
        elif reply.status >= 400:
            # GitHub answers 401/403/429/5xx on any operation without documenting each one;
            # such bodies must still be GitHub's basic error shape.
            issues = oa.basic_error_problems(reply.body)
            if issues:
                problem = f"error body for {operation.operation_id}: {issues}"
        else:
            problem = f"{operation.operation_id} answered undocumented status {reply.status}"
        if problem is not None:
            return self._fail(request, operation.template, operation.operation_id, problem)
        self._record(request, operation.template, operation.operation_id, reply.status)
        return web.Response(
            status=reply.status,
            body=data if reply.status != 204 else None,
            headers=headers,
            content_type=reply.content_type,
            charset="utf-8" if reply.content_type == "application/json" else None,
        )

    def _fail(
        self, request: web.Request, template: str, operation_id: str, problem: str
    ) -> web.Response:
        self.errors.append(problem)
        self._record(request, template, operation_id, VALIDATION_FAILED_STATUS)
        return web.json_response(
            {"message": f"fake GitHub: {problem}", "documentation_url": DOCS},
            status=VALIDATION_FAILED_STATUS,
        )

    def _record(self, request: web.Request, template: str, operation_id: str, status: int) -> None:
        self.calls.append(
            Call(
                request.method,
                request.rel_url.raw_path,
                template,
                operation_id,
                status,
                time.monotonic(),
            )
        )

    def _rate_headers(self) -> dict[str, str]:
        reset = int((self.clock() + timedelta(hours=1)).timestamp())
        used = len(self.calls) + 1
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(max(0, 5000 - used)),
            "x-ratelimit-reset": str(reset),
            "x-ratelimit-used": str(used),
            "x-ratelimit-resource": "core",
        }

    # -- authentication ----------------------------------------------------------------------

    @staticmethod
    def _credential(request: web.Request) -> str:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() not in {"bearer", "token"} or not value:
            raise FakeGitHubError(401, "Requires authentication")
        return value.strip()

    def _check_app_jwt(self, request: web.Request) -> None:
        token = self._credential(request)
        try:
            # Times are checked below against the fake's own clock, which tests may move.
            claims = jwt.decode(
                token,
                self._public_key,
                algorithms=["RS256"],
                options={
                    "require": ["iat", "exp", "iss"],
                    "verify_exp": False,
                    "verify_iat": False,
                },
            )
        except jwt.PyJWTError as exc:
            raise FakeGitHubError(
                401, f"A JSON web token could not be decoded ({type(exc).__name__})"
            ) from None
        now = self.clock().timestamp()
        if int(claims["iat"]) > now:
            raise FakeGitHubError(401, "'Issued at' claim ('iat') must be a time in the past")
        if int(claims["exp"]) <= now:
            raise FakeGitHubError(401, "'Expiration time' claim ('exp') is in the past")
        if str(claims["iss"]) != str(self.app_id):
            raise FakeGitHubError(401, "'Issuer' claim ('iss') must be the App's id")
        if int(claims["exp"]) - int(claims["iat"]) > 600:
            raise FakeGitHubError(401, "'Expiration time' claim ('exp') is too far in the future")

    def _check_token(self, request: web.Request) -> int:
        issued = self.tokens.get(self._credential(request))
        if issued is None or issued.expires_at <= self.clock():
            raise FakeGitHubError(401, "Bad credentials")
        return issued.installation_id

    # -- GraphQL -----------------------------------------------------------------------------

    async def _graphql_entry(self, request: web.Request, body: bytes) -> web.StreamResponse:
        template, op_id = "/graphql", "graphql"
        try:
            installation_id = self._check_token(request)
            self._check_rate_limit(installation_id)
        except FakeGitHubError as err:
            self._record(request, template, op_id, err.status)
            return web.json_response(
                {"message": err.message, "documentation_url": DOCS},
                status=err.status,
                headers={**self._rate_headers(), **err.headers},
            )
        fault = self._fault(op_id)
        if fault is not None:
            self._record(request, template, op_id, fault.status)
            return web.json_response(fault.body, status=fault.status, headers=fault.headers)
        try:
            payload = json.loads(body)
            query = payload["query"]
            variables = payload.get("variables") or {}
            document = parse(query)
        except (ValueError, KeyError, TypeError, GraphQLError) as exc:
            return self._fail(request, template, op_id, f"graphql request unreadable: {exc}")
        problems = validate(github_schema(), document)
        if problems:
            return self._fail(
                request, template, op_id, f"graphql query invalid: {[p.message for p in problems]}"
            )
        context = GraphQLContext(
            lambda owner, name: self.repos.get(f"{owner}/{name}".lower()),
            installation_id,
            self.app_slug,
            self.merge_queue,
        )
        result = execute(
            github_schema(),
            document,
            root_value={"rateLimit": self._graphql_rate_limit()},
            context_value=context,
            variable_values=variables,
        )
        assert not isinstance(result, Awaitable)
        answer: dict[str, Any] = {"data": result.data}
        if result.errors:
            answer["errors"] = [error.formatted for error in result.errors]
        self._record(request, template, op_id, 200)
        return web.json_response(answer, headers=self._rate_headers())

    def _graphql_rate_limit(self) -> dict[str, Any]:
        return {
            "cost": 1,
            "limit": 5000,
            "nodeCount": 0,
            "remaining": 4999,
            "used": 1,
            "resetAt": iso(self.clock() + timedelta(hours=1)),
        }


def _explain(exc: BaseException) -> str:
    # The validator repeats the whole offending value; the schema errors below say what matters.
    parts = [f"{type(exc).__name__}: {str(exc)[:300]}"]
    for nested in getattr(exc, "schema_errors", None) or []:
        parts.append(f"- {nested.message} at {list(nested.path)}")
        for sub in getattr(nested, "context", None) or []:
            parts.append(f"  - {sub.message} at {list(sub.path)}")
    cause = exc.__cause__
    if cause is not None and cause is not exc:
        parts.append(f"caused by {_explain(cause)}")
    return "\n".join(parts)


__all__ = ["Call", "FakeGitHub", "FakeGitHubError", "Reply"]
