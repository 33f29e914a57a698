"""The fake GitHub's REST operations, one method per operationId, over the in-memory model."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from multidict import MultiDict

from tests.support.fakes import github_openapi as oa
from tests.support.fakes.github_http import FakeGitHubError, Handler, Incoming, Reply, iso
from tests.support.fakes.github_model import CheckRun, Comment, Issue, Pull, Repo

if TYPE_CHECKING:
    from tests.support.fakes.github_server import FakeGitHub
    from tests.support.fakes.github_shapes import Shapes

PER_PAGE_DEFAULT = 30
PER_PAGE_MAX = 100


class RestHandlers:
    """Operation handlers; each raises FakeGitHubError for GitHub's error answers."""

    def __init__(self, fake: FakeGitHub, shapes: Shapes) -> None:
        self.fake = fake
        self.shapes = shapes

    def _repo_for(self, incoming: Incoming) -> Repo:
        repo = self.fake.repos.get(f"{incoming.params['owner']}/{incoming.params['repo']}".lower())
        # GitHub hides repositories the installation cannot see behind a 404.
        if repo is None or repo.installation_id != incoming.installation_id:
            raise FakeGitHubError(404, "Not Found")
        return repo

    def _page(self, incoming: Incoming, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
        per_page = min(PER_PAGE_MAX, int(incoming.query.get("per_page", PER_PAGE_DEFAULT)))
        page = max(1, int(incoming.query.get("page", 1)))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers: dict[str, str] = {}
        if page * per_page < len(items):
            query = MultiDict(incoming.query)
            query["page"] = str(page + 1)
            path = incoming.request.rel_url.raw_path
            headers["Link"] = (
                f'<{self.fake.origin}{path}?{urlencode(list(query.items()))}>; rel="next"'
            )
        return chunk, headers

    def table(self) -> dict[str, Handler]:
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
            "repos/create-commit-status": self._create_status,
            "repos/list-commit-statuses-for-ref": self._list_statuses,
            "repos/get-combined-status-for-ref": self._combined_status,
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
        if installation_id not in self.fake.installations:
            raise FakeGitHubError(404, "Not Found")
        token = self.fake.issue_token(installation_id)
        body = {
            "token": token,
            "expires_at": iso(self.fake.tokens[token].expires_at),
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
        return Reply(200, self.shapes.app_json())

    async def _list_installations(self, incoming: Incoming) -> Reply:
        items = [self.shapes.installation_json(i) for i in self.fake.installations.values()]
        chunk, headers = self._page(incoming, items)
        return Reply(200, chunk, headers)

    async def _get_repo_installation(self, incoming: Incoming) -> Reply:
        repo = self.fake.repos.get(f"{incoming.params['owner']}/{incoming.params['repo']}".lower())
        if repo is None:
            raise FakeGitHubError(404, "Not Found")
        return Reply(
            200, self.shapes.installation_json(self.fake.installations[repo.installation_id])
        )

    async def _get_repo(self, incoming: Incoming) -> Reply:
        return Reply(200, self.shapes.full_repo(self._repo_for(incoming)))

    async def _get_branch(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        name = incoming.params["branch"]
        sha = repo.branches.get(name)
        if sha is None:
            raise FakeGitHubError(404, "Branch not found")
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
        # `fake.require_checks(repo, branch, ...)`: the protection GitHub then shows.
        required = repo.required_checks.get(name, ())
        data: dict[str, Any] = oa.example("branch-get")
        data.update(
            name=name,
            commit=self.shapes.commit_json(repo, sha),
            _links={"html": f"https://github.com/{repo.full_name}/tree/{name}", "self": api},
            protected=bool(required),
            protection={
                "enabled": bool(required),
                "required_status_checks": {
                    "enforcement_level": "everyone" if required else "off",
                    "contexts": list(required),
                    "checks": [{"context": check, "app_id": None} for check in required],
                },
            },
            protection_url=f"{api}/branches/{name}/protection",
        )
        more = dict(repo.branch_protection.get(name, {}))
        data["protection"]["required_status_checks"]["strict"] = bool(more.pop("strict", False))
        data["protection"].update(more)
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
            self.fake.errors.append(f"fake does not list directories (GET contents/{path})")
            raise FakeGitHubError(404, "Not Found (directory listing not implemented by the fake)")
        data = repo.blobs[entry.sha]
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
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
                "url": f"{self.fake.base_url}/repos/{repo.full_name}/git/blobs/{sha}",
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
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
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
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
        person = self.shapes.git_person(commit.author, commit.date)
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
                "verification": self.shapes.verification(),
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
        return Reply(200, self.shapes.commit_json(repo, sha, with_files=True))

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
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
        basehead = incoming.params["basehead"]
        return Reply(
            200,
            {
                "url": f"{api}/compare/{basehead}",
                "html_url": f"{html}/compare/{basehead}",
                "permalink_url": (
                    f"{html}/compare/{repo.owner}:{base[:7]}...{repo.owner}:{head[:7]}"
                ),
                "diff_url": f"{html}/compare/{basehead}.diff",
                "patch_url": f"{html}/compare/{basehead}.patch",
                "base_commit": self.shapes.commit_json(repo, base),
                "merge_base_commit": self.shapes.commit_json(repo, merge_base),
                "status": status,
                "ahead_by": len(ahead),
                "behind_by": len(behind),
                "total_commits": len(ahead),
                # As GitHub documents: unpaged, the last 250 commits; at most 300 files.
                "commits": [self.shapes.commit_json(repo, sha) for sha in ahead[-250:]],
                "files": [self.shapes.diff_entry(repo, head, c) for c in changes[:300]],
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
            self.fake.errors.append("pulls/get diff media type is not in the description")
        return Reply(200, self.shapes.pull_json(repo, pull))

    async def _list_pulls(self, incoming: Incoming) -> Reply:
        self.fake.errors.append(
            "pulls/list is not implemented by the fake (its example is invalid)"
        )
        raise FakeGitHubError(404, "Not Found (not implemented by the fake)")

    async def _list_pull_files(self, incoming: Incoming) -> Reply:
        repo, pull = self._pull_for(incoming)
        merge_base = repo.merge_base(pull.base_sha, pull.head_sha)
        changes = repo.diff(merge_base, pull.head_sha)
        items = [self.shapes.diff_entry(repo, pull.head_sha, c) for c in changes]
        chunk, headers = self._page(incoming, items)
        return Reply(200, chunk, headers)

    async def _list_pull_commits(self, incoming: Incoming) -> Reply:
        repo, pull = self._pull_for(incoming)
        items = [
            self.shapes.commit_json(repo, sha)
            for sha in repo.commits_between(pull.base_sha, pull.head_sha)
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
            run.completed_at = run.completed_at or self.fake.clock()
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
            id=self.fake._new_id(),
            head_sha=fields["head_sha"],
            name=fields["name"],
            status="queued",
            conclusion=None,
            started_at=self.fake.clock(),
            completed_at=None,
            details_url=None,
            external_id=None,
            output={},
            check_suite_id=self._suite_id(fields["head_sha"]),
            app_id=self.fake.app_id,
        )
        self._apply_check_fields(run, fields)
        repo.check_runs[run.id] = run
        return Reply(201, self.shapes.check_run_json(repo, run))

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
        return Reply(200, self.shapes.check_run_json(repo, run))

    async def _get_check_run(self, incoming: Incoming) -> Reply:
        repo, run = self._run_for(incoming)
        return Reply(200, self.shapes.check_run_json(repo, run))

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
        chunk, headers = self._page(incoming, [self.shapes.check_run_json(repo, r) for r in runs])
        return Reply(200, {"total_count": len(runs), "check_runs": chunk}, headers)

    async def _create_status(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        sha = incoming.params["sha"]
        if sha not in repo.commits:
            raise FakeGitHubError(422, "No commit found for SHA: " + sha)
        fields = incoming.json
        status = self.fake.add_status(
            repo,
            sha,
            str(fields.get("context") or "default"),
            str(fields["state"]),
            description=fields.get("description"),
            creator=f"{self.fake.app_slug}[bot]",
        )
        status.target_url = fields.get("target_url")
        data = self.shapes.status_json(repo, status)
        return Reply(201, data, {"Location": data["url"]})

    async def _list_statuses(self, incoming: Incoming) -> Reply:
        """Every status of the ref's commit, newest first (not only each context's latest)."""
        repo = self._repo_for(incoming)
        sha = self._resolve(repo, incoming.params["ref"])
        statuses = sorted((s for s in repo.statuses if s.sha == sha), key=lambda s: -s.id)
        chunk, headers = self._page(incoming, [self.shapes.status_json(repo, s) for s in statuses])
        return Reply(200, chunk, headers)

    async def _combined_status(self, incoming: Incoming) -> Reply:
        """The latest status of each context and their combination, as GitHub computes it:
        failure when any is error or failure, pending when any is pending or none exist."""
        repo = self._repo_for(incoming)
        sha = self._resolve(repo, incoming.params["ref"])
        latest = repo.latest_statuses(sha)
        states = {s.state for s in latest}
        combined = (
            "failure"
            if states & {"error", "failure"}
            else "pending"
            if not latest or "pending" in states
            else "success"
        )
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
        statuses = []
        for status in latest:
            item = self.shapes.status_json(repo, status)
            del item["creator"]
            item["url"] = f"{api}/statuses/{sha}"
            item["required"] = None
            statuses.append(item)
        chunk, headers = self._page(incoming, statuses)
        body = {
            "state": combined,
            "statuses": chunk,
            "sha": sha,
            "total_count": len(latest),
            "repository": self.shapes.short_repo(repo),
            "commit_url": f"{api}/commits/{sha}",
            "url": f"{api}/commits/{sha}/status",
        }
        return Reply(200, body, headers)

    async def _get_permission(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        login = incoming.params["username"]
        permission = repo.permissions.get(login)
        if permission is None:
            if login not in self.fake.known_users and login != repo.owner:
                raise FakeGitHubError(404, f"{login} is not a user")
            permission = "admin" if login == repo.owner else "none"
        # The API folds maintain into write and triage into read; role_name keeps the detail.
        legacy = {"maintain": "write", "triage": "read"}.get(permission, permission)
        user = self.shapes.user(login)
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
        number = self.fake.add_issue(
            repo,
            title=str(fields["title"]),
            body=fields.get("body"),
            author=f"{self.fake.app_slug}[bot]",
            labels=labels,
        )
        data = self.shapes.issue_json(repo, repo.issues[number])
        return Reply(201, data, {"Location": data["url"]})

    async def _get_issue(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        return Reply(200, self.shapes.issue_json(repo, issue))

    async def _update_issue(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        fields = incoming.json or {}
        if fields.get("title") is not None:
            issue.title = str(fields["title"])
        if "body" in fields:
            issue.body = fields["body"]
        if fields.get("state") is not None and fields["state"] != issue.state:
            issue.state = fields["state"]
            issue.closed_at = self.fake.clock() if issue.state == "closed" else None
            issue.state_reason = fields.get("state_reason") or (
                "completed" if issue.state == "closed" else "reopened"
            )
        if fields.get("labels") is not None:
            names = [lab if isinstance(lab, str) else lab["name"] for lab in fields["labels"]]
            issue.labels = names
        issue.updated_at = self.fake.clock()
        return Reply(200, self.shapes.issue_json(repo, issue))

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
        chunk, headers = self._page(incoming, [self.shapes.issue_json(repo, i) for i in issues])
        return Reply(200, chunk, headers)

    async def _create_comment(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        comment_id = self.fake.add_comment(
            repo, issue.number, incoming.json["body"], self._bot_login
        )
        data = self.shapes.comment_json(repo, repo.comments[comment_id])
        return Reply(201, data, {"Location": data["url"]})

    @property
    def _bot_login(self) -> str:
        return f"{self.fake.app_slug}[bot]"

    async def _list_comments(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        items = [
            self.shapes.comment_json(repo, c)
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
        return Reply(200, self.shapes.comment_json(repo, comment))

    async def _update_comment(self, incoming: Incoming) -> Reply:
        repo, comment = self._comment_for(incoming)
        comment.body = incoming.json["body"]
        comment.updated_at = self.fake.clock()
        return Reply(200, self.shapes.comment_json(repo, comment))

    async def _add_labels(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        payload = incoming.json
        raw = payload.get("labels", []) if isinstance(payload, dict) else payload or []
        names = [lab if isinstance(lab, str) else lab["name"] for lab in raw]
        for name in names:
            self.fake.add_label(repo, name)
            if name.lower() not in {lab.lower() for lab in issue.labels}:
                issue.labels.append(name)
        labels = [self.shapes.label_json(repo, self.fake.add_label(repo, n)) for n in issue.labels]
        return Reply(200, labels)

    async def _remove_label(self, incoming: Incoming) -> Reply:
        repo, issue = self._issue_for(incoming)
        name = incoming.params["name"]
        kept = [lab for lab in issue.labels if lab.lower() != name.lower()]
        if len(kept) == len(issue.labels):
            raise FakeGitHubError(404, "Label does not exist")
        issue.labels = kept
        return Reply(
            200, [self.shapes.label_json(repo, self.fake.add_label(repo, n)) for n in kept]
        )

    async def _create_label(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        fields = incoming.json
        if fields["name"].lower() in repo.labels:
            raise FakeGitHubError(422, "Validation Failed")
        label = self.fake.add_label(repo, fields["name"], fields.get("color", "ededed"))
        label.description = fields.get("description")
        data = self.shapes.label_json(repo, label)
        return Reply(201, data, {"Location": data["url"]})

    async def _get_label(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        label = repo.labels.get(incoming.params["name"].lower())
        if label is None:
            raise FakeGitHubError(404, "Not Found")
        return Reply(200, self.shapes.label_json(repo, label))

    async def _search_issues(self, incoming: Incoming) -> Reply:
        terms = incoming.query["q"].split()
        repos = [
            r
            for r in self.fake.repos.values()
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
            item = self.shapes.issue_json(repo, issue)
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


def _qualifier_holds(issue: Issue, key: str, value: str) -> bool:
    """One `key:value` search qualifier; unknown qualifiers do not filter."""
    if key == "is":
        facts = {
            "pr": issue.is_pull,
            "issue": not issue.is_pull,
            "open": issue.state == "open",
            "closed": issue.state == "closed",
        }
        return facts.get(value, True)
    if key == "type":
        return issue.is_pull == (value == "pr")
    if key == "state":
        return issue.state == value
    if key == "label":
        return value.lower() in {lab.lower() for lab in issue.labels}
    if key == "author":
        return issue.author == value
    return True


def _matches(issue: Issue, terms: list[str]) -> bool:
    text = f"{issue.title}\n{issue.body or ''}".lower()
    for term in terms:
        key, sep, value = term.partition(":")
        if not sep:
            if term.lower() not in text:
                return False
        elif not _qualifier_holds(issue, key, value.strip('"')):
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
