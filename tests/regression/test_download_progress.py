"""A wheel download reports its bytes as it goes (``relay.envs.download``): ``fetch_wheel`` of a
wheel URL served slowly on loopback calls ``progress`` with growing byte counts below the size
pip announced, then the size; the file lands in the destination.  And the size text pip prints
is read in pip's decimal units."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import time
import zipfile
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from relay.envs.download import parse_size
from relay.envs.environments import fetch_wheel
from tests.fakes.live import LiveServer

NAME = "torch-2.13.0-py3-none-any.whl"


def _wheel(size: int) -> bytes:
    """A valid (tiny-metadata) wheel of about ``size`` bytes, so pip accepts it."""
    files = {"torch/__init__.py": b"", "torch/blob.bin": os.urandom(size),
             "torch-2.13.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0\n",
             "torch-2.13.0.dist-info/WHEEL":
                 b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{k},sha256={base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b'=').decode()},{len(v)}"
              for k, v in files.items()] + ["torch-2.13.0.dist-info/RECORD,,"]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
        z.writestr("torch-2.13.0.dist-info/RECORD", "\n".join(record) + "\n")
    return out.getvalue()


def test_a_slow_download_reports_bytes_as_it_goes(tmp_path: Path) -> None:
    body = _wheel(2_000_000)
    app = FastAPI()

    @app.get(f"/{NAME}")
    def wheel() -> StreamingResponse:
        def chunks():
            for i in range(0, len(body), 100_000):  # ~2 MB over ~4 s
                yield body[i:i + 100_000]
                time.sleep(0.2)
        return StreamingResponse(chunks(), media_type="application/octet-stream",
                                 headers={"Content-Length": str(len(body))})

    server = LiveServer(app).start()
    seen: list[tuple[str, int, int | None]] = []
    try:
        path = fetch_wheel(f"{server.url}/{NAME}", tmp_path / "wheels",
                           progress=lambda name, done, total: seen.append((name, done, total)))
    finally:
        server.stop()
    assert path.read_bytes() == body
    named = [s for s in seen if s[0] == NAME]
    total = named[-1][2]
    assert total is not None and abs(total - len(body)) <= 0.05 * len(body)  # "(2.0 MB)", rounded
    assert named[-1][1] == total
    during = [done for _, done, _t in named[:-1] if 0 < done < len(body)]
    assert during and during == sorted(during)  # seen while it grew, never going back


def test_pips_size_text() -> None:
    assert parse_size("1037.2 MB") == 1_037_200_000 and parse_size("3.0 kB") == 3000
    assert parse_size("12 B") == 12 and parse_size("huge") is None


def test_the_cli_bar_shows_bytes_and_rate() -> None:
    from rich.console import Console

    from relay.cli.render import DownloadBars

    out = io.StringIO()
    with DownloadBars(Console(file=out, width=120, force_terminal=False)) as bars:
        bars(NAME, 0, 2_000_000)
        time.sleep(0.2)
        bars(NAME, 1_000_000, 2_000_000)
        time.sleep(0.2)
        bars(NAME, 2_000_000, 2_000_000)
    text = out.getvalue()
    assert f"downloading {NAME}" in text and "2.0/2.0 MB" in text and "/s" in text
