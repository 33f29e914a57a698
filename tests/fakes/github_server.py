"""A fake GitHub: a real aiohttp server on loopback that checks everything against GitHub's own
REST description and GraphQL schema.

Every request is validated against `rest-api-subset.json` before it is answered, and every answer
is validated before it is sent. Any failure answers 510 and is appended to `errors`; the pytest
fixture fails the test at teardown when `errors` is not empty, so a test cannot pass while the bot
sends something GitHub would reject or the fake answers something GitHub would not.

State is built through small builders with valid defaults (`add_repo`, `add_commit`, `add_pull`,
`set_permission`, ...). Faults are injected per operation id (`inject`). Every call is recorded in
`calls` for tests and benchmarks that count requests by kind.
"""

from __future__ import annotations

import base64
import json
import secrets
import string
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote, urlencode

import jwt
from aiohttp import web
from graphql import execute, parse, validate
from graphql.error import GraphQLError
from multidict import MultiDict, MultiDictProxy
from openapi_core.datatypes import RequestParameters

from tests.fakes import github_openapi as oa
from tests.fakes.github_graphql import GraphQLContext, github_schema
from tests.fakes.github_model import (
    CheckRun,
    Comment,
    Issue,
    Label,
    Pull,
    Repo,
    is_binary,
)

# A 5xx GitHub never sends and clients do not retry, yet a valid HTTPStatus for gidgethub.
VALIDATION_FAILED_STATUS = 510
DOCS = "https://docs.github.com/rest"
PER_PAGE_DEFAULT = 30
PER_PAGE_MAX = 100
_TOKEN_ALPHABET = string.ascii_letters + string.digits


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeGitHubError(Exception):
    """An answer other than success, raised by a handler and turned into a GitHub error body."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


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


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


@dataclass
class Incoming:
    """A request after routing: operation, decoded path values, query, JSON body, caller."""

    request: web.Request
    operation: oa.Operation
    params: dict[str, str]
    query: MultiDictProxy[str]
    json: Any
    installation_id: int | None = None

    @property
    def accept(self) -> str:
        return self.request.headers.get("accept", "")


Handler = Callable[[Incoming], Awaitable[Reply]]


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
        self._users: dict[str, int] = {}
        self._next_id = 1000
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._handlers: dict[str, Handler] = self._handler_table()

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._entry)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self._port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

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

        Without `parents` the commit goes on top of `branch` (default branch when not given) and
        moves it; with explicit `parents` only the named `branch`, if any, moves.
        """
        repo = self._as_repo(repo)
        if parents is None:
            branch = branch or repo.default_branch
            head = repo.branches.get(branch)
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
        number: int | None = None,
        *,
        head_sha: str,
        base: str | None = None,
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
        if incoming.operation.template.startswith("/app"):
            self._check_app_jwt(incoming.request)
        else:
            incoming.installation_id = self._check_token(incoming.request)
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
            claims = jwt.decode(
                token,
                self._public_key,
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"]},
            )
        except jwt.PyJWTError as exc:
            raise FakeGitHubError(
                401, f"A JSON web token could not be decoded ({type(exc).__name__})"
            ) from None
        if str(claims["iss"]) != str(self.app_id):
            raise FakeGitHubError(401, "'Issuer' claim ('iss') must be the App's id")
        if int(claims["exp"]) - int(claims["iat"]) > 600:
            raise FakeGitHubError(401, "'Expiration time' claim ('exp') is too far in the future")

    def _check_token(self, request: web.Request) -> int:
        issued = self.tokens.get(self._credential(request))
        if issued is None or issued.expires_at <= self.clock():
            raise FakeGitHubError(401, "Bad credentials")
        return issued.installation_id

    def _repo_for(self, incoming: Incoming) -> Repo:
        repo = self.repos.get(f"{incoming.params['owner']}/{incoming.params['repo']}".lower())
        # GitHub hides repositories the installation cannot see behind a 404.
        if repo is None or repo.installation_id != incoming.installation_id:
            raise FakeGitHubError(404, "Not Found")
        return repo

    # -- GraphQL -----------------------------------------------------------------------------

    async def _graphql_entry(self, request: web.Request, body: bytes) -> web.StreamResponse:
        template, op_id = "/graphql", "graphql"
        try:
            installation_id = self._check_token(request)
        except FakeGitHubError as err:
            self._record(request, template, op_id, 401)
            return web.json_response(
                {"message": err.message, "documentation_url": DOCS}, status=401
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
            lambda owner, name: self.repos.get(f"{owner}/{name}".lower()), installation_id
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
            "resetAt": _iso(self.clock() + timedelta(hours=1)),
        }

    # -- JSON shapes -------------------------------------------------------------------------

    def _user(self, login: str) -> dict[str, Any]:
        user: dict[str, Any] = oa.example("issue-comment")["user"]
        uid = self.user_id(login)
        for key, value in list(user.items()):
            if isinstance(value, str):
                user[key] = value.replace("octocat", login)
        user.update(
            login=login,
            id=uid,
            node_id=f"U_{uid}",
            url=f"{self.base_url}/users/{login}",
            type="Bot" if login.endswith("[bot]") else "User",
            site_admin=False,
        )
        return user

    def _repo_json(self, repo: Repo, template: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in template.items():
            if isinstance(value, str):
                value = value.replace("octocat/Hello-World", repo.full_name).replace(
                    "https://api.github.com", self.base_url
                )
            out[key] = value
        for gone in ("organization", "parent", "source", "template_repository"):
            out.pop(gone, None)
        if "license" in out:
            out["license"] = None
        out.update(
            id=repo.id,
            node_id=f"R_{repo.id}",
            name=repo.name,
            full_name=repo.full_name,
            owner=self._user(repo.owner),
            private=repo.private,
            visibility="private" if repo.private else "public",
            fork=False,
            default_branch=repo.default_branch,
            html_url=f"https://github.com/{repo.full_name}",
            url=f"{self.base_url}/repos/{repo.full_name}",
        )
        if "language" in template or "full" in template.get("_kind", ""):
            out["language"] = None
        return out

    def _full_repo(self, repo: Repo) -> dict[str, Any]:
        out = self._repo_json(repo, oa.example("full-repository-default-response"))
        out["language"] = None
        return out

    def _short_repo(self, repo: Repo) -> dict[str, Any]:
        return self._repo_json(repo, oa.example("pull-request")["head"]["repo"])

    def _app_json(self) -> dict[str, Any]:
        app: dict[str, Any] = oa.example("integration")
        app.update(
            id=self.app_id,
            slug=self.app_slug,
            name=self.app_slug,
            node_id=f"A_{self.app_id}",
            client_id=f"Iv1.{self.app_id}",
            owner=self._user("octo"),
        )
        return app

    def _installation_json(self, installation: Installation) -> dict[str, Any]:
        data: dict[str, Any] = oa.example("base-installation-items")[0]
        data.update(
            id=installation.id,
            app_id=self.app_id,
            app_slug=self.app_slug,
            account=self._user(installation.account),
            access_tokens_url=f"{self.base_url}/app/installations/{installation.id}/access_tokens",
            repositories_url=f"{self.base_url}/installation/repositories",
            repository_selection="all",
        )
        return data

    def _git_person(self, login: str, when: datetime) -> dict[str, Any]:
        return {"name": login, "email": f"{login}@users.noreply.github.com", "date": _iso(when)}

    def _verification(self) -> dict[str, Any]:
        return {
            "verified": False,
            "reason": "unsigned",
            "signature": None,
            "payload": None,
            "verified_at": None,
        }

    def _commit_json(self, repo: Repo, sha: str, with_files: bool = False) -> dict[str, Any]:
        commit = repo.commits[sha]
        api = f"{self.base_url}/repos/{repo.full_name}"
        person = self._git_person(commit.author, commit.date)
        data: dict[str, Any] = {
            "sha": sha,
            "node_id": f"C_{sha}",
            "url": f"{api}/commits/{sha}",
            "html_url": f"https://github.com/{repo.full_name}/commit/{sha}",
            "comments_url": f"{api}/commits/{sha}/comments",
            "commit": {
                "url": f"{api}/git/commits/{sha}",
                "author": person,
                "committer": person,
                "message": commit.message,
                "comment_count": 0,
                "tree": {"sha": commit.tree, "url": f"{api}/git/trees/{commit.tree}"},
                "verification": self._verification(),
            },
            "author": self._user(commit.author),
            "committer": self._user(commit.author),
            "parents": [
                {
                    "sha": p,
                    "url": f"{api}/commits/{p}",
                    "html_url": f"https://github.com/{repo.full_name}/commit/{p}",
                }
                for p in commit.parents
            ],
        }
        if with_files:
            changes = repo.diff(commit.parents[0] if commit.parents else None, sha)
            data["files"] = [self._diff_entry(repo, sha, c) for c in changes]
            added = sum(c.additions for c in changes)
            removed = sum(c.deletions for c in changes)
            data["stats"] = {"additions": added, "deletions": removed, "total": added + removed}
        return data

    def _diff_entry(self, repo: Repo, ref: str, change: Any) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        entry: dict[str, Any] = {
            "sha": change.sha,
            "filename": change.path,
            "status": change.status,
            "additions": change.additions,
            "deletions": change.deletions,
            "changes": change.additions + change.deletions,
            "blob_url": f"https://github.com/{repo.full_name}/blob/{ref}/{change.path}",
            "raw_url": f"https://github.com/{repo.full_name}/raw/{ref}/{change.path}",
            "contents_url": f"{api}/contents/{change.path}?ref={ref}",
        }
        if change.patch is not None:
            entry["patch"] = change.patch
        return entry

    def _label_json(self, repo: Repo, label: Label) -> dict[str, Any]:
        return {
            "id": label.id,
            "node_id": f"LA_{label.id}",
            "url": f"{self.base_url}/repos/{repo.full_name}/labels/{label.name}",
            "name": label.name,
            "description": label.description,
            "color": label.color,
            "default": False,
        }

    def _issue_json(self, repo: Repo, issue: Issue) -> dict[str, Any]:
        data: dict[str, Any] = oa.example("issue")
        api = f"{self.base_url}/repos/{repo.full_name}"
        html = f"https://github.com/{repo.full_name}"
        kind = "pull" if issue.is_pull else "issues"
        comments = sum(1 for c in repo.comments.values() if c.issue_number == issue.number)
        data.update(
            id=issue.id,
            node_id=f"I_{issue.id}",
            url=f"{api}/issues/{issue.number}",
            repository_url=api,
            labels_url=f"{api}/issues/{issue.number}/labels{{/name}}",
            comments_url=f"{api}/issues/{issue.number}/comments",
            events_url=f"{api}/issues/{issue.number}/events",
            html_url=f"{html}/{kind}/{issue.number}",
            number=issue.number,
            state=issue.state,
            state_reason=issue.state_reason,
            title=issue.title,
            body=issue.body,
            user=self._user(issue.author),
            labels=[
                self._label_json(repo, self.add_label(repo, name)) for name in issue.labels
            ],
            assignee=None,
            assignees=[],
            milestone=None,
            locked=False,
            active_lock_reason=None,
            comments=comments,
            closed_at=_iso(issue.closed_at),
            created_at=_iso(issue.created_at),
            updated_at=_iso(issue.updated_at),
            closed_by=None,
            author_association="CONTRIBUTOR",
        )
        data.pop("repository", None)
        data.pop("type", None)
        if issue.is_pull:
            pull = repo.pulls[issue.number]
            data["pull_request"] = {
                "url": f"{api}/pulls/{issue.number}",
                "html_url": f"{html}/pull/{issue.number}",
                "diff_url": f"{html}/pull/{issue.number}.diff",
                "patch_url": f"{html}/pull/{issue.number}.patch",
                "merged_at": None,
            }
            data["draft"] = pull.draft
        else:
            data.pop("pull_request", None)
            data.pop("draft", None)
        return data

    def _pull_json(self, repo: Repo, pull: Pull) -> dict[str, Any]:
        issue = repo.issues[pull.number]
        data: dict[str, Any] = oa.example("pull-request")
        api = f"{self.base_url}/repos/{repo.full_name}"
        html = f"https://github.com/{repo.full_name}"
        short_repo = self._short_repo(repo)
        changes = repo.diff(repo.merge_base(pull.base_sha, pull.head_sha), pull.head_sha)
        for side, ref, sha in (
            ("head", pull.head_ref, pull.head_sha),
            ("base", pull.base_ref, pull.base_sha),
        ):
            data[side] = {
                "label": f"{repo.owner}:{ref}",
                "ref": ref,
                "sha": sha,
                "user": self._user(repo.owner),
                "repo": short_repo,
            }
        links = {
            "self": f"{api}/pulls/{pull.number}",
            "html": f"{html}/pull/{pull.number}",
            "issue": f"{api}/issues/{pull.number}",
            "comments": f"{api}/issues/{pull.number}/comments",
            "review_comments": f"{api}/pulls/{pull.number}/comments",
            "review_comment": f"{api}/pulls/comments{{/number}}",
            "commits": f"{api}/pulls/{pull.number}/commits",
            "statuses": f"{api}/statuses/{pull.head_sha}",
        }
        data.update(
            id=pull.id,
            node_id=f"PR_{pull.id}",
            url=links["self"],
            html_url=links["html"],
            diff_url=f"{html}/pull/{pull.number}.diff",
            patch_url=f"{html}/pull/{pull.number}.patch",
            issue_url=links["issue"],
            commits_url=links["commits"],
            review_comments_url=links["review_comments"],
            review_comment_url=links["review_comment"],
            comments_url=links["comments"],
            statuses_url=links["statuses"],
            number=pull.number,
            state=issue.state,
            locked=False,
            title=issue.title,
            user=self._user(issue.author),
            body=issue.body,
            labels=[self._label_json(repo, self.add_label(repo, n)) for n in issue.labels],
            milestone=None,
            active_lock_reason=None,
            created_at=_iso(issue.created_at),
            updated_at=_iso(issue.updated_at),
            closed_at=_iso(issue.closed_at),
            merged_at=None,
            merge_commit_sha=None,
            assignee=None,
            assignees=[],
            requested_reviewers=[],
            requested_teams=[],
            _links={k: {"href": v} for k, v in links.items()},
            author_association="CONTRIBUTOR",
            auto_merge=None,
            draft=pull.draft,
            merged=pull.merged,
            mergeable=True,
            rebaseable=True,
            mergeable_state="clean",
            merged_by=None,
            comments=sum(1 for c in repo.comments.values() if c.issue_number == pull.number),
            review_comments=0,
            maintainer_can_modify=False,
            commits=len(repo.commits_between(pull.base_sha, pull.head_sha)),
            additions=sum(c.additions for c in changes),
            deletions=sum(c.deletions for c in changes),
            changed_files=len(changes),
        )
        return data

    def _check_run_json(self, repo: Repo, run: CheckRun) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        output = {
            "title": run.output.get("title"),
            "summary": run.output.get("summary"),
            "text": run.output.get("text"),
            "annotations_count": len(run.output.get("annotations", [])),
            "annotations_url": f"{api}/check-runs/{run.id}/annotations",
        }
        pulls = [
            {
                "id": p.id,
                "number": p.number,
                "url": f"{api}/pulls/{p.number}",
                "head": {
                    "ref": p.head_ref,
                    "sha": p.head_sha,
                    "repo": {"id": repo.id, "url": api, "name": repo.name},
                },
                "base": {
                    "ref": p.base_ref,
                    "sha": p.base_sha,
                    "repo": {"id": repo.id, "url": api, "name": repo.name},
                },
            }
            for p in repo.pulls.values()
            if p.head_sha == run.head_sha
        ]
        return {
            "id": run.id,
            "head_sha": run.head_sha,
            "node_id": f"CR_{run.id}",
            "external_id": run.external_id,
            "url": f"{api}/check-runs/{run.id}",
            "html_url": f"https://github.com/{repo.full_name}/runs/{run.id}",
            "details_url": run.details_url,
            "status": run.status,
            "conclusion": run.conclusion,
            "started_at": _iso(run.started_at),
            "completed_at": _iso(run.completed_at),
            "output": output,
            "name": run.name,
            "check_suite": {"id": run.check_suite_id},
            "app": self._app_json(),
            "pull_requests": pulls,
        }

    # -- pagination --------------------------------------------------------------------------

    def _page(self, incoming: Incoming, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
        per_page = min(PER_PAGE_MAX, int(incoming.query.get("per_page", PER_PAGE_DEFAULT)))
        page = max(1, int(incoming.query.get("page", 1)))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers: dict[str, str] = {}
        if page * per_page < len(items):
            query = MultiDict(incoming.query)
            query["page"] = str(page + 1)
            path = incoming.request.rel_url.raw_path
            headers["Link"] = f'<{self.origin}{path}?{urlencode(list(query.items()))}>; rel="next"'
        return chunk, headers

    # -- handlers ----------------------------------------------------------------------------

    def _handler_table(self) -> dict[str, Handler]:
        return {
            "apps/create-installation-access-token": self._create_token,
            "apps/get-authenticated": self._get_app,
            "apps/list-installations": self._list_installations,
            "apps/get-repo-installation": self._get_repo_installation,
            "repos/get": self._get_repo,
            "repos/get-branch": self._get_branch,
            "repos/get-content": self._get_content,
            "git/get-blob": self._get_blob,
            "git/get-tree": self._get_tree,
            "git/get-commit": self._get_git_commit,
            "repos/get-commit": self._get_commit,
            "repos/compare-commits": self._compare,
            "pulls/get": self._get_pull,
            "pulls/list": self._list_pulls,
            "pulls/list-files": self._list_pull_files,
            "pulls/list-commits": self._list_pull_commits,
            "checks/create": self._create_check_run,
            "checks/update": self._update_check_run,
            "checks/get": self._get_check_run,
            "checks/list-for-ref": self._list_check_runs,
            "repos/get-collaborator-permission-level": self._get_permission,
            "issues/create": self._create_issue,
            "issues/get": self._get_issue,
            "issues/update": self._update_issue,
            "issues/list-for-repo": self._list_issues,
            "issues/create-comment": self._create_comment,
            "issues/list-comments": self._list_comments,
            "issues/get-comment": self._get_comment,
            "issues/update-comment": self._update_comment,
            "issues/add-labels": self._add_labels,
            "issues/remove-label": self._remove_label,
            "issues/create-label": self._create_label,
            "issues/get-label": self._get_label,
            "search/issues-and-pull-requests": self._search_issues,
        }

    async def _create_token(self, incoming: Incoming) -> Reply:
        installation_id = int(incoming.params["installation_id"])
        if installation_id not in self.installations:
            raise FakeGitHubError(404, "Not Found")
        token = self.issue_token(installation_id)
        body = {
            "token": token,
            "expires_at": _iso(self.tokens[token].expires_at),
            "permissions": {
                "checks": "write",
                "contents": "read",
                "issues": "write",
                "pull_requests": "write",
                "metadata": "read",
            },
            "repository_selection": "all",
        }
        return Reply(201, body)

    async def _get_app(self, incoming: Incoming) -> Reply:
        return Reply(200, self._app_json())

    async def _list_installations(self, incoming: Incoming) -> Reply:
        items = [self._installation_json(i) for i in self.installations.values()]
        chunk, headers = self._page(incoming, items)
        return Reply(200, chunk, headers)

    async def _get_repo_installation(self, incoming: Incoming) -> Reply:
        repo = self.repos.get(f"{incoming.params['owner']}/{incoming.params['repo']}".lower())
        if repo is None:
            raise FakeGitHubError(404, "Not Found")
        data = self._installation_json(self.installations[repo.installation_id])
        data.pop("app_slug", None)
        return Reply(200, self._installation_json(self.installations[repo.installation_id]))

    async def _get_repo(self, incoming: Incoming) -> Reply:
        return Reply(200, self._full_repo(self._repo_for(incoming)))

    async def _get_branch(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        name = incoming.params["branch"]
        sha = repo.branches.get(name)
        if sha is None:
            raise FakeGitHubError(404, "Branch not found")
        api = f"{self.base_url}/repos/{repo.full_name}"
        data: dict[str, Any] = oa.example("branch-get")
        data.update(
            name=name,
            commit=self._commit_json(repo, sha),
            _links={"html": f"https://github.com/{repo.full_name}/tree/{name}", "self": api},
            protected=False,
            protection={"enabled": False, "required_status_checks": {"enforcement_level": "off", "contexts": [], "checks": []}},
            protection_url=f"{api}/branches/{name}/protection",
        )
        return Reply(200, data)

    def _resolve(self, repo: Repo, ref: str) -> str:
        sha = repo.resolve(ref)
        if sha is None:
            raise FakeGitHubError(404, f"No commit found for the ref {ref}")
        return sha

    async def _get_content(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        sha = self._resolve(repo, incoming.query.get("ref", repo.default_branch))
        path = incoming.params["path"]
        entry = repo.entry_at(sha, path)
        if entry is None:
            raise FakeGitHubError(404, "Not Found")
        if entry.kind != "blob":
            self.errors.append(f"fake does not list directories (GET contents/{path})")
            raise FakeGitHubError(404, "Not Found (directory listing not implemented by the fake)")
        data = repo.blobs[entry.sha]
        api = f"{self.base_url}/repos/{repo.full_name}"
        html = f"https://github.com/{repo.full_name}/blob/{sha}/{path}"
        git_url = f"{api}/git/blobs/{entry.sha}"
        body = {
            "type": "file",
            "encoding": "base64",
            "size": len(data),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "content": _b64_lines(data),
            "sha": entry.sha,
            "url": f"{api}/contents/{path}?ref={sha}",
            "git_url": git_url,
            "html_url": html,
            "download_url": f"https://raw.githubusercontent.com/{repo.full_name}/{sha}/{path}",
            "_links": {"git": git_url, "self": f"{api}/contents/{path}", "html": html},
        }
        return Reply(200, body)

    async def _get_blob(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        sha = incoming.params["file_sha"]
        data = repo.blobs.get(sha)
        if data is None:
            raise FakeGitHubError(404, "Not Found")
        return Reply(
            200,
            {
                "content": _b64_lines(data),
                "encoding": "base64",
                "url": f"{self.base_url}/repos/{repo.full_name}/git/blobs/{sha}",
                "sha": sha,
                "size": len(data),
                "node_id": f"B_{sha}",
            },
        )

    async def _get_tree(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        ref = incoming.params["tree_sha"]
        tree_sha = ref if ref in repo.trees else None
        if tree_sha is None:
            commit = repo.resolve(ref)
            tree_sha = repo.commits[commit].tree if commit is not None else None
        if tree_sha is None:
            raise FakeGitHubError(404, "Not Found")
        api = f"{self.base_url}/repos/{repo.full_name}"
        if incoming.query.get("recursive") not in (None, "", "0", "false"):
            entries = list(repo.walk_tree(tree_sha))
        else:
            entries = [(e.name, e) for e in repo.trees[tree_sha]]
        items = []
        for path, entry in entries:
            item: dict[str, Any] = {
                "path": path,
                "mode": entry.mode,
                "type": entry.kind,
                "sha": entry.sha,
                "url": f"{api}/git/{entry.kind}s/{entry.sha}",
            }
            if entry.kind == "blob":
                item["size"] = len(repo.blobs[entry.sha])
            items.append(item)
        return Reply(
            200,
            {
                "sha": tree_sha,
                "url": f"{api}/git/trees/{tree_sha}",
                "tree": items,
                "truncated": False,
            },
        )

    async def _get_git_commit(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        sha = incoming.params["commit_sha"]
        if sha not in repo.commits:
            raise FakeGitHubError(404, "Not Found")
        commit = repo.commits[sha]
        api = f"{self.base_url}/repos/{repo.full_name}"
        person = self._git_person(commit.author, commit.date)
        return Reply(
            200,
            {
                "sha": sha,
                "node_id": f"C_{sha}",
                "url": f"{api}/git/commits/{sha}",
                "html_url": f"https://github.com/{repo.full_name}/commit/{sha}",
                "author": person,
                "committer": person,
                "message": commit.message,
                "tree": {"sha": commit.tree, "url": f"{api}/git/trees/{commit.tree}"},
                "parents": [
                    {
                        "sha": p,
                        "url": f"{api}/git/commits/{p}",
                        "html_url": f"https://github.com/{repo.full_name}/commit/{p}",
                    }
                    for p in commit.parents
                ],
                "verification": self._verification(),
            },
        )

    async def _get_commit(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        sha = self._resolve(repo, incoming.params["ref"])
        if "application/vnd.github.sha" in incoming.accept:
            return Reply(200, sha, content_type="application/vnd.github.sha")
        commit = repo.commits[sha]
        if "application/vnd.github.diff" in incoming.accept:
            changes = repo.diff(commit.parents[0] if commit.parents else None, sha)
            diff = "".join(c.unified() for c in changes)
            return Reply(200, diff, content_type="application/vnd.github.diff")
        return Reply(200, self._commit_json(repo, sha, with_files=True))

    async def _compare(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        base_ref, sep, head_ref = incoming.params["basehead"].partition("...")
        if not sep:
            raise FakeGitHubError(404, "Not Found")
        base, head = self._resolve(repo, base_ref), self._resolve(repo, head_ref)
        merge_base = repo.merge_base(base, head)
        if merge_base is None:
            raise FakeGitHubError(404, "No common ancestor between the refs")
        ahead = repo.commits_between(base, head)
        behind = repo.commits_between(head, base)
        changes = repo.diff(merge_base, head)
        if "application/vnd.github.diff" in incoming.accept:
            diff = "".join(c.unified() for c in changes)
            return Reply(200, diff, content_type="application/vnd.github.diff")
        status = (
            "identical"
            if not ahead and not behind
            else "ahead"
            if not behind
            else "behind"
            if not ahead
            else "diverged"
        )
        html = f"https://github.com/{repo.full_name}"
        api = f"{self.base_url}/repos/{repo.full_name}"
        basehead = incoming.params["basehead"]
        return Reply(
            200,
            {
                "url": f"{api}/compare/{basehead}",
                "html_url": f"{html}/compare/{basehead}",
                "permalink_url": f"{html}/compare/{repo.owner}:{base[:7]}...{repo.owner}:{head[:7]}",
                "diff_url": f"{html}/compare/{basehead}.diff",
                "patch_url": f"{html}/compare/{basehead}.patch",
                "base_commit": self._commit_json(repo, base),
                "merge_base_commit": self._commit_json(repo, merge_base),
                "status": status,
                "ahead_by": len(ahead),
                "behind_by": len(behind),
                "total_commits": len(ahead),
                "commits": [self._commit_json(repo, sha) for sha in ahead],
                "files": [self._diff_entry(repo, head, c) for c in changes],
            },
        )

    def _pull_for(self, incoming: Incoming) -> tuple[Repo, Pull]:
        repo = self._repo_for(incoming)
        pull = repo.pulls.get(int(incoming.params["pull_number"]))
        if pull is None:
            raise FakeGitHubError(404, "Not Found")
        return repo, pull

    async def _get_pull(self, incoming: Incoming) -> Reply:
        repo, pull = self._pull_for(incoming)
        if "application/vnd.github.diff" in incoming.accept:
            self.errors.append("pulls/get diff media type is not in the description")
        return Reply(200, self._pull_json(repo, pull))

    async def _list_pulls(self, incoming: Incoming) -> Reply:
        self.errors.append("pulls/list is not implemented by the fake (its example is invalid)")
        raise FakeGitHubError(404, "Not Found (not implemented by the fake)")

    async def _list_pull_files(self, incoming: Incoming) -> Reply:
        repo, pull = self._pull_for(incoming)
        merge_base = repo.merge_base(pull.base_sha, pull.head_sha)
        changes = repo.diff(merge_base, pull.head_sha)
        items = [self._diff_entry(repo, pull.head_sha, c) for c in changes]
        chunk, headers = self._page(incoming, items)
        return Reply(200, chunk, headers)

    async def _list_pull_commits(self, incoming: Incoming) -> Reply:
        repo, pull = self._pull_for(incoming)
        items = [
            self._commit_json(repo, sha) for sha in repo.commits_between(pull.base_sha, pull.head_sha)
        ]
        chunk, headers = self._page(incoming, items)
        return Reply(200, chunk, headers)

    def _apply_check_fields(self, run: CheckRun, fields: Mapping[str, Any]) -> None:
        for key in ("name", "details_url", "external_id"):
            if key in fields:
                setattr(run, key, fields[key])
        if "started_at" in fields:
            run.started_at = _parse_time(fields["started_at"])
        if "status" in fields:
            run.status = fields["status"]
        if fields.get("conclusion") is not None:
            run.conclusion = fields["conclusion"]
            run.status = "completed"
        if "completed_at" in fields:
            run.completed_at = _parse_time(fields["completed_at"])
        if run.status == "completed":
            if run.conclusion is None:
                raise FakeGitHubError(422, "conclusion is required when status is completed")
            run.completed_at = run.completed_at or self.clock()
        if "output" in fields:
            output = dict(fields["output"])
            output["annotations"] = [
                *run.output.get("annotations", []),
                *output.get("annotations", []),
            ]
            run.output = output

    async def _create_check_run(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        fields = incoming.json
        if fields["head_sha"] not in repo.commits:
            raise FakeGitHubError(422, "No commit found for SHA: " + fields["head_sha"])
        run = CheckRun(
            id=self._new_id(),
            head_sha=fields["head_sha"],
            name=fields["name"],
            status="queued",
            conclusion=None,
            started_at=self.clock(),
            completed_at=None,
            details_url=None,
            external_id=None,
            output={},
            check_suite_id=self._suite_id(fields["head_sha"]),
            app_id=self.app_id,
        )
        self._apply_check_fields(run, fields)
        repo.check_runs[run.id] = run
        return Reply(201, self._check_run_json(repo, run))

    def _suite_id(self, head_sha: str) -> int:
        return int(head_sha[:7], 16)

    def _run_for(self, incoming: Incoming) -> tuple[Repo, CheckRun]:
        repo = self._repo_for(incoming)
        run = repo.check_runs.get(int(incoming.params["check_run_id"]))
        if run is None:
            raise FakeGitHubError(404, "Not Found")
        return repo, run

    async def _update_check_run(self, incoming: Incoming) -> Reply:
        repo, run = self._run_for(incoming)
        self._apply_check_fields(run, incoming.json)
        return Reply(200, self._check_run_json(repo, run))

    async def _get_check_run(self, incoming: Incoming) -> Reply:
        repo, run = self._run_for(incoming)
        return Reply(200, self._check_run_json(repo, run))

    async def _list_check_runs(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        sha = self._resolve(repo, incoming.params["ref"])
        runs = [r for r in repo.check_runs.values() if r.head_sha == sha]
        if "check_name" in incoming.query:
            runs = [r for r in runs if r.name == incoming.query["check_name"]]
        if "status" in incoming.query:
            runs = [r for r in runs if r.status == incoming.query["status"]]
        if "app_id" in incoming.query:
            runs = [r for r in runs if str(r.app_id) == incoming.query["app_id"]]
        if incoming.query.get("filter", "latest") == "latest":
            latest: dict[str, CheckRun] = {}
            for run in runs:
                latest[run.name] = run
            runs = list(latest.values())
        runs.sort(key=lambda r: r.id, reverse=True)
        chunk, headers = self._page(incoming, [self._check_run_json(repo, r) for r in runs])
        return Reply(200, {"total_count": len(runs), "check_runs": chunk}, headers)

    async def _get_permission(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        login = incoming.params["username"]
        permission = repo.permissions.get(login)
        if permission is None:
            if login not in self._users and login != repo.owner:
                raise FakeGitHubError(404, f"{login} is not a user")
            permission = "admin" if login == repo.owner else "none"
        # The API folds maintain into write and triage into read; role_name keeps the detail.
        legacy = {"maintain": "write", "triage": "read"}.get(permission, permission)
        user = self._user(login)
        user["permissions"] = {
            "admin": permission == "admin",
            "maintain": permission in {"admin", "maintain"},
            "push": permission in {"admin", "maintain", "write"},
            "triage": permission in {"admin", "maintain", "write", "triage"},
            "pull": permission != "none",
        }
        user["role_name"] = permission
        return Reply(200, {"permission": legacy, "role_name": permission, "user": user})

    def _issue_for(self, incoming: Incoming) -> tuple[Repo, Issue]:
        repo = self._repo_for(incoming)
        issue = repo.issues.get(int(incoming.params["issue_number"]))
        if issue is None:
            raise FakeGitHubError(404, "Not Found")
        return repo, issue

    async def _create_issue(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        fields = incoming.json
        labels = [lab if isinstance(lab, str) else lab["name"] for lab in fields.get("labels", [])]
        number = self.add_issue(
            repo,
            title=str(fields["title"]),
            body=fields.get("body"),
            author=f"{self.app_slug}[bot]",
            labels=labels,
        )
        data = self._issue_json(repo, repo.issues[number])
        return Reply(201, data, {"Location": data["url"]})

    async def _get_issue(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        return Reply(200, self._issue_json(repo, issue))

    async def _update_issue(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        fields = incoming.json or {}
        if fields.get("title") is not None:
            issue.title = str(fields["title"])
        if "body" in fields:
            issue.body = fields["body"]
        if fields.get("state") is not None and fields["state"] != issue.state:
            issue.state = fields["state"]
            issue.closed_at = self.clock() if issue.state == "closed" else None
            issue.state_reason = fields.get("state_reason") or (
                "completed" if issue.state == "closed" else "reopened"
            )
        if fields.get("labels") is not None:
            names = [lab if isinstance(lab, str) else lab["name"] for lab in fields["labels"]]
            issue.labels = names
        issue.updated_at = self.clock()
        return Reply(200, self._issue_json(repo, issue))

    async def _list_issues(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        state = incoming.query.get("state", "open")
        wanted = [n for n in incoming.query.get("labels", "").split(",") if n]
        issues = [
            i
            for i in sorted(repo.issues.values(), key=lambda i: i.number, reverse=True)
            if (state == "all" or i.state == state)
            and all(w.lower() in {lab.lower() for lab in i.labels} for w in wanted)
            and ("creator" not in incoming.query or i.author == incoming.query["creator"])
        ]
        chunk, headers = self._page(incoming, [self._issue_json(repo, i) for i in issues])
        return Reply(200, chunk, headers)

    def _comment_json(self, repo: Repo, comment: Comment) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{repo.full_name}"
        return {
            "id": comment.id,
            "node_id": f"IC_{comment.id}",
            "url": f"{api}/issues/comments/{comment.id}",
            "html_url": (
                f"https://github.com/{repo.full_name}/issues/{comment.issue_number}"
                f"#issuecomment-{comment.id}"
            ),
            "body": comment.body,
            "user": self._user(comment.author),
            "created_at": _iso(comment.created_at),
            "updated_at": _iso(comment.updated_at),
            "issue_url": f"{api}/issues/{comment.issue_number}",
            "author_association": "NONE" if comment.author.endswith("[bot]") else "CONTRIBUTOR",
        }

    async def _create_comment(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        comment_id = self.add_comment(repo, issue.number, incoming.json["body"], self._bot_login)
        data = self._comment_json(repo, repo.comments[comment_id])
        return Reply(201, data, {"Location": data["url"]})

    @property
    def _bot_login(self) -> str:
        return f"{self.app_slug}[bot]"

    async def _list_comments(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        items = [
            self._comment_json(repo, c)
            for c in sorted(repo.comments.values(), key=lambda c: c.id)
            if c.issue_number == issue.number
        ]
        chunk, headers = self._page(incoming, items)
        return Reply(200, chunk, headers)

    def _comment_for(self, incoming: Incoming) -> tuple[Repo, Comment]:
        repo = self._repo_for(incoming)
        comment = repo.comments.get(int(incoming.params["comment_id"]))
        if comment is None:
            raise FakeGitHubError(404, "Not Found")
        return repo, comment

    async def _get_comment(self, incoming: Incoming) -> Reply:
        repo, comment = self._comment_for(incoming)
        return Reply(200, self._comment_json(repo, comment))

    async def _update_comment(self, incoming: Incoming) -> Reply:
        repo, comment = self._comment_for(incoming)
        comment.body = incoming.json["body"]
        comment.updated_at = self.clock()
        return Reply(200, self._comment_json(repo, comment))

    async def _add_labels(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        payload = incoming.json
        raw = payload.get("labels", []) if isinstance(payload, dict) else payload or []
        names = [lab if isinstance(lab, str) else lab["name"] for lab in raw]
        for name in names:
            self.add_label(repo, name)
            if name.lower() not in {lab.lower() for lab in issue.labels}:
                issue.labels.append(name)
        labels = [self._label_json(repo, self.add_label(repo, n)) for n in issue.labels]
        return Reply(200, labels)

    async def _remove_label(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        name = incoming.params["name"]
        kept = [lab for lab in issue.labels if lab.lower() != name.lower()]
        if len(kept) == len(issue.labels):
            raise FakeGitHubError(404, "Label does not exist")
        issue.labels = kept
        return Reply(200, [self._label_json(repo, self.add_label(repo, n)) for n in kept])

    async def _create_label(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        fields = incoming.json
        if fields["name"].lower() in repo.labels:
            raise FakeGitHubError(422, "Validation Failed")
        label = self.add_label(repo, fields["name"], fields.get("color", "ededed"))
        label.description = fields.get("description")
        data = self._label_json(repo, label)
        return Reply(201, data, {"Location": data["url"]})

    async def _get_label(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        label = repo.labels.get(incoming.params["name"].lower())
        if label is None:
            raise FakeGitHubError(404, "Not Found")
        return Reply(200, self._label_json(repo, label))

    async def _search_issues(self, incoming: Incoming) -> Reply:
        terms = incoming.query["q"].split()
        repos = [
            r
            for r in self.repos.values()
            if r.installation_id == incoming.installation_id
            and all(
                r.full_name.lower() == t.split(":", 1)[1].lower()
                for t in terms
                if t.startswith("repo:")
            )
        ]
        found: list[tuple[Repo, Issue]] = []
        for repo in repos:
            for issue in repo.issues.values():
                if _matches(issue, terms):
                    found.append((repo, issue))
        found.sort(key=lambda pair: pair[1].created_at, reverse=True)
        items = []
        for repo, issue in found:
            item = self._issue_json(repo, issue)
            item["score"] = 1.0
            for gone in ("closed_by", "sub_issues_summary", "issue_dependencies_summary"):
                item.pop(gone, None)
            items.append(item)
        chunk, _ = self._page(incoming, items)
        body = {
            "total_count": len(items),
            "incomplete_results": False,
            "items": chunk,
            "search_type": "lexical",
        }
        return Reply(200, body)


def _matches(issue: Issue, terms: list[str]) -> bool:
    text = f"{issue.title}\n{issue.body or ''}".lower()
    for term in terms:
        key, sep, value = term.partition(":")
        if not sep:
            if term.lower() not in text:
                return False
            continue
        value = value.strip('"')
        checks = {
            "is": lambda v: {
                "pr": issue.is_pull,
                "issue": not issue.is_pull,
                "open": issue.state == "open",
                "closed": issue.state == "closed",
            }.get(v, True),
            "type": lambda v: issue.is_pull == (v == "pr"),
            "state": lambda v: issue.state == v,
            "label": lambda v: v.lower() in {lab.lower() for lab in issue.labels},
            "author": lambda v: issue.author == v,
        }
        check = checks.get(key)
        if check is not None and not check(value):
            return False
    return True


def _b64_lines(data: bytes) -> str:
    # GitHub wraps base64 content at 60 characters; clients must cope with the newlines.
    encoded = base64.b64encode(data).decode()
    return "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60)) + "\n"


def _parse_time(value: str | None) -> datetime | None:
    if value is None:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


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


__all__ = ["Call", "FakeGitHub", "FakeGitHubError", "is_binary"]
