"""Graph capture: record a window of launches once, replay them as one submission.

`client.start_capture()` opens a recording window on the calling thread's stream; launches on
that stream are compiled and checked as usual but *recorded*, not run; `client.stop_capture()`
seals the window into a `Graph`, and `graph.replay()` re-encodes every recorded dispatch into
one command buffer and submits it once. On wgpu this is a software graph (CUDA and HIP record a
hardware graph); what it amortizes is the per-launch hand-off and bookkeeping, the way autotune
amortizes compilation.

What the window refuses, and why: a **read** or a **sync** would need the recording to have run;
**profiling** needs timestamps around each launch, while a recording is kernels only; a **host
write** cannot be carried by a recorded graph (fresh inputs are written between replays). Each
refusal raises `CaptureError` on the spot *and* dooms the capture, so `stop_capture` fails and
lists them — never a graph that quietly lacks what the window skipped. An **allocation** inside
the window also dooms it: a recording must reuse memory that already exists, which is what a
warm-up run before `start_capture` is for (run the work once, then record it). A launch skipped
because one of its inputs carries a failure dooms the capture too: the recording would be
missing that launch.

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

from cubelab.errors import CaptureError

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


@dataclass
class Capture:
    """An open recording window on one stream (device thread only)."""

    stream: int
    records: list[Recorded] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)

    def refuse(self, what: str) -> CaptureError:
        self.refusals.append(what)
        return CaptureError(f"refused inside a graph capture window (stream {self.stream}): "
                            f"{what}; the capture is doomed and stop_capture will fail")

    def seal(self) -> list[Recorded]:
        if self.refusals:
            raise CaptureError(
                f"graph capture on stream {self.stream} failed; refused inside the window:\n  - "
                + "\n  - ".join(self.refusals)
                + "\nWarm up before start_capture (allocate and compile outside the window), and "
                "read, sync, profile or write host data only between replays."
            )
        return list(self.records)


class Graph:
    """A sealed recording. `replay()` submits every recorded dispatch again, in one submission."""

    def __init__(self, client: Any, records: list[Recorded], stream: int) -> None:
        self._client = client
        self.records = records
        self.stream = stream
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
        return f"Graph({len(self.records)} dispatches on stream {self.stream}: {self.kernels})"
