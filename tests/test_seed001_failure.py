"""Seed 001: failure is not a return value, it is a state on the buffers a launch did not write.

The seed's walkthrough, then each rule of DESIGN §4 (rules 2–5) as its own test, on every
runtime the `client` fixture gives. A compile failure is provoked the way the seed suggests: a
kernel whose expansion fails on the device thread (adding vectors of widths 2 and 4).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

import cubelab
from cubelab import (
    BufferArg,
    BufferFailure,
    CubeCount,
    CubeDim,
    DeviceError,
    KernelSourceError,
    ResourceError,
)
from cubelab.prelude import f32
from cubelab.runtime import events as ev
from cubelab.runtime.buffer_io import BufferIO
from cubelab.runtime.launch_args import Bindings, BufferBinding
from tests.fixtures.seed001_kernels import bad_widths, inc, scale, writes_one_of_two


def floats(client, values):
    return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))


def read(client, h):
    return f32.from_bytes(client.read_one(h))


def arg(h, n=8):
    return BufferArg.from_raw_parts(h, n)


def one_cube(n=8):
    return CubeCount.Static(1), CubeDim.new_1d(n)


def fail_into(client, out, n=8):
    """Launch the kernel that cannot compile, writing `out` (and reading two fresh inputs)."""
    a, b = floats(client, np.zeros(n)), floats(client, np.zeros(n))
    bad_widths.launch(client, *one_cube(n), arg(a, n), arg(b, n), arg(out, n))
    return a, b


# -- the walkthrough --------------------------------------------------------------------------
def test_the_seed_walkthrough_compile_failure_skip_repair_and_dry_run(client):
    out = floats(client, np.full(8, 7.0))
    # 1. The kernel does not compile: launch returns anyway, the error waits on `out`.
    with client.events.record() as rec:
        fail_into(client, out)  # no exception here: there is no channel back
        # 2. check() reports the compile error, naming the buffer and the root-cause kernel.
        with pytest.raises(BufferFailure) as info:
            client.check([out])
    root = info.value
    assert isinstance(root.cause, KernelSourceError)
    assert root.kernel == "BadWidths" and root.buffer == "out"
    assert "vectors of widths 2 and 4" in str(root)
    assert rec.of(ev.CompileFailed) and not rec.of(ev.LaunchDispatched)
    assert rec.of(ev.BufferFailed)[0].handle_ids == (out.id,)

    # 3. A downstream launch that reads `out` is skipped; its output carries the SAME root cause.
    down = floats(client, np.full(8, 5.0))
    with client.events.record(ev.LaunchSkipped, ev.LaunchDispatched) as rec:
        scale.launch(client, *one_cube(), arg(out), arg(down), 2.0)
        with pytest.raises(BufferFailure) as info:
            client.read_one(down)
    (skip,) = rec.of(ev.LaunchSkipped)
    assert (skip.why, skip.root_kernel) == ("tainted-input", "BadWidths")
    assert not rec.of(ev.LaunchDispatched)
    assert info.value.cause is root.cause  # the root cause, not a new, vaguer error
    assert info.value.skipped == ("Scale",) and "skipped because of it: Scale" in str(info.value)

    # 4. Relaunching a good kernel into `out` repairs it: check is clean, the data is fresh.
    x = floats(client, np.arange(8))
    with client.events.record(ev.BufferRepaired) as rec:
        scale.launch(client, *one_cube(), arg(x), arg(out), 3.0)
        client.check([out])
    assert rec.of(ev.BufferRepaired)[0].handle_ids == (out.id,)
    np.testing.assert_array_equal(read(client, out), 3.0 * np.arange(8))

    # 5. Under a dry run the launch compiles, but claims nothing and dispatches nothing.
    client.clear_cache()
    with client.events.record() as rec, cubelab.dry_run():
        scale.launch(client, *one_cube(), arg(x), arg(out), 10.0)
        client.sync()
    assert len(rec.of(ev.CompileFinished)) == 1
    assert not rec.of(ev.BufferClaimed) and not rec.of(ev.LaunchDispatched)
    np.testing.assert_array_equal(read(client, out), 3.0 * np.arange(8))


def test_a_dry_run_compile_failure_still_claims_the_declared_write_set(client):
    """The device thread compiles before it looks at the LaunchMode, so a kernel that cannot be
    compiled fails its outputs even in a dry run (the seed's exercise 2)."""
    out = floats(client, np.zeros(8))
    with cubelab.dry_run():
        fail_into(client, out)
    with pytest.raises(BufferFailure, match="BadWidths"):
        client.check([out])


def test_skips_chain_and_keep_pointing_at_the_root_cause(client):
    out = floats(client, np.zeros(8))
    fail_into(client, out)
    b, c = floats(client, np.zeros(8)), floats(client, np.zeros(8))
    scale.launch(client, *one_cube(), arg(out), arg(b), 2.0)
    scale.launch(client, *one_cube(), arg(b), arg(c), 2.0)
    with pytest.raises(BufferFailure) as info:
        client.read_one(c)
    assert info.value.kernel == "BadWidths" and info.value.skipped == ("Scale", "Scale")


# -- rule 4: the written set's fallback chain ------------------------------------------------
def test_an_output_the_ir_never_writes_is_not_claimed(client):
    x, out = floats(client, np.arange(8)), floats(client, np.zeros(8))
    spare = floats(client, np.zeros(8))
    fail_into(client, spare)  # spare carries a failure...
    with client.events.record(ev.BufferClaimed, ev.BufferRepaired) as rec:
        writes_one_of_two.launch(client, *one_cube(), arg(x), arg(out), arg(spare))
        client.sync()
    # ...and the launch that declares it SliceMut but never stores to it leaves it alone:
    assert rec.of(ev.BufferClaimed)[0].handle_ids == (out.id,)
    assert not rec.of(ev.BufferRepaired)
    np.testing.assert_array_equal(read(client, out), np.arange(8) + 1.0)
    with pytest.raises(BufferFailure, match="BadWidths"):
        client.check([spare])


def test_without_ir_the_declared_io_names_the_write_set(client):
    """A kernel that did not compile has no IR: its failure lands on the SliceMut only."""
    out = floats(client, np.zeros(8))
    a, b = fail_into(client, out)
    client.check([a, b])  # Slice inputs are not claimed
    with pytest.raises(BufferFailure):
        client.check([out])


class _Capturing:
    """Stands in for the client while the frontend builds a launch, to get the real kernel and
    bindings (so a test can hand the runtime bindings that declare nothing)."""

    def __init__(self, client):
        self._client = client
        self.launched = None

    def __getattr__(self, name):
        return getattr(self._client, name)

    def launch(self, kernel, count, bindings):
        self.launched = (kernel, count, bindings)


def test_without_ir_or_declared_io_every_buffer_is_named(client):
    a, b, out = (floats(client, np.zeros(8)) for _ in range(3))
    cap = _Capturing(client)
    bad_widths.launch(cap, *one_cube(), arg(a), arg(b), arg(out))
    kernel, count, bindings = cap.launched
    undeclared = Bindings([BufferBinding(bb.handle, bb.items, None, bb.name)
                           for bb in bindings.buffers], bindings.scalars)
    client.launch(kernel, count, undeclared)
    for h in (a, b, out):  # over-named on purpose: loud beats silently stale
        with pytest.raises(BufferFailure, match="BadWidths"):
            client.check([h])


def test_the_fallback_chain_over_names_and_the_read_set_excludes_pure_outputs(client):
    x, y, z = (floats(client, np.zeros(4)) for _ in range(3))
    b = Bindings([BufferBinding(x, 4, False, "x"), BufferBinding(y, 4, True, "y"),
                  BufferBinding(z, 4, None, "z")], {})
    ir = (BufferIO(True, False), BufferIO(False, True), BufferIO(True, True))
    assert b.buffers_written(ir) == [y, z]       # 1. what the IR writes
    assert b.buffers_written(None) == [y, z]     # 2. declared IO (z declared nothing: 3. all)
    assert b.buffers_read(ir) == [x, z]          # y is a pure output: not a read
    assert b.buffers_read(None) == [x, y, z]     # without IR a SliceMut is read-write


# -- rule 3/4: the pure-output repair rule ------------------------------------------------------
def test_a_relaunch_into_a_tainted_pure_output_repairs_it_but_a_read_modify_write_skips(client):
    out = floats(client, np.zeros(8))
    fail_into(client, out)
    with client.events.record(ev.LaunchSkipped) as rec:
        inc.launch(client, *one_cube(), arg(out))  # inc reads `y`: skipped, still failed
        with pytest.raises(BufferFailure):
            client.check([out])
    assert rec.of(ev.LaunchSkipped)[0].why == "tainted-input"
    x = floats(client, np.arange(8))
    scale.launch(client, *one_cube(), arg(x), arg(out), 2.0)  # pure output: repaired
    inc.launch(client, *one_cube(), arg(out))
    np.testing.assert_array_equal(read(client, out), 2.0 * np.arange(8) + 1.0)


# -- rule 5: read / check / sync_buffers / sync ----------------------------------------------
def test_sync_reports_device_faults_only_and_sync_buffers_answers_after_the_barrier(client):
    out = floats(client, np.zeros(8))
    fail_into(client, out)
    client.sync()  # a launch failure is not a device fault
    with pytest.raises(BufferFailure, match="BadWidths"):
        client.sync_buffers([out])
    x, y = floats(client, np.arange(8)), floats(client, np.zeros(8))
    scale.launch(client, *one_cube(), arg(x), arg(y), 1.0)
    client.sync_buffers([y])  # clean: returns
    assert client.buffer_state(y) == "clean" and client.buffer_state(out) == "failed"


# -- failures the device cannot report by itself ------------------------------------------------
def test_a_cube_count_over_the_device_limit_fails_the_written_buffers(client):
    x, out = floats(client, np.arange(8)), floats(client, np.zeros(8))
    limit = client.properties().max_cubes_per_dim
    with client.events.record(ev.LaunchFailed) as rec:
        scale.launch(client, CubeCount.Static(limit + 1), CubeDim.new_1d(8), arg(x), arg(out),
                     1.0)  # returns: the refusal is found on the device thread
        with pytest.raises(BufferFailure) as info:
            client.read_one(out)
    assert isinstance(info.value.cause, ResourceError)
    assert f"limit of {limit} cubes per dimension" in str(info.value)
    assert rec.of(ev.LaunchFailed)[0].buffers == (out.id,)
    client.check([x])


def test_an_allocation_the_device_cannot_hold_is_a_resource_error(client):
    with pytest.raises(ResourceError, match="cannot allocate"):
        client.empty(1 << 48)  # 256 TiB: beyond any device here
    client.sync()  # the device is still fine


def test_wgpus_logged_errors_become_failures_not_log_lines(wgpu_client, caplog):
    """wgpu-py reports some errors only by logging them; on the device thread they are caught
    and surface where they belong (here, with no launch in flight: a device fault at sync)."""
    client = wgpu_client
    wgpu_logger = logging.getLogger("wgpu")
    with caplog.at_level(logging.ERROR, logger="wgpu"):
        client.device.runner.call(wgpu_logger.error, "Validation Error: something asynchronous")
        with pytest.raises(DeviceError, match="something asynchronous"):
            client.sync()
    assert not [r for r in caplog.records if "asynchronous" in r.getMessage()]
    client.sync()  # reported once


def test_too_much_shared_memory_is_a_compile_failure_on_the_written_buffers(client):
    from tests.fixtures.seed001_kernels import too_much_shared

    out = floats(client, np.zeros(8))
    too_much_shared.launch(client, *one_cube(), arg(out))
    with pytest.raises(BufferFailure) as info:
        client.check([out])
    assert isinstance(info.value.cause, ResourceError)
    assert "24000 bytes of shared memory" in str(info.value)


class _RefusingQueue:
    """wgpu's queue, except that it refuses the next submission the way wgpu-py does (a
    GPUValidationError raised from `submit`)."""

    def __init__(self, queue):
        self._queue = queue

    def __getattr__(self, name):
        return getattr(self._queue, name)

    def submit(self, buffers):
        import wgpu

        raise wgpu.GPUValidationError("Validation Error: the submission was refused")


def test_a_refused_submission_fails_every_launch_it_carried(wgpu_client):
    import threading

    client = wgpu_client
    x = floats(client, np.arange(8))
    a, b = floats(client, np.zeros(8)), floats(client, np.zeros(8))
    scale.launch(client, *one_cube(), arg(x), arg(a), 1.0)
    client.sync()
    server = client.device.server
    gate = threading.Event()
    client.device.runner.call(setattr, server, "queue", _RefusingQueue(server.queue))
    try:
        client.device.runner.submit(gate.wait)
        scale.launch(client, *one_cube(), arg(x), arg(a), 2.0)
        scale.launch(client, *one_cube(), arg(x), arg(b), 3.0)
        gate.set()
        # the read flushes the stream (refused), then answers with the refusal, not old bytes
        with pytest.raises(BufferFailure, match="the submission was refused"):
            client.read_one(b)
    finally:
        gate.set()
        client.device.runner.call(setattr, server, "queue", server.queue._queue)
    for h in (a, b):
        with pytest.raises(BufferFailure, match="the submission was refused") as info:
            client.read_one(h)
        assert info.value.kernel == "Scale"
    client.sync()  # the refusal lives on the buffers; the device is fine
    scale.launch(client, *one_cube(), arg(x), arg(a), 4.0)  # and a relaunch repairs
    np.testing.assert_array_equal(read(client, a), 4.0 * np.arange(8))


def test_an_unforeseen_error_on_the_device_thread_still_lands_on_the_buffers(client):
    """The runner drops what a fire-and-forget task raises; the server must not lose it."""
    out = floats(client, np.zeros(8))
    cap = _Capturing(client)
    scale.launch(cap, *one_cube(), arg(floats(client, np.arange(8))), arg(out), 2.0)
    kernel, count, bindings = cap.launched

    class Broken:
        name = "Broken"
        profile_tag = "broken"

        def id(self):
            raise RuntimeError("a bug in a kernel object")

    # handed straight to the device thread (client.launch would call id() on this thread)
    client.device.runner.submit(client.device.server.launch, Broken(), count, bindings, 0)
    with pytest.raises(BufferFailure, match="a bug in a kernel object"):
        client.check([out])


def test_the_execute_scope_releases_replaces_or_keeps_its_claim():
    """Rule 3 on the scope itself: released on a normal end, replaced by a reported error, kept
    (with why) when the body is interrupted."""
    from cubelab.runtime.events import EventBus
    from cubelab.runtime.execute_scope import ExecuteScope, FailureLedger, LaunchInfo
    from cubelab.runtime.handle import Handle

    ledger, bus = FailureLedger(), EventBus()
    a, b, c = (Handle.new(16, device_id=0) for _ in range(3))
    info = LaunchInfo("K", None, 1)  # type: ignore[arg-type]
    seen: list[str] = []

    def body_checks_claim() -> None:
        seen.append(ledger.state(a))

    assert ExecuteScope.launching(ledger, bus, info, [], [(a, "a")]).execute(body_checks_claim)
    assert seen == ["claimed"] and ledger.state(a) == "clean"

    refused = ResourceError("the driver said no")
    assert not ExecuteScope.launching(ledger, bus, info, [], [(b, "b")]).execute(lambda: refused)
    assert ledger.get(b).error is refused and ledger.state(b) == "failed"

    class Interrupted(BaseException):
        pass

    def body_interrupted() -> None:
        raise Interrupted("stopped mid-launch")

    with pytest.raises(Interrupted):
        ExecuteScope.launching(ledger, bus, info, [], [(c, "c")]).execute(body_interrupted)
    assert ledger.state(c) == "claimed"
    assert "never finished: Interrupted: stopped mid-launch" in str(ledger.error_for(c))

    # a launch reading `b` is skipped and never runs its body
    ran: list[bool] = []
    scope = ExecuteScope.launching(ledger, bus, LaunchInfo("Down", None, 2), [b], [(a, "a")])  # type: ignore[arg-type]
    assert scope.skipped and not scope.execute(lambda: ran.append(True)) and not ran
    assert ledger.get(a).error is refused and ledger.get(a).skipped == ("Down",)
