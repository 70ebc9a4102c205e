"""cubelab's errors. Each names the kernel, points at the line, and says what to do instead.

    cubelab.KernelSourceError: in kernel `saxpy` at saxpy.py:7:9: `lambda` is not allowed in a kernel
        y[ABSOLUTE_POS] = (lambda v: v)(x[ABSOLUTE_POS])
                           ^
      hint: write a @cube helper function and call it instead

Where the kernel was written in a notebook cell, the place reads as IPython writes it —
`Cell In[7], line 3:9` — not as the temporary file IPython compiled the cell from
(`/tmp/ipykernel_…/123.py`). IPython's map from those files to cell numbers is read only when
IPython is already loaded; cubelab never imports it.

The traceback a student sees ends at their own line. Errors cross the public API (`@cube`,
`launch`, `read`, `check`, `sync`, ...) through `api_boundary`, which drops cubelab's own frames
from a `CubeError`'s traceback — as JAX and Triton do — because the message already says where
the mistake is and a screen of runtime internals above it only hides that. Developers get every
frame back with `CUBELAB_TRACEBACK=full`.
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
import types
from typing import Any, Callable, TypeVar

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def source_label(file: str) -> str | None:
    """`Cell In[N]` when `file` is the name IPython compiled notebook cell N under (plain cells
    and `%%cube` ones alike), else None."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        shell = ipython.get_ipython()
        number = shell.compile._filename_map.get(file) if shell is not None else None
    except Exception:  # noqa: BLE001 - an IPython without that map: name the file instead
        return None
    return f"Cell In[{number}]" if number is not None else None


def location(file: str, line: int, col: int | None = None) -> str:
    """Where a piece of source is, as its reader names it: `Cell In[7], line 3:9` for a
    notebook cell, `kernels.py:3:9` for a file (col is 1-based here)."""
    tail = f":{col}" if col is not None else ""
    label = source_label(file)
    return f"{label}, line {line}{tail}" if label else f"{file}:{line}{tail}"


def _internal(frame: types.FrameType) -> bool:
    name = frame.f_code.co_filename
    return name.startswith(_PACKAGE_DIR) or name.startswith("<cubelab ")


def user_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback without cubelab's own frames (those of its package and its generated
    `expand` code); the student's frames keep their order."""
    kept: list[types.TracebackType] = []
    while tb is not None:
        if not _internal(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    out: types.TracebackType | None = None
    for entry in reversed(kept):
        out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


F = TypeVar("F", bound=Callable[..., Any])


def _said_on_purpose(exc: BaseException) -> bool:
    """An error cubelab raises to tell the student something: a `CubeError`, or a `TypeError` /
    `ValueError` raised by cubelab's own code (a wrong argument: `create_from_slice` of float64
    data, `instance(...)` without the generics) — the innermost frame is cubelab's. A TypeError
    from deeper down (numpy, the student's own function) keeps its frames."""
    if isinstance(exc, CubeError):
        return True
    if not isinstance(exc, (TypeError, ValueError)):
        return False
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and _internal(tb.tb_frame)


def leave_boundary(exc: BaseException) -> None:
    """What an entry point does to an error cubelab raised on purpose (`_said_on_purpose`)
    leaving it: drop cubelab's frames from its traceback (unless `CUBELAB_TRACEBACK=full`). The
    caller re-raises with a bare `raise` — `raise exc` would add the entry point's own frame back
    on top."""
    if _said_on_purpose(exc) and os.environ.get("CUBELAB_TRACEBACK", "").lower() != "full":
        exc.with_traceback(user_frames(exc.__traceback__))


def api_boundary(fn: F) -> F:
    """Mark a public entry point: a `CubeError` — or cubelab's own TypeError / ValueError —
    leaving it loses cubelab's frames (`leave_boundary`). The launch path, which runs on every
    launch, does the same inline (`try: ... except CubeError as exc: leave_boundary(exc);
    raise`) instead of paying this wrapper's extra frame (~0.4 µs)."""

    @functools.wraps(fn)
    def boundary(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True  # noqa: F841 - pytest and IPython's debugger skip this frame
        try:
            return fn(*args, **kwargs)
        except (CubeError, TypeError, ValueError) as exc:
            leave_boundary(exc)
            raise

    return boundary  # type: ignore[return-value]


class CubeError(Exception):
    """Base of every error cubelab raises on purpose (besides plain TypeError/ValueError for a
    wrong argument, which `api_boundary` treats alike)."""


def hinted(message: str, hint: str) -> str:
    """`message`, then what to do instead on a line of its own — the form every error cubelab
    raises for a student's mistake takes (`tests/test_error_hints.py` walks every raise):

        launch of `saxpy`: argument `a` is f32, got 'two'
          hint: pass a Python float (or int) for an f32 argument
    """
    return f"{message}\n  hint: {hint}"


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
        parts = [f"in kernel `{kernel}` at {location(file, line, col + 1)}: {message}"]
        block = caret_block(file, line, col, source_line)
        if block:
            parts.append(block)
        if hint:
            parts.append(f"  hint: {hint}")
        super().__init__("\n".join(parts))


class KernelCallError(CubeError, TypeError):
    """A @cube function was called like a Python function (kernels are launched, helpers are
    called from inside kernels)."""


class KernelTypeError(KernelSourceError, TypeError):
    """A type the kernel language refuses (`Atomic[f32]`, `Slice[bool_]`, `Vector[f32, 3]`),
    written in a kernel's signature."""


def type_refusal(message: str, hint: str = "") -> TypeError:
    """The error for a refused type expression, raised from a type's `__getitem__`.

    Python evaluates a kernel's annotations when it runs the `def` — before `@cube` ever sees
    the function — so the place is found from the stack: the first frame outside cubelab is the
    `def` being run, and its current instruction's position is the subscript that failed. The
    kernel is the `def` at or above that line. Inside an expansion (a body's
    `SharedMemory[bool_](n)`), a plain TypeError: the expansion names the line itself."""
    frame = sys._getframe(1)
    user: types.FrameType | None = None
    while frame is not None:
        if frame.f_code.co_filename.startswith("<cubelab expand"):
            return TypeError(f"{message}; {hint}" if hint else message)
        if user is None and not _internal(frame):
            user = frame
        frame = frame.f_back
    if user is None:
        return TypeError(message)
    file, line, col = user.f_code.co_filename, user.f_lineno, 0
    try:
        pos = list(user.f_code.co_positions())[user.f_lasti // 2]
        line, col = pos[0] or line, pos[2] or 0
    except (IndexError, ValueError):
        pass
    kernel = "?"
    for n in range(line, 0, -1):
        text = linecache.getline(file, n).strip()
        if text.startswith(("def ", "async def ")):
            kernel = text.split("def ", 1)[1].split("(", 1)[0].split("[", 1)[0].strip()
            break
    return KernelTypeError(kernel, file, line, col, message, hint)


class CubelabWarning(UserWarning):
    """Base of cubelab's warnings: something a student should know that is not an error. In
    Jupyter (`%load_ext cubelab`) each is shown as one `cubelab: ...` line — not with the file
    and source line of cubelab's own code that issued it, which says nothing to a student."""


class RangeWrapWarning(CubelabWarning):
    """A `range` whose comptime bounds make its counter wrap: the loop would run on past its
    end (u32 past 2^32 - 1, i32 past 2^31 - 1) until the loop guard or the driver stops it."""


class UnreportedFailureWarning(CubelabWarning):
    """A launch failed but writes no buffer: the failure has no buffer to wait on a read, so it
    is said at once instead (e.g. a kernel that writes no buffer and fails to compile)."""


class CompileNoticeWarning(CubelabWarning):
    """The target that runs a kernel left part of it out, said once when the kernel is compiled
    (`debug_print` on wgpu: WGSL has no printf, so the kernel runs without the call)."""


class FailedTraceWarning(CubelabWarning):
    """`inspect.trace` or `inspect.access_map` of a launch that failed: the steps (accesses)
    end where the launch stopped."""


class LaunchError(CubeError):
    """A launch's arguments are wrong; raised on the calling thread, nothing was submitted."""


class FeatureError(CubeError):
    """The kernel needs an adapter feature (e.g. `subgroup` for plane ops) this device lacks."""


class CompileError(CubeError):
    """The generated source was refused by the driver (naga); names both source lines."""


class PassError(CompileError):
    """A compilation pass — a student's `extra_passes` entry — raised, returned something other
    than a kernel definition, or left IR the verifier (`ir/verify.py`) refuses. The message
    names the pass, the kernel and what is wrong, before any target sees the IR."""


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
