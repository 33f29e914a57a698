"""JSON bodies of the fake GitHub, shaped per GitHub's description.

Where GitHub's `components.examples` give a complete object, it is the template and the fields the
fake models are overwritten; the answer validation in the server proves the result still fits.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from tests.support.fakes import github_openapi as oa
from tests.support.fakes.github_http import iso
from tests.support.fakes.github_model import (
    CheckRun,
    Comment,
    CommitStatus,
    FileChange,
    Issue,
    Label,
    Pull,
    Repo,
    Review,
)

if TYPE_CHECKING:
    from tests.support.fakes.github_server import FakeGitHub, Installation


class Shapes:
    """Builds response bodies from the fake's state."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake

    def user(self, login: str) -> dict[str, Any]:
        user: dict[str, Any] = oa.example("issue-comment")["user"]
        uid = self.fake.user_id(login)
        for key, value in list(user.items()):
            if isinstance(value, str):
                user[key] = value.replace("octocat", login)
        user.update(
            login=login,
            id=uid,
            node_id=f"U_{uid}",
            url=f"{self.fake.base_url}/users/{login}",
            type="Bot" if login.endswith("[bot]") else "User",
            site_admin=False,
        )
        return user

    def repo_json(self, repo: Repo, template: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in template.items():
            if isinstance(value, str):
                value = value.replace("octocat/Hello-World", repo.full_name).replace(
                    "https://api.github.com", self.fake.base_url
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
            owner=self.user(repo.owner),
            private=repo.private,
            visibility="private" if repo.private else "public",
            fork=False,
            default_branch=repo.default_branch,
            html_url=f"https://github.com/{repo.full_name}",
            url=f"{self.fake.base_url}/repos/{repo.full_name}",
        )
        return out

    def full_repo(self, repo: Repo) -> dict[str, Any]:
        out = self.repo_json(repo, oa.example("full-repository-default-response"))
        out["language"] = None
        out["allow_merge_commit"] = "merge" in repo.merge_methods
        out["allow_squash_merge"] = "squash" in repo.merge_methods
        out["allow_rebase_merge"] = "rebase" in repo.merge_methods
        return out

    def short_repo(self, repo: Repo) -> dict[str, Any]:
        return self.repo_json(repo, oa.example("pull-request")["head"]["repo"])

    def app_json(self, app_id: int | None = None, slug: str | None = None) -> dict[str, Any]:
        """The App under test, or another app (a CI system) by its id and slug."""
        app: dict[str, Any] = oa.example("integration")
        app_id = self.fake.app_id if app_id is None else app_id
        slug = slug or self.fake.app_slug
        app.update(
            id=app_id,
            slug=slug,
            name=slug,
            node_id=f"A_{app_id}",
            client_id=f"Iv1.{app_id}",
            owner=self.user("octo"),
        )
        return app

    def installation_json(self, installation: Installation) -> dict[str, Any]:
        data: dict[str, Any] = oa.example("base-installation-items")[0]
        data.update(
            id=installation.id,
            app_id=self.fake.app_id,
            app_slug=self.fake.app_slug,
            account=self.user(installation.account),
            access_tokens_url=f"{self.fake.base_url}/app/installations/{installation.id}/access_tokens",
            repositories_url=f"{self.fake.base_url}/installation/repositories",
            repository_selection="all",
        )
        return data

    def git_person(self, login: str, when: datetime) -> dict[str, Any]:
        return {"name": login, "email": f"{login}@users.noreply.github.com", "date": iso(when)}

    def verification(self) -> dict[str, Any]:
        return {
            "verified": False,
            "reason": "unsigned",
            "signature": None,
            "payload": None,
            "verified_at": None,
        }

    def commit_json(self, repo: Repo, sha: str, with_files: bool = False) -> dict[str, Any]:
        commit = repo.commits[sha]
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
        person = self.git_person(commit.author, commit.date)
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
                "verification": self.verification(),
            },
            "author": self.user(commit.author),
            "committer": self.user(commit.author),
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
            data["files"] = [self.diff_entry(repo, sha, c) for c in changes]
            added = sum(c.additions for c in changes)
            removed = sum(c.deletions for c in changes)
            data["stats"] = {"additions": added, "deletions": removed, "total": added + removed}
        return data

    def diff_entry(self, repo: Repo, ref: str, change: FileChange) -> dict[str, Any]:
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
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

    def label_json(self, repo: Repo, label: Label) -> dict[str, Any]:
        return {
            "id": label.id,
            "node_id": f"LA_{label.id}",
            "url": f"{self.fake.base_url}/repos/{repo.full_name}/labels/{label.name}",
            "name": label.name,
            "description": label.description,
            "color": label.color,
            "default": False,
        }

    def issue_json(self, repo: Repo, issue: Issue) -> dict[str, Any]:
        data: dict[str, Any] = oa.example("issue")
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
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
            user=self.user(issue.author),
            labels=[
                self.label_json(repo, self.fake.add_label(repo, name)) for name in issue.labels
            ],
            assignee=None,
            assignees=[],
            milestone=None,
            locked=False,
            active_lock_reason=None,
            comments=comments,
            closed_at=iso(issue.closed_at),
            created_at=iso(issue.created_at),
            updated_at=iso(issue.updated_at),
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
                "merged_at": iso(pull.merged_at),
            }
            data["draft"] = pull.draft
        else:
            data.pop("pull_request", None)
            data.pop("draft", None)
        return data

    def pull_json(self, repo: Repo, pull: Pull) -> dict[str, Any]:
        issue = repo.issues[pull.number]
        data: dict[str, Any] = oa.example("pull-request")
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
        html = f"https://github.com/{repo.full_name}"
        short_repo = self.short_repo(repo)
        mergeable, state = self.fake.merges.mergeability(repo, pull)
        changes = repo.diff(repo.merge_base(pull.base_sha, pull.head_sha), pull.head_sha)
        for side, ref, sha in (
            ("head", pull.head_ref, pull.head_sha),
            ("base", pull.base_ref, pull.base_sha),
        ):
            data[side] = {
                "label": f"{repo.owner}:{ref}",
                "ref": ref,
                "sha": sha,
                "user": self.user(repo.owner),
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
            user=self.user(issue.author),
            body=issue.body,
            labels=[self.label_json(repo, self.fake.add_label(repo, n)) for n in issue.labels],
            milestone=None,
            active_lock_reason=None,
            created_at=iso(issue.created_at),
            updated_at=iso(issue.updated_at),
            closed_at=iso(issue.closed_at),
            assignee=None,
            assignees=[],
            requested_reviewers=[],
            requested_teams=[],
            _links={k: {"href": v} for k, v in links.items()},
            author_association="CONTRIBUTOR",
            auto_merge=None,
            draft=pull.draft,
            merged=pull.merged,
            mergeable=mergeable,
            rebaseable=mergeable,
            mergeable_state=state,
            merged_at=iso(pull.merged_at),
            merge_commit_sha=pull.merge_commit_sha,
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

    def review_json(self, repo: Repo, pull: Pull, review: Review) -> dict[str, Any]:
        data: dict[str, Any] = oa.example("pull-request-review")
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
        html = f"https://github.com/{repo.full_name}/pull/{pull.number}"
        data.update(
            id=review.id,
            node_id=f"PRR_{review.id}",
            user=self.user(review.login),
            body=review.body,
            state=review.state,
            html_url=f"{html}#pullrequestreview-{review.id}",
            pull_request_url=f"{api}/pulls/{pull.number}",
            _links={"html": {"href": html}, "pull_request": {"href": f"{api}/pulls/{pull.number}"}},
            submitted_at=iso(review.submitted_at),
            commit_id=review.commit_id,
            author_association="COLLABORATOR",
        )
        return data

    def check_run_json(self, repo: Repo, run: CheckRun) -> dict[str, Any]:
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
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
            "started_at": iso(run.started_at),
            "completed_at": iso(run.completed_at),
            "output": output,
            "name": run.name,
            "check_suite": {"id": run.check_suite_id},
            "app": self.app_json(run.app_id, run.app_slug),
            "pull_requests": pulls,
        }

    def status_json(self, repo: Repo, status: CommitStatus) -> dict[str, Any]:
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
        return {
            "url": f"{api}/statuses/{status.sha}",
            "avatar_url": None,
            "id": status.id,
            "node_id": f"SC_{status.id}",
            "state": status.state,
            "description": status.description,
            "target_url": status.target_url,
            "context": status.context,
            "created_at": iso(status.created_at),
            "updated_at": iso(status.created_at),
            "creator": self.user(status.creator),
        }

    def comment_json(self, repo: Repo, comment: Comment) -> dict[str, Any]:
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
        return {
            "id": comment.id,
            "node_id": f"IC_{comment.id}",
            "url": f"{api}/issues/comments/{comment.id}",
            "html_url": (
                f"https://github.com/{repo.full_name}/issues/{comment.issue_number}"
                f"#issuecomment-{comment.id}"
            ),
            "body": comment.body,
            "user": self.user(comment.author),
            "created_at": iso(comment.created_at),
            "updated_at": iso(comment.updated_at),
            "issue_url": f"{api}/issues/{comment.issue_number}",
            "author_association": "NONE" if comment.author.endswith("[bot]") else "CONTRIBUTOR",
        }
