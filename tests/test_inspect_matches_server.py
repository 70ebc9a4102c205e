"""What the inspector previews is what the server compiled, byte for byte: for every core and zoo
kernel, `inspect.compiled` (and the kernel inspector's rebuild from a KernelId) gives the same
WGSL, MSL and IR as the CompileFinished event of a real compile on each runtime. Both go through
`compiler/pipeline.py`; this test is what keeps it that way."""

from __future__ import annotations

import pytest

import cubelab
from cubelab import CubeCount
from cubelab import inspect as ci
from cubelab.runtime import events as ev
from cubelab.runtime.launch_args import Bindings, BufferBinding
from tests.fixtures.kernel_instances import core_and_zoo_instances

INSTANCES = core_and_zoo_instances()


def _compile_on(client, k):  # type: ignore[no-untyped-def]
    """Compile `k` on the client's server (a dry run: compiled and cached, nothing dispatched)
    and return its CompileFinished event."""
    d = k.define()
    buffers = []
    for b in d.buffers:
        h = client.create_from_slice(bytes(16 * b.item.size))
        buffers.append(BufferBinding(h, 4, b.writable, b.name, (1, 1) if b.tensor else None,
                                     (1, 1) if b.tensor else None))
    scalars: dict[str, list[object]] = {}
    for sp in d.scalars:
        scalars.setdefault(sp.elem, []).append(False if sp.elem == "bool" else 0)
    client.clear_cache()
    with client.events.record(ev.CompileFinished, ev.CompileFailed) as rec, cubelab.dry_run():
        client.launch(k, CubeCount.Static(1, 1, 1), Bindings(buffers, scalars))
        client.sync()
    assert not rec.of(ev.CompileFailed), rec.of(ev.CompileFailed)[0].error
    (done,) = rec.of(ev.CompileFinished)
    return done


@pytest.mark.parametrize("name,k", INSTANCES, ids=[n for n, _ in INSTANCES])
def test_the_inspectors_wgsl_msl_and_ir_are_byte_identical_to_the_servers(client, name, k):
    done = _compile_on(client, k)
    # for the client's device: lavapipe's loop cap makes its compile unroll long loops
    preview = ci.compiled(k, client=client)
    rebuilt = ci.compiled(ci.instance_from_id(k.fn, done.kernel_id), client=client)
    for c in (preview, rebuilt):
        assert c.kernel_id == done.kernel_id
        assert c.ir == done.ir and c.expanded_ir == done.expanded_ir
        assert [(p.name, p.before, p.after) for p in c.passes] == list(done.passes)
        assert c.msl is not None and c.msl == done.extra_sources["msl"]
        if done.target == "wgsl":
            assert c.wgsl.source == done.source
    assert ci.msl(k, client=client) == done.extra_sources["msl"]
    if done.target == "wgsl":
        assert ci.wgsl(k, client=client) == done.source
