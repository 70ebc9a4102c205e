"""`CUBELAB_DEBUG_LOG=stdout|stderr|<path>`: the seed's compilation log, as an event subscriber.

For every compile it prints

    [START_KERNEL_COMPILATION]
    name: <module>::saxpy::Saxpy<f32>
    id: KernelId { ... }          (Rust-Debug layout, as in the seed)
    origin: loaded                (only when the persistent store served it: loaded | rekeyed)
    source:
    <generated WGSL, or any target's with CUBELAB_DEBUG_TARGET=<name> (msl, cuda, ...)>
    [END_KERNEL_COMPILATION]

and for every launch a profile line `| 12.334µs   | Saxpy | f32_daf77f4d`. As in CubeCL, turning
the log on makes every launch blocking (each is timed to completion), so timings taken with it on
are not the times of a normal run.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TextIO

from cubelab.errors import hinted
from cubelab.compiler.targets import TARGETS
from cubelab.runtime import events as ev


def format_duration(seconds: float) -> str:
    us = seconds * 1e6
    if us < 1000:
        return f"{us:.3f}µs"
    if us < 1e6:
        return f"{us / 1000:.3f}ms"
    return f"{seconds:.3f}s"


class DebugLog:
    def __init__(self, dest: str, target: str | None = None) -> None:
        """`target`: whose source the log prints — None, the target that runs the kernel (WGSL
        on wgpu, the IR on the CPU runtime), or any name of `compiler.targets.TARGETS` (the
        running target's source when that one was not rendered)."""
        if target is not None and target not in TARGETS:
            raise ValueError(hinted(f"the debug log prints a target's source; {target!r} is no "
                                    "target", f"the targets are {', '.join(TARGETS)}"))
        self.dest = dest
        self.target = target
        self._lock = threading.Lock()
        self._file: TextIO | None = None

    @staticmethod
    def from_env() -> "DebugLog | None":
        dest = os.environ.get("CUBELAB_DEBUG_LOG", "").strip()
        if not dest or dest.lower() in ("0", "off", "false", "none"):
            return None
        target = os.environ.get("CUBELAB_DEBUG_TARGET", "").strip().lower() or None
        try:
            return DebugLog(dest, target)
        except ValueError as exc:
            raise ValueError(f"CUBELAB_DEBUG_TARGET: {exc}") from None  # hint: exc's

    def _write(self, text: str) -> None:
        with self._lock:
            if self.dest == "stdout":
                out: TextIO = sys.stdout
            elif self.dest == "stderr":
                out = sys.stderr
            else:
                if self._file is None:
                    self._file = open(self.dest, "a", encoding="utf-8")  # noqa: SIM115
                out = self._file
            out.write(text)
            out.flush()

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.CompileFinished):
            source, lang = event.source, event.target  # the CPU runtime's source is its IR
            if self.target is not None and self.target != event.target and \
                    self.target in event.extra_sources:
                source, lang = event.extra_sources[self.target], self.target
            # a compile the persistent store served says so (a plain compile prints as the seed)
            origin = f"origin: {event.origin}\n" if event.origin != "compiled" else ""
            if event.kernel_id.alignment:  # seed 001's cache key is (kernel_id, alignment)
                origin = f"alignment: {event.kernel_id.alignment}\n" + origin
            self._write(
                "[START_KERNEL_COMPILATION]\n"
                f"name: {event.kernel_id.type}\n"
                f"id: {event.kernel_id.debug()}\n"
                f"{origin}"
                "source:\n"
                f"```{lang}\n{source.rstrip()}\n```\n"
                "[END_KERNEL_COMPILATION]\n\n"
            )
        elif isinstance(event, ev.ProfileSample):
            self._write(f"| {format_duration(event.duration_s):<10} | {event.kernel} | {event.tag}\n")
