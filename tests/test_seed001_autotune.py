"""Seed 001 (with chapter 5): autotune as search. All candidates precompile under a dry run,
the survivors are measured under `real_run`, the winner is cached per key, and a failing
candidate — however fast it looks — is disqualified.
"""

from __future__ import annotations

import numpy as np
import pytest

import cubelab
from cubelab import BufferArg, CubeCount, CubeDim
from cubelab.prelude import f32
from cubelab.runtime import events as ev
from cubelab.runtime.autotune import AutotuneError, Tuner, autotune, score
from tests.fixtures.seed001_kernels import bad_widths, scale, scale_slow

N = 4096


def floats(client, values):
    return client.create_from_slice(f32.as_bytes(np.asarray(values, dtype=np.float32)))


def make_tuner(client, *, with_failures=True):
    grid, dim = CubeCount.Static(N // 64), CubeDim.new_1d(64)

    def arg(h):
        return BufferArg.from_raw_parts(h, N)

    # The same result after wasted iterations per unit, ~100x slower everywhere: the CPU
    # runtime and lavapipe pay ~60 µs per round, a real GPU only a few ns, so it gets more.
    props = client.properties()
    on_cpu = client.name().startswith("cpu") or "cpu" in props.adapter_type.lower()
    rounds = 2000 if on_cpu else 200_000

    def slow(x, out):
        scale_slow.launch(client, grid, dim, arg(x), arg(out), 2.0, rounds)

    def fast(x, out):
        scale.launch(client, grid, dim, arg(x), arg(out), 2.0)

    def does_not_compile(x, out):
        bad_widths.launch(client, grid, dim, BufferArg.from_raw_parts(x, N),
                          BufferArg.from_raw_parts(x, N), arg(out))

    def over_the_limit(x, out):  # compiles, is refused at dispatch: looks instant, must lose
        limit = client.properties().max_cubes_per_dim
        scale.launch(client, CubeCount.Static(limit + 1), dim, arg(x), arg(out), 2.0)

    cands = [slow, does_not_compile, over_the_limit, fast] if with_failures else [slow, fast]
    return autotune(client, *cands, key=lambda x, out: "n=%d" % (x.size // 4), name="scale",
                    warmups=3, samples=5)


def test_autotune_picks_the_faster_candidate_and_never_a_failing_one(client):
    x, out = floats(client, np.arange(N)), floats(client, np.zeros(N))
    tuner = make_tuner(client)
    with client.events.record() as rec:
        tuner(x, out)
        result = f32.from_bytes(client.read_one(out))
    np.testing.assert_array_equal(result, 2.0 * np.arange(N))  # the winner ran on our inputs
    (done,) = rec.of(ev.AutotuneFinished)
    assert done.winner == "fast"
    scores = dict(done.scores)
    assert scores["does_not_compile"] is None and scores["over_the_limit"] is None
    assert scores["fast"] < scores["slow"]
    failed = {e.candidate: e.error for e in rec.of(ev.AutotuneCandidateFailed)}
    assert set(failed) == {"does_not_compile", "over_the_limit"}
    assert "vectors of widths 2 and 4" in str(failed["does_not_compile"])
    assert "cubes per dimension" in str(failed["over_the_limit"])
    # precompile first (under a dry run: compiled, not dispatched), then warm-ups and samples
    phases = [e.phase for e in rec.of(ev.AutotuneProgress)]
    assert phases[:4] == ["precompile"] * 4
    assert phases.count("warmup") == 2 * 3 and phases.count("sample") == 2 * 5
    progress = rec.of(ev.AutotuneProgress)
    assert progress[-1].done <= progress[-1].total
    measured = {e.candidate for e in rec.of(ev.AutotuneCandidateMeasured)}
    assert measured == {"slow", "fast"}


def test_autotune_caches_the_winner_per_key(client):
    tuner = make_tuner(client, with_failures=False)
    x, out = floats(client, np.arange(N)), floats(client, np.zeros(N))
    with client.events.record(ev.AutotuneStarted, ev.AutotuneFinished) as rec:
        tuner(x, out)
        tuner(x, out)
        tuner(x, out)
    assert len(rec.of(ev.AutotuneStarted)) == 1 and len(rec.of(ev.AutotuneFinished)) == 1
    assert list(tuner.cache) == [f"n={N}"]


def test_autotune_inside_a_dry_run_measures_for_real_but_drops_the_final_run(client):
    tuner = make_tuner(client, with_failures=False)
    x, out = floats(client, np.arange(N)), floats(client, np.full(N, -1.0))
    with client.events.record(ev.AutotuneCandidateMeasured) as rec, cubelab.dry_run():
        # the measurements are real (they write `out`), the caller's final launch is dropped
        tuner(x, out)
    assert {e.candidate for e in rec.of(ev.AutotuneCandidateMeasured)} == {"slow", "fast"}
    assert all(e.min_s > 0 for e in rec.of(ev.AutotuneCandidateMeasured))
    np.testing.assert_array_equal(f32.from_bytes(client.read_one(out)), 2.0 * np.arange(N))


def test_when_every_candidate_fails_autotune_says_so(client):
    x, out = floats(client, np.arange(N)), floats(client, np.zeros(N))

    def broken(x, out):
        bad_widths.launch(client, CubeCount.Static(1), CubeDim.new_1d(64),
                          BufferArg.from_raw_parts(x, N), BufferArg.from_raw_parts(x, N),
                          BufferArg.from_raw_parts(out, N))

    with pytest.raises(AutotuneError, match="every candidate failed"):
        Tuner(client, "broken", candidates=[broken], samples=1)(x, out)


def test_the_score_is_mostly_the_minimum():
    assert score([1.0, 1.0, 1.0]) == pytest.approx(1.0)
    steady, noisy = score([2.0, 2.0, 2.0]), score([1.0, 3.0, 5.0])
    assert noisy > 0.8 * 1.0 + 0.2 * 3.0  # spread inflates it
    assert steady == pytest.approx(2.0)


@pytest.mark.parametrize("plain", [True, False])
def test_the_terminal_view_draws_an_autotune_search_from_its_events(client, plain):
    import io

    from cubelab.terminal import autotune_progress

    x, out = floats(client, np.arange(N)), floats(client, np.zeros(N))
    tuner = make_tuner(client)
    buf = io.StringIO()
    with autotune_progress(client, file=buf, plain=plain) as view:
        tuner(x, out)
    text = "\n".join(view.lines)
    assert "4 candidates (slow, does_not_compile, over_the_limit, fast)" in text
    assert "✗ does_not_compile: disqualified (KernelSourceError" in text
    assert "→ winner for key='n=4096': fast" in text
    assert "winner" in buf.getvalue()
