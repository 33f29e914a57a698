"""The fake GitHub itself: it must refuse what GitHub refuses, and answer only what GitHub would."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import aiohttp
import gidgethub
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.github.client import GitHubApp
from tests.support.fakes.github_fixtures import APP_ID, KeyPair
from tests.support.fakes.github_model import Repo
from tests.support.fakes.github_server import VALIDATION_FAILED_STATUS, FakeGitHub

REPO = "/repos/octo/hello"


async def raw(
    session: aiohttp.ClientSession,
    fake: FakeGitHub,
    method: str,
    path: str,
    authorization: str | None = None,
    json: object = None,
) -> tuple[int, object]:
    headers = {"accept": "application/vnd.github+json", "user-agent": "test"}
    if authorization is not None:
        headers["authorization"] = authorization
    async with session.request(method, fake.base_url + path, headers=headers, json=json) as resp:
        return resp.status, await resp.json()


def app_jwt(keypair: KeyPair, **claims: object) -> str:
    now = int(datetime.now(UTC).timestamp())
    payload = {"iat": now - 60, "exp": now + 540, "iss": str(APP_ID), **claims}
    return jwt.encode(payload, keypair.private_pem, algorithm="RS256")


# -- request and answer validation ---------------------------------------------------------------


async def test_check_run_with_bad_status_is_refused_and_recorded(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    """`status: "done"` is not in the enum: the fake answers 510 and records the finding."""
    gh = await github_app.installation_client(1)
    head = fake_github.repo("octo/hello").branches["main"]
    with pytest.raises(gidgethub.GitHubBroken) as info:
        await gh.post(
            REPO + "/check-runs", data={"name": "judge", "head_sha": head, "status": "done"}
        )
    assert info.value.status_code == VALIDATION_FAILED_STATUS
    assert len(fake_github.errors) == 1
    assert "checks/create" in fake_github.errors[0]
    assert fake_github.repo("octo/hello").check_runs == {}
    fake_github.errors.clear()


async def test_completed_check_run_without_conclusion_is_refused(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    """GitHub's `oneOf` demands a conclusion once a run is completed; the fake enforces it."""
    gh = await github_app.installation_client(1)
    head = fake_github.repo("octo/hello").branches["main"]
    with pytest.raises(gidgethub.GitHubBroken):
        await gh.post(
            REPO + "/check-runs",
            data={"name": "judge", "head_sha": head, "status": "completed"},
        )
    assert len(fake_github.errors) == 1
    fake_github.errors.clear()


async def test_in_progress_check_run_round_trips(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    """`conclusion: null` on an in-progress run is accepted (nullable enum), then completed."""
    gh = await github_app.installation_client(1)
    head = fake_github.repo("octo/hello").branches["main"]
    run = await gh.post(
        REPO + "/check-runs",
        data={"name": "judge", "head_sha": head, "status": "in_progress"},
    )
    assert run["conclusion"] is None
    done = await gh.patch(
        f"{REPO}/check-runs/{run['id']}",
        data={"conclusion": "neutral", "output": {"title": "Judge", "summary": "ok"}},
    )
    assert (done["status"], done["conclusion"]) == ("completed", "neutral")
    listed = await gh.getitem(f"{REPO}/commits/{head}/check-runs")
    assert [r["id"] for r in listed["check_runs"]] == [run["id"]]


async def test_invalid_graphql_query_is_refused_and_recorded(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    """A query asking for a field the schema lacks never executes."""
    with pytest.raises(gidgethub.GitHubBroken):
        await github_app.graphql(
            1, 'query { repository(owner: "octo", name: "hello") { noSuchField } }'
        )
    assert len(fake_github.errors) == 1
    assert "noSuchField" in fake_github.errors[0]
    fake_github.errors.clear()


async def test_path_outside_the_description_is_recorded(
    github_session: aiohttp.ClientSession, fake_github: FakeGitHub
) -> None:
    """An endpoint the bot is not meant to use is a finding, not a silent 404."""
    token = fake_github.issue_token(1)
    status, _ = await raw(github_session, fake_github, "GET", REPO + "/releases", f"token {token}")
    assert status == VALIDATION_FAILED_STATUS
    assert "not in the description" in fake_github.errors[0]
    fake_github.errors.clear()


async def test_unencoded_slash_in_content_path_is_refused(
    github_session: aiohttp.ClientSession, fake_github: FakeGitHub
) -> None:
    """`{path}` must be percent-encoded; a raw `/` inside it matches no operation."""
    token = f"token {fake_github.issue_token(1)}"
    status, _ = await raw(github_session, fake_github, "GET", REPO + "/contents/a/b.md", token)
    assert status == VALIDATION_FAILED_STATUS
    fake_github.errors.clear()
    fake_github.add_commit("octo/hello", {"a/b.md": "x"})
    status, body = await raw(github_session, fake_github, "GET", REPO + "/contents/a%2Fb.md", token)
    assert status == 200
    assert isinstance(body, dict)
    assert base64.b64decode(body["content"]) == b"x"


def test_inject_rejects_unknown_operation(fake_github: FakeGitHub) -> None:
    """A typo in a fault's operation id fails loudly instead of never firing."""
    with pytest.raises(ValueError, match="not an operation"):
        fake_github.inject("repos/gte", status=500)


async def test_injected_fault_fires_n_times_then_stops(
    github_session: aiohttp.ClientSession, fake_github: FakeGitHub
) -> None:
    """`times=2` fails exactly the next two calls of that operation."""
    token = f"token {fake_github.issue_token(1)}"
    fake_github.inject("repos/get", status=502, times=2)
    statuses = [(await raw(github_session, fake_github, "GET", REPO, token))[0] for _ in range(3)]
    assert statuses == [502, 502, 200]
    assert [c.status for c in fake_github.calls if c.operation_id == "repos/get"] == statuses


# -- authentication ----------------------------------------------------------------------------


async def test_app_endpoints_require_a_valid_jwt(
    github_session: aiohttp.ClientSession, fake_github: FakeGitHub, github_keypair: KeyPair
) -> None:
    """No credentials, an installation token, a foreign key, a wrong issuer, a too-long life,
    or an expired JWT: all 401. A good JWT: 200."""
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    foreign = KeyPair(
        other_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode(),
        other_key.public_key(),
    )
    now = int(datetime.now(UTC).timestamp())
    refused = [
        None,
        f"token {fake_github.issue_token(1)}",
        f"Bearer {app_jwt(foreign)}",
        f"Bearer {app_jwt(github_keypair, iss='999')}",
        f"Bearer {app_jwt(github_keypair, exp=now + 3600)}",
        f"Bearer {app_jwt(github_keypair, iat=now - 1200, exp=now - 600)}",
        f"Bearer {app_jwt(github_keypair, iat=now + 300)}",
    ]
    for authorization in refused:
        status, _ = await raw(github_session, fake_github, "GET", "/app", authorization)
        assert status == 401, authorization
    status, body = await raw(
        github_session, fake_github, "GET", "/app", f"Bearer {app_jwt(github_keypair)}"
    )
    assert status == 200
    assert isinstance(body, dict) and body["id"] == APP_ID


async def test_repo_endpoints_require_an_installation_token(
    github_session: aiohttp.ClientSession, fake_github: FakeGitHub, github_keypair: KeyPair
) -> None:
    """The App JWT, an unknown token and an expired token are refused with 401."""
    expired = fake_github.issue_token(1, lifetime=timedelta(seconds=-1))
    for authorization in (
        None,
        f"Bearer {app_jwt(github_keypair)}",
        "token ghs_made_up",
        f"token {expired}",
    ):
        status, body = await raw(github_session, fake_github, "GET", REPO, authorization)
        assert status == 401
        assert isinstance(body, dict) and "message" in body


async def test_other_installations_cannot_see_the_repo(
    github_session: aiohttp.ClientSession, fake_github: FakeGitHub
) -> None:
    """A token of installation 2 gets 404 for installation 1's repository, as on GitHub."""
    fake_github.add_installation(2, "someone")
    token = f"token {fake_github.issue_token(2)}"
    status, _ = await raw(github_session, fake_github, "GET", REPO, token)
    assert status == 404


async def test_access_token_has_expiry(
    github_session: aiohttp.ClientSession, fake_github: FakeGitHub, github_keypair: KeyPair
) -> None:
    """The token endpoint answers a usable token with its `expires_at`."""
    status, body = await raw(
        github_session,
        fake_github,
        "POST",
        "/app/installations/1/access_tokens",
        f"Bearer {app_jwt(github_keypair)}",
    )
    assert status == 201
    assert isinstance(body, dict)
    expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert timedelta(minutes=59) < expires - datetime.now(UTC) <= timedelta(hours=1)
    assert body["token"] in fake_github.tokens


# -- the model -----------------------------------------------------------------------------------


def test_object_ids_match_real_git() -> None:
    """Blob, tree and commit ids equal what `git` computes for the same content (checked once
    against git 2.x: `git hash-object`, `git commit` with fixed dates)."""
    repo = Repo(1, "o", "n", "main", False, 1)
    tree = repo.store_tree({"docs/x.md": b"a\n", "z.md": b"b\n", "docs.md": b"c\n"})
    when = datetime.fromtimestamp(1_700_000_000, UTC)
    commit = repo.store_commit(tree, (), "msg", "alice", when)
    assert repo.store_blob(b"hello\nworld\n") == "94954abda49de8615a048f8d2e64b5de848e27a1"
    assert tree == "f76b205245026b52719054ef1ec3f10dda77e156"
    assert commit == "2e75d80182df7ca04e858b7323548ca779b5462c"


async def test_every_implemented_operation_answers_per_description(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    """A walk through every endpoint the bot uses; the fixture then asserts no findings."""
    repo = fake_github.repo("octo/hello")
    base = repo.branches["main"]
    head = fake_github.add_commit(
        repo,
        {"docs/guide.md": "hello\n", "README.md": "# hello\nmore\n", "logo.bin": b"\0\1"},
        parents=[base],
        branch="feature",
        message="Add guide\n\nCo-authored-by: model-a",
        author="agent",
    )
    number = fake_github.add_pull(repo, None, head, "main", head_ref="feature", author="agent")
    fake_github.set_permission(repo, "alice", "maintain")
    gh = await github_app.installation_client(1)

    assert (await gh.getitem(REPO))["default_branch"] == "main"
    assert (await gh.getitem(REPO + "/branches/main"))["commit"]["sha"] == base
    assert (await gh.getitem(REPO + "/installation"))["id"] == 1
    content = await gh.getitem(
        REPO + "/contents/{path}{?ref}", {"path": "docs/guide.md", "ref": head}
    )
    assert base64.b64decode(content["content"]) == b"hello\n"
    tree = await gh.getitem(REPO + "/git/trees/{sha}?recursive=1", {"sha": head})
    paths = {e["path"]: e for e in tree["tree"]}
    assert set(paths) == {"README.md", "docs", "docs/guide.md", "logo.bin"}
    blob = await gh.getitem(REPO + "/git/blobs/" + paths["README.md"]["sha"])
    assert base64.b64decode(blob["content"]) == b"# hello\nmore\n"
    assert (await gh.getitem(REPO + "/git/commits/" + head))["parents"][0]["sha"] == base
    commit = await gh.getitem(REPO + "/commits/feature")
    assert {f["filename"] for f in commit["files"]} == {"README.md", "docs/guide.md", "logo.bin"}
    sha = await gh.getitem(REPO + "/commits/feature", accept="application/vnd.github.sha")
    assert sha == head
    diff = await gh.getitem(REPO + "/compare/main...feature", accept="application/vnd.github.diff")
    assert "+more" in diff
    compare = await gh.getitem(REPO + "/compare/main...feature")
    assert (compare["status"], compare["ahead_by"]) == ("ahead", 1)

    pull = await gh.getitem(f"{REPO}/pulls/{number}")
    assert (pull["head"]["sha"], pull["base"]["sha"], pull["user"]["login"]) == (
        head,
        base,
        "agent",
    )
    files = [f async for f in gh.getiter(f"{REPO}/pulls/{number}/files")]
    assert {(f["filename"], f["status"]) for f in files} == {
        ("README.md", "modified"),
        ("docs/guide.md", "added"),
        ("logo.bin", "added"),
    }
    assert "patch" not in next(f for f in files if f["filename"] == "logo.bin")
    commits = [c async for c in gh.getiter(f"{REPO}/pulls/{number}/commits")]
    assert [c["sha"] for c in commits] == [head]
    assert commits[0]["commit"]["message"].endswith("Co-authored-by: model-a")

    permission = await gh.getitem(REPO + "/collaborators/alice/permission")
    assert (permission["permission"], permission["role_name"]) == ("write", "maintain")

    issue = await gh.post(REPO + "/issues", data={"title": "Judge report", "labels": ["judge"]})
    assert (await gh.getitem(f"{REPO}/issues/{issue['number']}"))["title"] == "Judge report"
    assert "pull_request" in await gh.getitem(f"{REPO}/issues/{number}")
    closed = await gh.patch(f"{REPO}/issues/{issue['number']}", data={"state": "closed"})
    assert closed["state"] == "closed"
    open_issues = [i async for i in gh.getiter(REPO + "/issues")]
    assert [i["number"] for i in open_issues] == [number]

    comment = await gh.post(f"{REPO}/issues/{number}/comments", data={"body": "score: 4"})
    assert comment["user"]["login"] == "judge-bot[bot]"
    await gh.patch(f"{REPO}/issues/comments/{comment['id']}", data={"body": "score: 5"})
    assert (await gh.getitem(f"{REPO}/issues/comments/{comment['id']}"))["body"] == "score: 5"

    await gh.post(REPO + "/labels", data={"name": "judge: go", "color": "0e8a16"})
    assert (await gh.getitem(REPO + "/labels/{name}", {"name": "judge: go"}))["color"] == "0e8a16"
    labels = await gh.post(f"{REPO}/issues/{number}/labels", data={"labels": ["judge: go"]})
    assert [lab["name"] for lab in labels] == ["judge: go"]
    await gh.delete(f"{REPO}/issues/{number}/labels/{{name}}", {"name": "judge: go"})

    found = await gh.getitem("/search/issues{?q}", {"q": "repo:octo/hello is:pr is:open"})
    assert [i["number"] for i in found["items"]] == [number]


async def test_ci_of_other_apps_is_listed_as_github_lists_it(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    """Other apps' check runs and commit statuses on a commit, through the REST API."""
    head = fake_github.repo("octo/hello").branches["main"]
    fake_github.add_check_run("octo/hello", head, "tests", conclusion="failure", title="1 failed")
    fake_github.add_check_run(
        "octo/hello", head, "e2e", conclusion=None, app_slug="other", app_id=9
    )
    fake_github.add_status("octo/hello", head, "ci/build", "pending")
    fake_github.add_status("octo/hello", head, "ci/build", "error", description="runner lost")
    with pytest.raises(ValueError, match="unknown status state"):
        fake_github.add_status("octo/hello", head, "ci/x", "broken")
    gh = await github_app.installation_client(1)

    runs = await gh.getitem(REPO + "/commits/{ref}/check-runs", {"ref": head})
    by_name = {r["name"]: r for r in runs["check_runs"]}
    assert (by_name["tests"]["conclusion"], by_name["tests"]["app"]["slug"]) == ("failure", "ci")
    assert (by_name["e2e"]["status"], by_name["e2e"]["app"]["id"]) == ("in_progress", 9)
    created = await gh.post(
        REPO + "/statuses/{sha}", {"sha": head}, data={"state": "success", "context": "ci/lint"}
    )
    assert created["creator"]["login"] == "judge-bot[bot]"
    listed = [s async for s in gh.getiter(REPO + "/commits/{ref}/statuses", {"ref": "main"})]
    assert [s["state"] for s in listed] == ["success", "error", "pending"]
    combined = await gh.getitem(REPO + "/commits/{ref}/status", {"ref": head})
    assert combined["state"] == "failure"
    assert {s["context"]: s["state"] for s in combined["statuses"]} == {
        "ci/build": "error",
        "ci/lint": "success",
    }
    other = fake_github.add_commit("octo/hello", {"a.md": "a\n"})
    assert (await gh.getitem(REPO + "/commits/{ref}/status", {"ref": other}))["state"] == "pending"
    fake_github.add_status("octo/hello", other, "ci/lint", "success")
    assert (await gh.getitem(REPO + "/commits/{ref}/status", {"ref": other}))["state"] == "success"
    with pytest.raises(gidgethub.BadRequest):
        await gh.post(REPO + "/statuses/{sha}", {"sha": "f" * 40}, data={"state": "success"})


async def test_pagination_follows_link_headers(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    """45 comments come back over two pages of 30 through the Link header."""
    number = fake_github.add_issue("octo/hello")
    for i in range(45):
        fake_github.add_comment("octo/hello", number, f"c{i}")
    gh = await github_app.installation_client(1)
    comments = [c async for c in gh.getiter(f"{REPO}/issues/{number}/comments")]
    assert [c["body"] for c in comments] == [f"c{i}" for i in range(45)]
    assert fake_github.count("issues/list-comments") == 2


async def test_calls_are_recorded_by_operation(
    github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    """Each call is kept with its operation id, template and status, for counting by kind."""
    gh = await github_app.installation_client(1)
    await gh.getitem(REPO)
    kinds = [(c.method, c.operation_id, c.template, c.status) for c in fake_github.calls]
    assert kinds == [
        (
            "POST",
            "apps/create-installation-access-token",
            "/app/installations/{installation_id}/access_tokens",
            201,
        ),
        ("GET", "repos/get", "/repos/{owner}/{repo}", 200),
    ]
