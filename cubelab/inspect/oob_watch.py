"""Every out-of-bounds access of every launch, on any runtime: what `%cubelab oob on` runs.

    watch = OobWatch(client)       # from now on each launch on `client` is re-run on the CPU
    ...launches...
    for kernel, accesses, total in watch.take(): ...
    watch.close()

On wgpu an unguarded read past the end quietly gives 0 and a write is dropped (what WebGPU
drivers do), so a wrong kernel can print right-looking numbers. The CPU runtime sees every
index: in its "report" mode each out-of-bounds access is recorded with the unit, the buffer, the
index and the kernel line. So each launch the client executes is re-run there first — on copies
of its buffers as the launch will find them, compiled with the client's own options — and what
the re-run saw is kept until the notebook prints it under the cell that launched.

The contract: the watched launch itself is untouched (same runtime, same buffers, same result);
the re-run happens on the calling thread before the launch is queued (`Client.watch_launches`),
on a private CPU device, so its compiles and launches never show in the student's monitors and
the student's own CPU client (if that is the one watched) never runs in report mode, where an
out-of-bounds write would fail its buffer. The cost: each launch waits for the work before it
(its inputs are read back) and runs once more on numpy — turn it off to time anything.
A launch whose inputs carry a failure is not re-run (it will be skipped anyway, seed 001).
"""

from __future__ import annotations

import contextlib
import io
import threading
from typing import Any

from cubelab.errors import CubeError
from cubelab.runtime.launch_args import BufferBinding, Bindings, CubeCount

__all__ = ["OobWatch", "report_lines"]

_private_cpu: Any = None
_private_lock = threading.Lock()


def _cpu_client() -> Any:
    """A CPU device of its own: re-runs never share a cache, a bus or a mode with the student's."""
    global _private_cpu
    with _private_lock:
        if _private_cpu is None:
            from cubelab.runtime.device import Device

            _private_cpu = Device("cpu").client()
        return _private_cpu


class OobWatch:
    """Re-runs each executed launch of `client` on the CPU runtime and keeps its out-of-bounds
    accesses (`take()`), until `close()`."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._found: list[tuple[str, list[Any], int]] = []
        self._lock = threading.Lock()
        self._inside = threading.local()
        self._stop = client.watch_launches(self._rerun)

    def close(self) -> None:
        self._stop()

    def take(self) -> list[tuple[str, list[Any], int]]:
        """(kernel, the first accesses, how many in all) per launch that stepped out, since
        the last `take`."""
        with self._lock:
            found, self._found = self._found, []
        return found

    def _rerun(self, kernel: Any, count: CubeCount, bindings: Bindings) -> None:
        if getattr(self._inside, "on", False):
            return  # our own launch on the CPU client we watch
        self._inside.on = True
        try:
            self._rerun_on_cpu(kernel, count, bindings)
        finally:
            self._inside.on = False

    def _rerun_on_cpu(self, kernel: Any, count: CubeCount, bindings: Bindings) -> None:
        from cubelab.inspect.trace import same_options
        from cubelab.runtime.cpu import oob_mode

        cpu = _cpu_client()
        copies: dict[int, Any] = {}

        def copy(handle: Any) -> Any:
            if handle.id not in copies:
                copies[handle.id] = cpu.create_from_slice(self.client.read_one(handle))
            return copies[handle.id]

        try:
            buffers = [BufferBinding(copy(b.handle), b.items, b.writable, b.name, b.shape,
                                     b.strides) for b in bindings.buffers]
            if count.handle is not None:
                count = CubeCount.Dynamic(copy(count.handle))
        except CubeError:
            return  # an input carries a failure: the launch will be skipped, nothing to see
        rerun = Bindings(buffers, {k: list(v) for k, v in bindings.scalars.items()})
        printed = io.StringIO()  # the re-run's debug_print lines: the launch itself prints them
        with contextlib.redirect_stdout(printed), same_options(self.client, cpu), \
                oob_mode(cpu, "report") as result:
            cpu.launch(kernel, count, rerun)
            cpu.sync()
        total = sum(r.oob_total for r in result.launches)
        if total:
            with self._lock:
                name = getattr(getattr(kernel, "fn", None), "__name__", kernel.name)
                self._found.append((name, list(result.oob), total))


def report_lines(kernel: str, accesses: list[Any], total: int, shown: int = 20) -> list[str]:
    """What `%cubelab oob on` prints for one launch."""
    lines = [f"cubelab: {total} out-of-bounds access{'es' if total != 1 else ''} in `{kernel}` "
             "(seen by re-running the launch on the CPU runtime):"]
    then = {"clamped": "clamped to the last item", "zero": "read as 0", "dropped": "dropped",
            "failed": "dropped"}
    for a in accesses[:shown]:  # two short lines each: a printed report never wraps mid-word
        verb = "writes" if a.write else "reads"
        lines.append(f"  unit {a.absolute} {verb} {a.buffer}[{a.index}], but {a.buffer} has "
                     f"{a.length} items ({then.get(a.outcome, a.outcome)})")
        lines.append(f"      line {a.line}: {a.source}")
    if total > min(shown, len(accesses)):
        lines.append(f"  ... and {total - min(shown, len(accesses))} more")
    return lines
