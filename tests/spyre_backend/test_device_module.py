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


@pytest.mark.parametrize("make", [
    lambda: torch.ones(2, device="spyre:5"),
    lambda: torch.empty(0, device="spyre:1"),  # 0-byte storages too
    lambda: torch.zeros(2, device=torch.device("spyre", 3)),
    lambda: torch.tensor([1.0, 2.0], device="spyre:2"),
    lambda: torch.ones(2).to("spyre:5"),
    lambda: torch.ones(2, device="spyre").to("spyre:2"),
    lambda: torch.ones(2, device="spyre").new_empty(3, device="spyre:7"),
    lambda: torch.UntypedStorage(4, device="spyre:2"),
], ids=["ones", "empty0", "zeros", "tensor", "to", "device_to_device", "new_empty", "untyped_storage"])
def test_invalid_device_index_is_named(make):
    allocated = torch.spyre.memory_allocated()
    with pytest.raises(RuntimeError, match=r"spyre: invalid device index \d+: the simulated Spyre has "
                                           r"device_count\(\) == 1 \(use device 'spyre' or 'spyre:0'\)"):
        make()
    assert torch.spyre.memory_allocated() == allocated  # nothing charged for the refused tensor
    assert torch.ones(2, device="spyre:0").device == torch.ones(2, device="spyre").device == torch.device("spyre:0")


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


def test_stream_selection_and_event_streams():
    default = torch.spyre.default_stream()
    side = torch.spyre.Stream()
    assert side != default and default.stream_id == 0 and hash(side) != hash(default)
    with torch.spyre.stream(side):
        assert torch.spyre.current_stream() == side
        e = torch.spyre.Event()
        e.record()
        assert e.stream == side
    assert torch.spyre.current_stream() == default
    assert torch.spyre.Event().query()  # never recorded: nothing pending, as in CUDA


def test_ordering_contract_holds_because_work_is_synchronous():
    """Work on a side stream, an event, and a wait on the default stream: the consumer sees the
    producer's result (the device completes every op before returning; see spyre_backend.streams)."""
    side = torch.spyre.Stream()
    x = torch.zeros(1024, dtype=torch.float16, device="spyre")
    done = torch.spyre.Event()
    with torch.spyre.stream(side):
        x.add_(1)
        done.record()
    assert done.query() and side.query()
    torch.spyre.current_stream().wait_event(done)
    done.wait()
    assert x.sum().item() == 1024
    torch.spyre.default_stream().wait_stream(side)
    torch.spyre.synchronize()


def test_elapsed_time_is_milliseconds_between_records():
    import time

    start, end = torch.spyre.Event(enable_timing=True), torch.spyre.Event(enable_timing=True)
    start.record()
    time.sleep(0.02)
    end.record()
    ms = start.elapsed_time(end)
    assert 15.0 <= ms < 2000.0
    with pytest.raises(RuntimeError, match="enable_timing"):
        torch.spyre.Event().elapsed_time(end)
    with pytest.raises(RuntimeError, match="recorded"):
        torch.spyre.Event(enable_timing=True).elapsed_time(end)
