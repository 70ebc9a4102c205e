"""The persistent compilation store (`runtime/store.py`, DESIGN §8): a second process loads what
the first compiled, on both runtimes; what changes the code — a global the kernel reads, an
option, the target, the device — is a new key, so stale code is never loaded; two processes
writing at once leave whole entries; a corrupt entry is ignored and rewritten; the folder stays
under its bound; `CUBELAB_CACHE_DIR=off` turns it off; and this suite's own store is a temp dir.

The processes are real (`python` children sharing one store folder): the store exists for the
next process, and only a next process can show it works.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from cubelab.runtime.store import CompilationStore, cache_dir, content_digest

ROOT = Path(__file__).resolve().parent.parent

CHILD = textwrap.dedent('''
    import json, os, sys
    import numpy as np
    from cubelab.prelude import *
    from cubelab import BufferArg, CubeCount, CubeDim, Device
    from cubelab.runtime import events as ev

    SCALE = float(os.environ.get("STORE_TEST_SCALE", "2.0"))  # read at expansion: a literal

    @cube(launch=True)
    def scale(x: Slice[f32], y: SliceMut[f32]):
        if ABSOLUTE_POS < x.len():
            y[ABSOLUTE_POS] = x[ABSOLUTE_POS] * SCALE

    @cube(launch=True)
    def count_to(y: SliceMut[u32], n: u32):
        acc = u32(0)
        for i in range(n):
            acc += u32(1)
        y[ABSOLUTE_POS] = acc

    client = getattr(Device, sys.argv[1])().client()
    options = json.loads(sys.argv[2])
    if options:
        client.set_compilation_options(**options)
    with client.events.record(ev.CompileFinished) as rec:
        x = client.create_from_slice(f32.as_bytes(np.arange(8, dtype=np.float32)))
        y = client.create_from_slice(f32.as_bytes(np.zeros(8, dtype=np.float32)))
        scale.launch(client, CubeCount.Static(1), CubeDim.new_1d(8), BufferArg.from_raw_parts(x, 8),
                     BufferArg.from_raw_parts(y, 8))
        n = client.create_from_slice(u32.as_bytes(np.zeros(4, dtype=np.uint32)))
        count_to.launch(client, CubeCount.Static(1), CubeDim.new_1d(4),
                        BufferArg.from_raw_parts(n, 4), 5)
        scaled = f32.from_bytes(client.read_one(y)).tolist()
        counted = u32.from_bytes(client.read_one(n)).tolist()
    print(json.dumps({"origins": {e.kernel: e.origin for e in rec.of(ev.CompileFinished)},
                      "expand_ms": {e.kernel: e.expand_s * 1e3 for e in rec.of(ev.CompileFinished)},
                      "scaled": scaled, "counted": counted}))
''')


@pytest.fixture(scope="module")
def child(tmp_path_factory):
    path = tmp_path_factory.mktemp("store_child") / "kernels_for_the_store.py"
    path.write_text(CHILD)
    return path


def run(child: Path, store: Path, runtime: str, options: dict | None = None,
        scale: str = "2.0", wait: bool = True):
    env = dict(os.environ, CUBELAB_CACHE_DIR=str(store), STORE_TEST_SCALE=scale,
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    for name in ("MESA_SHADER_CACHE_DIR", "MESA_SHADER_CACHE_MAX_SIZE"):  # this process's
        env.pop(name, None)
    proc = subprocess.Popen([sys.executable, str(child), runtime, json.dumps(options or {})],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc if not wait else finish(proc)


def finish(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_a_second_process_loads_what_the_first_compiled_and_a_changed_global_compiles(
        child, tmp_path, cpu_client):
    store = tmp_path / "store"
    first = run(child, store, "cpu")
    assert first["origins"] == {"Scale": "compiled", "CountTo": "compiled"}
    second = run(child, store, "cpu")
    assert second["origins"] == {"Scale": "loaded", "CountTo": "loaded"}
    assert second["expand_ms"] == {"Scale": 0.0, "CountTo": 0.0}  # nothing expanded
    assert second["scaled"] == first["scaled"] == [2.0 * i for i in range(8)]
    assert second["counted"] == [5] * 4
    # the kernel reads a global whose value changed: its code changed, so it is not loaded
    third = run(child, store, "cpu", scale="3.0")
    assert third["origins"]["Scale"] == "compiled" and third["origins"]["CountTo"] == "loaded"
    assert third["scaled"] == [3.0 * i for i in range(8)]
    # an option that changes the loop guard: the looping kernel compiles anew; the loop-free
    # one compiles to the very code stored under the old options, so only a key is written
    fourth = run(child, store, "cpu", {"loop_budget": 1000})
    assert fourth["origins"] == {"Scale": "rekeyed", "CountTo": "compiled"}
    assert fourth["counted"] == [5] * 4


def test_a_second_process_loads_what_the_first_compiled_on_wgpu(child, tmp_path, wgpu_client):
    store = tmp_path / "store"
    assert run(child, store, "wgpu")["origins"] == {"Scale": "compiled", "CountTo": "compiled"}
    second = run(child, store, "wgpu")
    assert second["origins"] == {"Scale": "loaded", "CountTo": "loaded"}
    assert second["scaled"] == [2.0 * i for i in range(8)] and second["counted"] == [5] * 4
    # the driver's shader cache is kept beside cubelab's part (lavapipe: Mesa's disk cache)
    assert (store / "mesa").is_dir()


def test_two_processes_writing_the_store_at_once_leave_whole_entries(child, tmp_path,
                                                                      cpu_client):
    store = tmp_path / "store"
    a, b = (run(child, store, "cpu", wait=False) for _ in range(2))
    for result in (finish(a), finish(b)):
        assert result["scaled"] == [2.0 * i for i in range(8)] and result["counted"] == [5] * 4
    assert not list(store.rglob(".tmp-*"))  # no half-written file left behind
    third = run(child, store, "cpu")
    assert third["origins"] == {"Scale": "loaded", "CountTo": "loaded"}


def test_a_corrupt_entry_is_ignored_and_rewritten(child, tmp_path, cpu_client):
    store = tmp_path / "store"
    run(child, store, "cpu")
    objects = list((store / "v1" / "objects").rglob("*"))
    objects = [p for p in objects if p.is_file()]
    assert len(objects) == 2
    objects[0].write_bytes(objects[0].read_bytes()[:-7] + b"garbage")  # a torn write
    objects[1].write_bytes(b"not an entry at all")
    second = run(child, store, "cpu")  # ignored: compiled again, results right
    assert second["origins"] == {"Scale": "compiled", "CountTo": "compiled"}
    assert second["scaled"] == [2.0 * i for i in range(8)] and second["counted"] == [5] * 4
    assert run(child, store, "cpu")["origins"] == {"Scale": "loaded", "CountTo": "loaded"}


class _Noop:
    """A student pass that changes nothing — still another pipeline, so another key."""

    name = "noop"

    def run(self, definition):
        return definition


def test_the_key_changes_with_the_options_the_target_and_the_device(cpu_client, wgpu_client):
    from tests.fixtures.kernels import saxpy
    from cubelab.inspect import instance
    from cubelab.prelude import f32
    from cubelab.runtime.kernel_id import CubeDim

    k = instance(saxpy, f32, sizes=(4,), cube_dim=CubeDim.new_1d(4))
    cpu, gpu = cpu_client._server, wgpu_client._server
    key = cpu._store_key(k, k.id())
    assert key == cpu._store_key(k, k.id())  # stable
    assert key != gpu._store_key(k, k.id())  # another runtime, target and device
    saved = cpu.options
    try:
        cpu.options = dataclasses.replace(saved, loop_budget=12345)
        assert cpu._store_key(k, k.id()) != key  # another option
        cpu.options = dataclasses.replace(saved, extra_passes=(_Noop(),))
        assert cpu._store_key(k, k.id()) != key  # an extra pass
    finally:
        cpu.options = saved
    other = instance(saxpy, f32, sizes=(2,), cube_dim=CubeDim.new_1d(4))
    assert cpu._store_key(other, other.id()) != key  # another KernelId


def test_a_kernels_fingerprint_follows_the_globals_it_reads():
    from tests.fixtures import kernels_for_the_store_fingerprint as m

    before = m.uses_tile.fingerprint()
    m.TILE = m.TILE * 2
    try:
        assert m.uses_tile.fingerprint() != before  # the kernel reads TILE
        assert m.ignores_tile.fingerprint() == m.ignores_tile.fingerprint()
    finally:
        m.TILE = m.TILE // 2
    assert m.uses_tile.fingerprint() == before


def test_a_store_entry_round_trips_and_a_broken_one_is_a_miss(tmp_path):
    s = CompilationStore(tmp_path)
    digest = content_digest({"wgsl": "fn main() {}"})
    s.save("k" * 64, digest, {"entry": "main", "value": (1, 2.5, "x", frozenset({3}))})
    assert s.load("k" * 64) == {"entry": "main", "value": (1, 2.5, "x", frozenset({3}))}
    assert s.has_content(digest)
    s.save("j" * 64, digest, None)  # another key for the same code: only the key is written
    assert s.load("j" * 64)["entry"] == "main"
    (tmp_path / "v1" / "keys" / "kk" / ("k" * 64)).write_text("not a digest")
    assert s.load("k" * 64) is None and s.misses == 1
    assert not (tmp_path / "v1" / "keys" / "kk" / ("k" * 64)).exists()  # removed


def test_the_unpickler_refuses_anything_but_cubelabs_classes(tmp_path):
    import hashlib
    import pickle
    import zlib

    from cubelab.runtime.store import MAGIC

    s = CompilationStore(tmp_path)
    digest = "a" * 64
    body = zlib.compress(pickle.dumps({"entry": subprocess.Popen}))  # a class it must not load
    path = tmp_path / "v1" / "objects" / "aa" / digest
    path.parent.mkdir(parents=True)
    path.write_bytes(MAGIC + hashlib.sha256(body).digest() + body)
    s._write(tmp_path / "v1" / "keys" / "kk" / ("k" * 64), (digest + "\n").encode())
    assert s.load("k" * 64) is None and s.corrupt == 1


def test_the_store_stays_under_its_bound_evicting_the_least_recently_used(tmp_path):
    s = CompilationStore(tmp_path, limit=64 * 1024)
    for i in range(40):
        payload = {"blob": os.urandom(4096)}  # incompressible: 4 KiB each
        s.save(f"{i:064x}", content_digest({"i": str(i)}), payload)
        os.utime(s._key_path(f"{i:064x}"), (i, i))
        os.utime(s._object_path(content_digest({"i": str(i)})), (i, i))
    s.evict()
    assert s.size() <= 64 * 1024
    assert s.load(f"{39:064x}") is not None  # the most recent survive
    assert s.load(f"{0:064x}") is None and s.evicted > 0


def test_the_store_and_the_driver_cache_folders_are_private(tmp_path, monkeypatch):
    import stat

    from cubelab.runtime.store import driver_cache_env

    for name in ("MESA_SHADER_CACHE_DIR", "MESA_GLSL_CACHE_DIR", "__GL_SHADER_DISK_CACHE_PATH"):
        monkeypatch.delenv(name, raising=False)  # (this session's device may have set them)
    root = tmp_path / "fresh" / "cubelab"
    env = driver_cache_env(root)
    assert env["MESA_SHADER_CACHE_DIR"] == str(root / "mesa")
    assert env["__GL_SHADER_DISK_CACHE_PATH"] == str(root / "nvidia")
    for folder in (root, root / "mesa", root / "nvidia"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_cubelab_cache_dir_off_turns_the_store_off(monkeypatch):
    monkeypatch.setenv("CUBELAB_CACHE_DIR", "off")
    assert cache_dir() is None and CompilationStore.open() is None


def test_this_suite_never_writes_into_the_users_cache_folder():
    # tests/conftest.py points the store (and the driver cache in it) at a session temp dir
    # before anything opens it; notebook kernels and children inherit the variable
    assert str(cache_dir()).startswith(tempfile.gettempdir())
    assert ".cache" not in str(cache_dir())


def test_a_runtime_never_loads_code_another_runtime_compiled(tmp_path, monkeypatch, cpu_client,
                                                             wgpu_client):
    """wgpu runs WGSL and shows MSL and CUDA C++; the CUDA runtime runs CUDA C++ and shows WGSL
    and MSL — one kernel's three sources are the same for both. The content digest once left out
    which of them runs, so the second runtime's compile was "rekeyed" onto the first one's
    object and its next process loaded the other runtime's code (on the H200, NVRTC was handed
    WGSL). Now the digest names the running target, and an entry whose code runs on another
    target is a miss. Here a key of the CPU runtime is made to point at wgpu's object — what
    the old digest did — and the CPU runtime compiles rather than load it."""
    from cubelab import BufferArg, CubeCount, CubeDim
    from cubelab.prelude import f32
    from cubelab.runtime import events as ev
    from tests.fixtures.kernels import saxpy

    import numpy as np

    store = CompilationStore(tmp_path)
    cpu, gpu = cpu_client._server, wgpu_client._server
    monkeypatch.setattr(cpu, "_store", store)
    monkeypatch.setattr(gpu, "_store", store)

    def launch(client):
        x = client.create_from_slice(f32.as_bytes(np.arange(8, dtype=np.float32)))
        y = client.create_from_slice(f32.as_bytes(np.ones(8, dtype=np.float32)))
        with client.events.record(ev.CompileFinished) as rec:
            saxpy.launch[f32](client, CubeCount.Static(1), CubeDim.new_1d(8), 4, 3.0,
                              BufferArg.from_raw_parts(x, 8), BufferArg.from_raw_parts(y, 8))
            got = f32.from_bytes(client.read_one(y))
        return [e.origin for e in rec.of(ev.CompileFinished)], got

    assert content_digest({"wgsl": "a", "cuda": "b"}, runs="wgsl") != \
        content_digest({"wgsl": "a", "cuda": "b"}, runs="cuda")
    launch(wgpu_client)  # compiled on wgpu, stored after its first dispatch
    (wgpu_key,) = [p for p in (store.base / "keys").rglob("*") if p.is_file()]
    digest = wgpu_key.read_text().strip()
    from cubelab.inspect import instance

    k = instance(saxpy, f32, sizes=(4,), cube_dim=CubeDim.new_1d(8))
    store.save(cpu._store_key(k, k.id()), digest, None)  # the CPU key -> wgpu's object
    origins, got = launch(cpu_client)
    assert origins == ["compiled"]
    np.testing.assert_allclose(got, 3.0 * np.arange(8) + 1.0)
