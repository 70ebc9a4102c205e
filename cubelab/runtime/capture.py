"""Graph capture: record a window of launches once, replay them as one submission.

`client.start_capture()` opens a recording window on the calling thread's stream; launches on
that stream are compiled and checked as usual but *recorded*, not run; `client.stop_capture()`
seals the window into a `Graph`, and `graph.replay()` re-encodes every recorded dispatch into
one command buffer and submits it once. On wgpu this is a software graph (CUDA and HIP record a
hardware graph); what it amortizes is the per-launch hand-off and bookkeeping, the way autotune
amortizes compilation.

What the window refuses, and which refusals doom the capture — the rule is whether the recorded
work is still the work the window saw (seed 001's "a recording must never be handed back
quietly lacking something", CubeCL's wgpu graph tests):

- a **read**, `sync`/`sync_buffers`, or **profiling** raises `CaptureError` on the spot and is
  rejected: it never reaches the device, the recording is untouched (a profiled launch is handed
  back unrecorded, and the caller was told so by the exception), so the capture goes on and
  `stop_capture` returns the graph with the rejected operations listed (`Graph.refused`, and the
  `CaptureStopped` event) — CubeCL's `wgpu_graph_read_rejected_while_recording`;
- a **host write** (`client.write`, or `create_from_slice`: a new buffer *with host data*)
  raises on the spot *and* dooms the capture: the window's later launches were recorded to read
  the written data, which a graph cannot carry (fresh inputs are written between replays), so a
  replay would compute from other bytes than the window did;
- a launch that **fails to compile**, or is **skipped** because an input carries a failure,
  dooms it silently at the launch (a launch is fire-and-forget): the recording lacks a launch
  the window issued.
A doomed capture's `stop_capture` raises `CaptureError` listing what doomed it (and what was
rejected) — never a graph that quietly lacks something.

An **allocation** (`empty`, `zeros`) inside the window is allowed and recorded
(`Graph.allocations`: each with whether the pool served it from memory it held or had to grow):
every cubelab runtime replays a *software* graph — the recorded dispatches are re-encoded
against the recording's buffers, which the graph keeps alive — so a fresh buffer is as sound as
one made before the window (CubeCL's `wgpu_graph_mid_capture_allocation_is_allowed`). The seed's
stricter rule, that a request the pool cannot serve fails the recording, is a hardware graph's
(CUDA/HIP record the allocation as a node and cannot relaunch it); it is why a warm-up run comes
first, and `allocations` shows which ones a hardware graph would have refused.

Replay's contract: every buffer the recording touched is still alive — a `Graph` holds its
handles, so dropping them elsewhere does not release their memory, and replaying after
`client.free` of one of them raises `ReleasedHandleError` — and, unchecked like CubeCL's, nobody
else is using them during the replay, and results are read after it like any launch's.
Each replayed dispatch still goes through the ExecuteScope, so failures stay buffer state.

Refusing `start_capture` (a window already open on the stream) leaves the existing capture as
it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cubelab.errors import CaptureError, hinted

if TYPE_CHECKING:
    from cubelab.runtime.kernel_id import CubeKernel
    from cubelab.runtime.launch_args import Bindings, CubeCount
    from cubelab.runtime.server import PipelineEntry


@dataclass(slots=True)
class Recorded:
    kernel: "CubeKernel"
    entry: "PipelineEntry"
    count: "CubeCount"
    bindings: "Bindings"


@dataclass(frozen=True, slots=True)
class CaptureAllocation:
    """A buffer allocated inside a capture window: `grew` when the pool had to ask the driver
    for a new page (what a hardware graph could not record)."""

    handle_id: int
    size: int
    grew: bool


@dataclass
class Capture:
    """An open recording window on one stream (device thread only)."""

    stream: int
    records: list[Recorded] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)  # what dooms the capture
    rejected: list[str] = field(default_factory=list)  # refused on the spot, recording sound
    allocations: list[CaptureAllocation] = field(default_factory=list)

    def refuse(self, what: str) -> CaptureError:
        """Doom the capture for `what`; the error to raise where it happened."""
        self.refusals.append(what)
        return CaptureError(hinted(f"refused inside a graph capture window (stream "
                                   f"{self.stream}): {what}; the capture is doomed and "
                                   "stop_capture will fail", "do it before start_capture, then "
                                   "start the capture again"))

    def reject(self, what: str) -> CaptureError:
        """Refuse `what` on the spot without touching the recording: the capture goes on."""
        self.rejected.append(what)
        return CaptureError(hinted(f"refused inside a graph capture window (stream "
                                   f"{self.stream}): {what}; nothing was recorded for it and "
                                   "the capture goes on", "do it between replays"))

    def seal(self) -> list[Recorded]:
        if self.refusals:
            also = ("\nAlso rejected on the spot: " + ", ".join(self.rejected)) \
                if self.rejected else ""
            raise CaptureError(
                f"graph capture on stream {self.stream} failed; the recording would lack what "
                "the window did:\n  - " + "\n  - ".join(self.refusals) + also
                + "\n  hint: warm up before start_capture (compile, and make inputs with their "
                "data, outside the window), and write host data only between replays"
            )
        return list(self.records)


class Graph:
    """A sealed recording. `replay()` submits every recorded dispatch again, in one submission."""

    def __init__(self, client: Any, records: list[Recorded], stream: int,
                 refused: tuple[str, ...] = (),
                 allocations: tuple[CaptureAllocation, ...] = ()) -> None:
        self._client = client
        self.records = records
        self.stream = stream
        # what the window rejected on the spot (reads, syncs, profiling): not recorded, and
        # reported here, as CubeCL's stop_capture succeeds after a rejected read
        self.refused = refused
        self.allocations = allocations
        # every handle the recording uses, once: the graph keeps them alive (their memory is
        # not reused while it lives) and replay refuses if one was freed explicitly
        seen: dict[int, Any] = {}
        for r in records:
            for b in r.bindings.buffers:
                seen[b.handle.id] = b.handle
            if r.count.handle is not None:
                seen[r.count.handle.id] = r.count.handle
        self.handles = tuple(seen.values())

    def __len__(self) -> int:
        return len(self.records)

    @property
    def kernels(self) -> list[str]:
        return [r.kernel.name for r in self.records]

    def replay(self) -> None:
        """Fire and forget, like `launch`: results are read (or checked) afterwards."""
        self._client._replay(self)

    def __repr__(self) -> str:
        extra = ""
        if self.allocations:
            grew = sum(a.grew for a in self.allocations)
            extra += f"; {len(self.allocations)} allocation(s) in the window ({grew} grew the pool)"
        if self.refused:
            extra += f"; rejected in the window: {', '.join(self.refused)}"
        return f"Graph({len(self.records)} dispatches on stream {self.stream}: {self.kernels}{extra})"
