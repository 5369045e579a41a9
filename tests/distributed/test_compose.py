"""docker-compose.yml checked without a compose engine: services, pinned images, commands
against the real CLI, the relay's healthcheck against a real route, environment names against
``Settings``, and ``depends_on`` gated on healthchecks."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest
import typer
import yaml
from fastapi.testclient import TestClient

from relay.cli import app as cli_app
from relay.service import create_app
from relay.settings import Settings

#: typer >= 0.16 vendors click as ``typer._click``; older typer uses click itself
_click = getattr(typer, "_click", None) or importlib.import_module("click")
UsageError = _click.exceptions.UsageError
ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def _argv(command: str | list[str]) -> list[str]:
    return list(command) if isinstance(command, list) else shlex.split(command)


def _parse_relay(argv: list[str]):
    """Parse ``relay <sub> <args>`` with the typer app's click command; raises click errors."""
    assert argv[0] == "relay", argv
    group = typer.main.get_command(cli_app)
    parent = group.context_class(group, info_name="relay")
    sub = group.get_command(parent, argv[1])
    assert sub is not None, f"no command relay {argv[1]}"
    return sub.make_context(argv[1], argv[2:], parent=parent)


def test_the_stack_has_its_five_services() -> None:
    assert set(SERVICES) == {"relay", "worker", "postgres", "redis", "proxy"}


def test_two_relay_replicas_behind_one_proxy_port() -> None:
    """Issue 31: two relay processes share the work on PostgreSQL; GitHub and the callbacks see
    one address, the proxy's, which balances over every replica of the ``relay`` service."""
    relay, proxy = SERVICES["relay"], SERVICES["proxy"]
    assert relay["deploy"]["replicas"] >= 2
    assert "ports" not in relay  # two replicas cannot both bind the host's port
    assert proxy["ports"] == ["8000:8000"]
    assert proxy["depends_on"] == {"relay": {"condition": "service_healthy"}}
    source = next(v.split(":")[0] for v in proxy["volumes"] if "/etc/nginx/conf.d/" in v)
    conf = (ROOT / source).read_text()
    port = _parse_relay(_argv(relay["command"])).params["port"]
    assert re.search(rf"server\s+relay:{port}\b", conf)  # the service name: every replica
    assert "listen 8000;" in conf and "proxy_next_upstream error timeout;" in conf
    size = re.search(r"client_max_body_size\s+(\d+)m;", conf)
    assert size and int(size.group(1)) > 25  # GitHub's 25 MB payloads pass; the relay says 413
    public = relay["environment"]["RELAY_PUBLIC_URL"]
    assert public.endswith(":8000}") or public.endswith(":8000")  # callbacks to the proxy


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_images_are_pinned(name: str) -> None:
    image = SERVICES[name]["image"]
    repo, _, tag = image.rpartition(":")
    assert repo and tag and tag != "latest" and re.search(r"\d", tag), image


@pytest.mark.parametrize("name", ["relay", "worker"])
def test_commands_parse_with_the_cli(name: str) -> None:
    ctx = _parse_relay(_argv(SERVICES[name]["command"]))
    if name == "relay":
        assert ctx.command.name == "serve" and ctx.params["host"] == "0.0.0.0"
    else:
        assert ctx.command.name == "worker" and ctx.params["concurrency"] >= 1


def test_a_bad_option_would_be_caught() -> None:
    with pytest.raises(UsageError):
        _parse_relay(["relay", "worker", "--no-such-option"])
    with pytest.raises(UsageError):  # BadParameter is a UsageError
        _parse_relay(["relay", "serve", "--port", "eighty"])


def test_relay_healthcheck_hits_a_real_route(tmp_path: Path) -> None:
    test = " ".join(_argv(SERVICES["relay"]["healthcheck"]["test"]))
    m = re.search(r"https?://[^/\s'\"]+:(\d+)(/[^\s'\")]*)", test)
    assert m, test
    port, path = int(m.group(1)), m.group(2)
    ctx = _parse_relay(_argv(SERVICES["relay"]["command"]))
    assert ctx.params["port"] == port  # the healthcheck asks the port the relay binds
    settings = Settings(webhook_secret="compose-test-secret-123", state_dir=tmp_path,
                        database_url=f"sqlite:///{tmp_path / 'relay.db'}")
    app = create_app(settings, recover=False)
    gets = {p for p, ops in app.openapi()["paths"].items() if "get" in ops}
    assert path in gets  # a declared GET route of create_app, not a catch-all
    with TestClient(app) as client:
        assert client.get(path).status_code == 200


def test_worker_healthcheck_names_the_celery_app() -> None:
    test = " ".join(_argv(SERVICES["worker"]["healthcheck"]["test"]))
    m = re.search(r"-A\s+(\S+)", test)
    assert m and importlib.util.find_spec(m.group(1)) is not None, test


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_environment_names_are_settings_fields(name: str) -> None:
    env = SERVICES[name].get("environment") or {}
    names = list(env) if isinstance(env, dict) else [e.split("=", 1)[0] for e in env]
    for var in (n for n in names if n.startswith("RELAY_")):
        assert var.removeprefix("RELAY_").lower() in Settings.model_fields, var
    if name in ("relay", "worker"):
        assert {"RELAY_DATABASE_URL", "RELAY_BROKER_URL"} <= set(names)
        assert env["RELAY_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert env["RELAY_BROKER_URL"].startswith("redis://")


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_depends_on_waits_for_healthy_services(name: str) -> None:
    svc = SERVICES[name]
    assert "healthcheck" in svc, f"{name} has no healthcheck"
    deps = svc.get("depends_on") or {}
    assert isinstance(deps, dict), f"{name}: depends_on must use conditions"
    for dep, cond in deps.items():
        assert cond == {"condition": "service_healthy"}, (name, dep, cond)
        assert "healthcheck" in SERVICES[dep]
    if name in ("relay", "worker"):
        assert {"postgres", "redis"} <= set(deps)


def test_relay_worker_without_broker_is_a_clear_error(monkeypatch) -> None:
    from typer.testing import CliRunner

    monkeypatch.delenv("RELAY_BROKER_URL", raising=False)
    result = CliRunner().invoke(cli_app, ["worker"])
    assert result.exit_code == 2
    assert "RELAY_BROKER_URL" in result.output


def test_the_image_installs_the_distributed_extra_and_a_cpu_torch() -> None:
    """Workers need Celery and psycopg (the ``distributed`` extra); torch must come from the CPU
    index at the pinned version, or pip pulls a multi-GB CUDA build."""
    text = (ROOT / "Dockerfile").read_text()
    assert "'.[distributed]'" in text
    assert re.search(r"--index-url https://download.pytorch.org/whl/cpu torch==2\.13\.0", text)
    pinned = re.search(r'"torch==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned and f"torch=={pinned.group(1)}" in text
