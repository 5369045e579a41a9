"""``relay send-webhook`` through the real entry point (``python -m relay.cli``) against a relay
served on loopback: the example payload arrives whole, verified by the relay's HMAC check
(so it was signed with the configured secret), with a fresh delivery id per send; a wrong secret,
a bad payload file and a missing secret end with a one-line reason, never a traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from relay.github.hookshot import EXAMPLE_EVENTS, example_payload
from tests.service.conftest import SECRET, Recorder, Relay

ROOT = Path(__file__).resolve().parents[2]


def send(*args: str, secret: str | None = SECRET) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    if secret is not None:
        env["RELAY_WEBHOOK_SECRET"] = secret
    return subprocess.run([sys.executable, "-m", "relay.cli", "send-webhook", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


def test_examples_are_github_shaped_payloads_of_the_upstream_repo() -> None:
    for event in EXAMPLE_EVENTS:
        payload = json.loads(example_payload(event).read_text())
        assert payload["repository"]["full_name"] == "pytorch/pytorch" and "sender" in payload
    push = json.loads(example_payload("push").read_text())
    assert push["head_commit"]["id"] == push["after"] == push["commits"][-1]["id"]
    pr = json.loads(example_payload("pull_request").read_text())
    assert pr["action"] == "opened" and pr["number"] == pr["pull_request"]["number"]
    assert pr["pull_request"]["base"]["repo"]["full_name"] == "pytorch/pytorch"


def test_send_webhook_delivers_the_example_signed_with_a_fresh_id(relay: Relay, recorder: Recorder) -> None:
    url = f"{relay.url}/webhooks/github"
    first, second = send("push", "--url", url), send("pull_request", "--url", url)
    for proc, event in ((first, "push"), (second, "pull_request")):
        assert proc.returncode == 0, proc.stderr
        assert re.search(rf"^{event} delivery [0-9a-f-]{{36}} → HTTP 202: accepted$", proc.stderr, re.M), proc.stderr
    recorder.wait_for(2)
    by_event = {d.event: d for d in recorder.calls}
    assert by_event["push"].payload == json.loads(example_payload("push").read_text())
    assert by_event["pull_request"].payload == json.loads(example_payload("pull_request").read_text())
    ids = [d.id for d in recorder.calls]
    assert len(set(ids)) == 2 and all(d in first.stderr + second.stderr for d in ids)


def test_send_webhook_sends_a_given_payload_file(relay: Relay, recorder: Recorder, tmp_path: Path) -> None:
    payload = tmp_path / "push.json"
    payload.write_text(json.dumps({**json.loads(example_payload("push").read_text()), "ref": "refs/heads/dev"}))
    proc = send("push", "--payload", str(payload), "--url", f"{relay.url}/webhooks/github")
    assert proc.returncode == 0, proc.stderr
    recorder.wait_for(1)
    assert recorder.calls[0].payload["ref"] == "refs/heads/dev"


def test_wrong_secret_bad_payload_and_no_secret_are_clear_errors(relay: Relay, recorder: Recorder,
                                                               tmp_path: Path) -> None:
    url = f"{relay.url}/webhooks/github"
    wrong = send("push", "--url", url, secret="not-the-relay-secret-42")
    assert wrong.returncode == 1 and "HTTP 401" in wrong.stderr and "signature" in wrong.stderr, wrong.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"ref": "refs/heads/main",\n  "after": }\n')
    broken = send("push", "--payload", str(bad), "--url", url)
    assert broken.returncode == 2 and f"{bad}:2:" in broken.stderr and "Traceback" not in broken.stderr
    unknown = send("ping", "--url", url)
    assert unknown.returncode == 2 and "--payload FILE" in unknown.stderr
    unset = send("push", "--url", url, secret=None)
    assert unset.returncode == 2 and "RELAY_WEBHOOK_SECRET" in unset.stderr
    down = send("push", "--url", "http://127.0.0.1:9/webhooks/github")
    assert down.returncode == 2 and "no relay answered" in down.stderr and "Traceback" not in down.stderr
    assert recorder.calls == []


def test_a_payload_that_is_not_utf8_and_a_url_that_is_no_url_are_one_line_errors(tmp_path: Path) -> None:
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe{}")
    for args, words in (((("push", "--payload", str(binary), "--url", "http://127.0.0.1:9/webhooks/github")),
                         f"{binary}: not UTF-8 text"),
                        (("push", "--url", "http://[::1"), "http://[::1: not a URL a relay can be reached at")):
        done = send(*args)
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) <= 2
