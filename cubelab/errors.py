"""cubelab's errors. Each names the kernel, points at the line, and says what to do instead.

    cubelab.KernelSourceError: in kernel `saxpy` at saxpy.py:7:9: `lambda` is not allowed in a kernel
        y[ABSOLUTE_POS] = (lambda v: v)(x[ABSOLUTE_POS])
                           ^
      hint: write a @cube helper function and call it instead
"""

from __future__ import annotations

import linecache


class CubeError(Exception):
    """Base of every error cubelab raises on purpose."""


def caret_block(file: str, line: int, col: int, source_line: str | None = None) -> str:
    text = source_line if source_line is not None else linecache.getline(file, line)
    text = text.rstrip("\n")
    if not text:
        return ""
    stripped = text.lstrip()
    shift = len(text) - len(stripped)
    return f"    {stripped}\n    {' ' * max(0, col - shift)}^"


class KernelSourceError(CubeError):
    """The kernel's Python source uses something a kernel cannot do."""

    def __init__(self, kernel: str, file: str, line: int, col: int, message: str,
                 hint: str = "", source_line: str | None = None) -> None:
        self.kernel, self.file, self.line, self.col = kernel, file, line, col
        self.message, self.hint = message, hint
        parts = [f"in kernel `{kernel}` at {file}:{line}:{col + 1}: {message}"]
        block = caret_block(file, line, col, source_line)
        if block:
            parts.append(block)
        if hint:
            parts.append(f"  hint: {hint}")
        super().__init__("\n".join(parts))


class LaunchError(CubeError):
    """A launch's arguments are wrong; raised on the calling thread, nothing was submitted."""


class FeatureError(CubeError):
    """The kernel needs an adapter feature (e.g. `subgroup` for plane ops) this device lacks."""


class CompileError(CubeError):
    """The generated source was refused by the driver (naga); names both source lines."""


class DeviceError(CubeError):
    """No device of the requested kind, or the device itself failed."""


class BufferFailure(CubeError):
    """Raised when reading a buffer that a failed launch should have written.

    Failure is buffer state (seed 001): the launch returned long ago; the error waited on the
    buffers it would have written, and surfaces here with its root cause (`kernel`, `cause`),
    the buffer's binding name (`buffer`) and the launches skipped because of it (`skipped`).
    """

    def __init__(self, handle_id: int, kernel: str, cause: BaseException,
                 skipped: tuple[str, ...] = (), buffer: str = "") -> None:
        self.handle_id, self.kernel, self.cause, self.skipped = handle_id, kernel, cause, skipped
        self.buffer = buffer
        what = f"buffer #{handle_id}" + (f" (`{buffer}`)" if buffer else "")
        msg = (f"{what} holds no valid data: kernel `{kernel}` failed "
               f"({type(cause).__name__}):\n{cause}")
        if skipped:
            msg += "\n(launches skipped because of it: " + " -> ".join(skipped) + ")"
        super().__init__(msg)


class ResourceError(CubeError):
    """The device cannot give a launch what it asks for (too many cubes, too much memory, ...).
    Raised on the device thread and stored on the launch's written buffers, like any failure."""


class CaptureError(CubeError):
    """Graph capture refused something (a read, sync, profile or host write inside the window,
    an allocation, a skipped launch); `stop_capture` reports every refusal."""


class DeviceFault(DeviceError):
    """The device itself failed (reported by `sync()`, which owns faults no buffer can carry)."""


class ReleasedHandleError(CubeError):
    """A handle was used after `client.free(handle)` (or the end of its `with` block). Its
    memory may already belong to another buffer, so nothing is read, written or launched."""


class LoopGuardError(CubeError):
    """A checked launch's loop guard ended the kernel: a loop ran past the loop budget, or the
    driver stopped a loop before its condition did (lavapipe's 65 535-iteration limit). Stored
    on the launch's written buffers, like any failure (seed 001)."""
