"""Issue 17: ``/openapi.json`` declares the webhook route and the POST body schemas (what API
fuzzers generate requests from), every ``$ref`` resolving inside the document."""

from __future__ import annotations

from typing import Any

import httpx

from relay.service import create_app
from relay.settings import Settings
from tests.fakes.github import pull_request_payload


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return ([node["$ref"]] if isinstance(node.get("$ref"), str) else []) + \
            [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_every_post_route_is_published_with_its_body_schema(relay) -> None:
    doc = httpx.get(relay.url + "/openapi.json").json()
    posts = {path: ops["post"] for path, ops in doc["paths"].items() if "post" in ops}
    assert set(posts) == {"/webhooks/github", "/api/crcr/callback", "/api/crcr/results"}
    for path, op in posts.items():
        body = op["requestBody"]
        assert body["required"] is True, path
        assert body["content"]["application/json"]["schema"], path
    hook = posts["/webhooks/github"]
    assert {p["name"] for p in hook["parameters"] if p["required"]} == {
        "X-GitHub-Event", "X-GitHub-Delivery", "X-Hub-Signature-256"}
    assert {"200", "202", "400", "401", "413", "503"} <= set(hook["responses"])
    schemas = doc["components"]["schemas"]
    assert set(schemas["PullRequestEvent"]["required"]) >= {"action", "number", "pull_request"}
    assert schemas["CallbackBody"]["required"] == ["delivery_id", "workflow"]
    assert "trusted" in schemas["HudBody"]["properties"]
    for ref in _refs(doc):
        assert ref.startswith("#/components/schemas/") and ref.rsplit("/", 1)[1] in schemas, ref
    # the document only describes: the raw intake still answers the route
    assert relay.sender.send("pull_request", pull_request_payload()).status_code == 202


def test_a_dashboard_only_app_publishes_no_webhook_route(tmp_path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'r.db'}", state_dir=tmp_path),
                     webhooks_enabled=False)
    paths = app.openapi()["paths"]
    assert "/webhooks/github" not in paths and "requestBody" in paths["/api/crcr/callback"]["post"]
