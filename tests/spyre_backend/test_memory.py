"""Stick-rounded allocation, accounting, release and OOM."""

from __future__ import annotations

import gc

import torch

from spyre_backend import memory


def test_one_fp16_element_costs_one_stick():
    gc.collect()
    before = torch.spyre.memory_allocated()
    t = torch.empty(1, dtype=torch.float16, device="spyre")
    assert torch.spyre.memory_allocated() - before == 128
    u = torch.empty(65, dtype=torch.float16, device="spyre")  # 130 bytes → 2 sticks
    assert torch.spyre.memory_allocated() - before == 128 + 256
    del t, u


def test_round_to_sticks():
    assert memory.round_to_sticks(0) == 0
    assert memory.round_to_sticks(1) == 128
    assert memory.round_to_sticks(128) == 128
    assert memory.round_to_sticks(129) == 256


def test_memory_released_when_tensors_die_and_views_keep_it_alive():
    gc.collect()
    before = torch.spyre.memory_allocated()
    t = torch.zeros(1000, device="spyre")  # 4000 bytes → 32 sticks
    assert torch.spyre.memory_allocated() - before == 4096
    v = t[10:20]
    del t
    assert torch.spyre.memory_allocated() - before == 4096
    del v
    assert torch.spyre.memory_allocated() == before


def test_peak_stats():
    gc.collect()
    torch.spyre.reset_peak_memory_stats()
    base = torch.spyre.memory_allocated()
    assert torch.spyre.max_memory_allocated() == base
    t = torch.empty(1024, dtype=torch.float16, device="spyre")
    del t
    assert torch.spyre.max_memory_allocated() == base + 2048
    torch.spyre.reset_peak_memory_stats()
    assert torch.spyre.max_memory_allocated() == torch.spyre.memory_allocated()


def test_zero_byte_tensors_cost_nothing():
    before = torch.spyre.memory_allocated()
    z = torch.empty(0, 5, device="spyre")
    assert torch.spyre.memory_allocated() == before
    assert z.cpu().shape == (0, 5)


def test_oom_at_capacity(run_python):
    proc = run_python(
        """
        import torch, spyre_backend
        assert torch.spyre.get_device_properties().total_memory == 4096
        a = torch.empty(3072, dtype=torch.uint8, device="spyre")
        try:
            torch.empty(1025, dtype=torch.uint8, device="spyre")
        except torch.OutOfMemoryError as e:
            print("OOM", e)
        del a
        b = torch.empty(4096, dtype=torch.uint8, device="spyre")
        print("after free", torch.spyre.memory_allocated())
        """,
        env={"SPYRE_SIM_MEMORY_BYTES": "4096"},
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.strip().splitlines()
    assert first.startswith("OOM") and "1025 bytes" in first and "1024 bytes free" in first
    assert second == "after free 4096"


def test_default_capacity_is_8_gib():
    assert memory.DEFAULT_CAPACITY == 8 * 1024**3
