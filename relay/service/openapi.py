"""``/openapi.json`` with every POST route and its body schema (issue 17: API fuzzers such as
schemathesis generate requests only for what the document declares).

``POST /webhooks/github`` is served by the raw ASGI ``WebhookIntake`` ahead of FastAPI's routing
(``relay.service.intake``: the hot path), so FastAPI does not know it; the callback and results
routes read their bodies raw (capped, strict JSON), so FastAPI sees no body parameter.  This
module adds both to the generated document — and only to the document: nothing on the
request path changes.  Body schemas come from the models that validate the bodies:
``PullRequestEvent`` / ``PushEvent`` / ``PingEvent`` (the parts of GitHub's payloads the relay
reads; any other JSON object is accepted too), ``CallbackBody`` (CRCR callback),
``HudBody`` (HUD results).  The document is built once per app and cached, as FastAPI does.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from relay.crcr.callback_body import CallbackBody
from relay.github.events import CheckRunEvent, CheckSuiteEvent, PingEvent, PullRequestEvent, PushEvent
from relay.reporting.models import HudBody

__all__ = ["install_openapi", "WEBHOOK_OPERATION"]

_REF = "#/components/schemas/{model}"
_DETAIL = {"type": "object", "properties": {"detail": {}}, "required": ["detail"]}
_STATUS = {"type": "object", "required": ["status"],
           "properties": {"status": {"type": "string"}, "delivery_id": {"type": "string"}}}


def _header(name: str, pattern: str, description: str, required: bool = True) -> dict[str, Any]:
    return {"name": name, "in": "header", "required": required, "description": description,
            "schema": {"type": "string", "pattern": pattern}}


def _answers(codes: dict[int, str], ok: dict[str, Any]) -> dict[str, Any]:
    return {str(code): {"description": text, "content": {"application/json": {
        "schema": ok if code < 300 else _DETAIL}}} for code, text in codes.items()}


#: the webhook operation (GitHub docs, "Webhook events and payloads"; design §5)
WEBHOOK_OPERATION: dict[str, Any] = {
    "summary": "GitHub webhook delivery",
    "description": "Verified (HMAC-SHA256 of the raw body), stored, then acknowledged; all "
                   "work happens after the answer.  Any JSON object is accepted; the schemas "
                   "name the fields the relay reads per X-GitHub-Event.",
    "operationId": "webhook_github",
    "tags": ["webhooks"],
    "parameters": [
        _header("X-GitHub-Event", r"^[A-Za-z0-9_.:-]{1,100}$", "the event name"),
        _header("X-GitHub-Delivery", r"^[A-Za-z0-9_.:-]{1,100}$",
                "the delivery GUID (the same on redelivery: the dedup key)"),
        _header("X-Hub-Signature-256", r"^sha256=[0-9a-f]{64}$",
                "sha256= and the hex HMAC-SHA256 of the raw body with the webhook secret"),
        _header("X-GitHub-Hook-ID", r"^[0-9]{1,20}$", "the hook's id", required=False),
    ],
    "requestBody": {"required": True, "content": {"application/json": {"schema": {"anyOf": [
        {"$ref": _REF.format(model="PullRequestEvent")},
        {"$ref": _REF.format(model="PushEvent")},
        {"$ref": _REF.format(model="CheckRunEvent")},
        {"$ref": _REF.format(model="CheckSuiteEvent")},
        {"$ref": _REF.format(model="PingEvent")},
        {"type": "object"}]}}}},
    "responses": _answers({
        200: "duplicate, pong (ping) or ignored (not an event the relay acts on)",
        202: "accepted: stored and queued", 400: "missing header or malformed body",
        401: "signature malformed or not matching", 413: "body over 25 MB",
        503: "not stored (database unavailable): GitHub marks the delivery failed"}, _STATUS),
}


def _body(model: type[BaseModel]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {
        "schema": {"$ref": _REF.format(model=model.__name__)}}}}


def _schemas(models: list[type[BaseModel]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for model in models:
        schema = model.model_json_schema(ref_template=_REF)
        out.update(schema.pop("$defs", {}))
        out[model.__name__] = schema
    return out


def install_openapi(app: FastAPI, *, webhooks: bool) -> None:
    """Make ``app.openapi()`` publish the webhook route (when ``webhooks``) and the body
    schemas of the callback and results routes."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = get_openapi(title=app.title, version=app.version, routes=app.routes)
        paths = doc.setdefault("paths", {})
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        models: list[type[BaseModel]] = [CallbackBody, HudBody]
        for path, model in (("/api/crcr/callback", CallbackBody), ("/api/crcr/results", HudBody)):
            if "post" in paths.get(path, {}):
                paths[path]["post"]["requestBody"] = _body(model)
        if webhooks:
            paths["/webhooks/github"] = {"post": WEBHOOK_OPERATION}
            models += [PullRequestEvent, PushEvent, CheckRunEvent, CheckSuiteEvent, PingEvent]
        schemas.update(_schemas(models))
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
