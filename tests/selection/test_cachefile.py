"""Cache files are replaced atomically, also by concurrent writers of the same file."""

from __future__ import annotations

import threading

from selection.index.cachefile import write_atomic


def test_concurrent_writers_of_one_cache_file_never_fail_and_leave_one_whole_file(tmp_path) -> None:
    target = tmp_path / "index" / "universe-x.json"
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def writer(n: int) -> None:
        start.wait()
        try:
            for _ in range(50):
                write_atomic(target, f'{{"writer": {n}}}' + " " * 10_000)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert target.read_text().startswith('{"writer": ') and len(target.read_text()) == 10_013
    assert [p.name for p in target.parent.iterdir()] == ["universe-x.json"]  # no temp left
