"""app.yml: read, checked, and sent with this server's addresses."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.intake.dispatch import has_handlers
from bot.registration.addresses import addresses_for
from bot.registration.manifest import (
    MANIFEST_FILE,
    AppManifest,
    ManifestError,
    find_manifest,
    load_manifest,
    parse_manifest,
)
from bot.routing import build_router

# Actions that matter to some handler, to ask the router whether an event is handled at all.
EVENT_ACTIONS = (
    None,
    "opened",
    "created",
    "completed",
    "submitted",
    "rerequested",
    "checks_requested",
)
CHECKOUT_MANIFEST = Path(__file__).resolve().parents[2] / MANIFEST_FILE
ADDRESSES = addresses_for(
    base_url="https://judge.example.com",
    webhook_proxy_url=None,
    webhook_path="/api/github/webhooks",
    request_origin="http://localhost:3000",
)
MINIMAL = "name: judge-bot\nurl: https://example.com\n"


def test_the_checkout_manifest_keeps_to_what_the_code_uses() -> None:
    """The shipped app.yml loads, and asks for exactly the permissions and events the
    features use (the merge queue adds its own when it lands)."""
    manifest = load_manifest(CHECKOUT_MANIFEST)
    assert manifest.name == "judge-bot"
    assert manifest.default_permissions == {
        "contents": "write",
        "checks": "write",
        "issues": "write",
        "pull_requests": "write",
        "metadata": "read",
        "statuses": "read",
        "merge_queues": "write",
    }
    assert manifest.default_events == [
        "check_run",
        "check_suite",
        "issue_comment",
        "pull_request",
        "push",
        "pull_request_review",
        "status",
        "merge_group",
    ]
    router = build_router()
    unhandled = [
        event
        for event in manifest.default_events
        if not any(has_handlers(router, event, {"action": a}) for a in EVENT_ACTIONS)
    ]
    assert unhandled == [], "app.yml subscribes to events nothing handles"
    assert manifest.public is False


def test_sent_manifest_carries_this_servers_addresses() -> None:
    text = (
        MINIMAL
        + "hook_attributes: {url: https://old.invalid/hook, active: false}\n"
        + "redirect_url: https://old.invalid/r\nsetup_url: https://old.invalid/s\n"
        + "default_events: [push, push, pull_request]\n"
    )
    sent = parse_manifest(text).to_send(ADDRESSES)
    assert sent == {
        "name": "judge-bot",
        "url": "https://example.com",
        "hook_attributes": {
            "url": "https://judge.example.com/api/github/webhooks",
            "active": False,
        },
        "redirect_url": "https://judge.example.com/setup/callback",
        "setup_url": "https://judge.example.com/",
        "public": False,
        "default_permissions": {},
        "default_events": ["push", "pull_request"],
    }


def test_optional_keys_are_sent_when_given() -> None:
    text = MINIMAL + (
        "description: Judges.\ncallback_urls: [https://example.com/cb]\n"
        "request_oauth_on_install: true\nsetup_on_update: true\npublic: true\n"
    )
    sent = parse_manifest(text).to_send(ADDRESSES)
    assert sent["description"] == "Judges."
    assert sent["callback_urls"] == ["https://example.com/cb"]
    assert sent["request_oauth_on_install"] is True
    assert sent["setup_on_update"] is True
    assert sent["public"] is True


def test_any_permission_and_event_github_names_is_accepted() -> None:
    """Features add their own (the merge queue: contents write, merge_queues read, ...)."""
    text = MINIMAL + (
        "default_permissions: {contents: write, pull_requests: write, merge_queues: read,"
        " statuses: read, organization_administration: admin}\n"
        "default_events: [pull_request_review, check_suite, status, merge_group]\n"
    )
    manifest = parse_manifest(text)
    assert manifest.default_permissions["merge_queues"] == "read"
    assert manifest.default_permissions["organization_administration"] == "admin"
    assert "merge_group" in manifest.default_events


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "must be a mapping"),
        ("- a list\n", "must be a mapping"),
        ("name: [unclosed\n", "not valid YAML (line 2)"),
        ("url: https://example.com\n", "name: Field required"),
        ("name: judge-bot\n", "url: Field required"),
        (
            MINIMAL + "default_permission: {issues: write}\n",
            "default_permission: not a manifest key",
        ),
        (MINIMAL + "default_permissions: {issues: all}\n", "default_permissions.issues"),
        (
            MINIMAL + "default_permissions: {Issues: write}\n",
            "default_permissions.Issues (the name): must be a lowercase name GitHub uses",
        ),
        (MINIMAL + "default_events: [Push]\n", "default_events.0: must be a lowercase name"),
        (MINIMAL + "hook_attributes: {url: ftp://x}\n", "hook_attributes.url: must be an http(s)"),
        (MINIMAL + "hook_attributes: {secret: x}\n", "hook_attributes.secret: not a manifest key"),
        ("name: " + "n" * 35 + "\nurl: https://example.com\n", "name:"),
        ("name: judge-bot\nurl: not-a-url\n", "url:"),
        (MINIMAL + "public: maybe\n", "public:"),
    ],
)
def test_a_manifest_github_would_refuse_is_named_precisely(text: str, expected: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(text, "app.yml")
    assert str(caught.value).startswith("app.yml: ")
    assert expected in str(caught.value)


def test_an_oversized_file_is_not_a_manifest() -> None:
    with pytest.raises(ManifestError, match="larger than 64 KiB"):
        parse_manifest(MINIMAL + "# " + "x" * 70_000 + "\n")


def test_the_working_directory_wins_then_the_checkout(tmp_path: Path) -> None:
    assert find_manifest(tmp_path) == CHECKOUT_MANIFEST
    (tmp_path / MANIFEST_FILE).write_text(MINIMAL, encoding="utf-8")
    assert find_manifest(tmp_path) == tmp_path / MANIFEST_FILE
    assert isinstance(load_manifest(find_manifest(tmp_path)), AppManifest)
    assert find_manifest(tmp_path / "elsewhere", checkout=tmp_path / "installed") is None


def test_no_manifest_and_an_unreadable_one_say_so(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"app\.yml not found"):
        load_manifest(None)
    with pytest.raises(ManifestError, match="cannot be read"):
        load_manifest(tmp_path / "missing.yml")
    binary = tmp_path / "binary.yml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ManifestError, match="not UTF-8 text"):
        load_manifest(binary)
