"""torch.spyre runtime module."""

from __future__ import annotations

import pytest
import torch


def test_basic_queries():
    assert torch.spyre.is_available() and torch.spyre.is_initialized()
    assert torch.spyre.device_count() == 1 and torch.spyre.current_device() == 0
    torch.spyre.set_device(0)
    torch.spyre.set_device("spyre:0")
    with pytest.raises(RuntimeError):
        torch.spyre.set_device(1)
    torch.spyre.synchronize()


def test_device_properties():
    p = torch.spyre.get_device_properties(0)
    assert p.num_cores == 32
    assert p.scratchpad_bytes_per_core == 2 * 1024 * 1024
    assert p.stick_bytes == 128
    assert p.total_memory == torch.spyre.mem_get_info()[1]
    free, total = torch.spyre.mem_get_info()
    assert free == total - torch.spyre.memory_allocated()


def test_manual_seed_controls_device_rng():
    torch.spyre.manual_seed(7)
    a = torch.rand(5, device="spyre").cpu()
    torch.spyre.manual_seed_all(7)
    b = torch.rand(5, device="spyre").cpu()
    assert torch.equal(a, b)
    state = torch.spyre.get_rng_state()
    c = torch.rand(5, device="spyre").cpu()
    torch.spyre.set_rng_state(state)
    assert torch.equal(torch.rand(5, device="spyre").cpu(), c)
    assert torch.spyre.initial_seed() == 7


def test_streams_and_events():
    s = torch.spyre.Stream()
    start = torch.spyre.Event(enable_timing=True)
    end = torch.spyre.Event(enable_timing=True)
    start.record(s)
    torch.ones(10, device="spyre", dtype=torch.float16).sum().item()
    s.record_event(end)
    end.synchronize()
    assert start.query() and end.query() and s.query()
    assert start.elapsed_time(end) >= 0.0
    s.wait_event(end)
    s.wait_stream(torch.spyre.current_stream())
    assert torch.spyre.current_stream() is torch.spyre.default_stream()
    with pytest.raises(RuntimeError):
        torch.spyre.Event().elapsed_time(end)
