"""ExecuteScope: failure as buffer state, with the bookkeeping written once for every server.

Without this scope every backend would copy the same bookkeeping and pray that no early return
forgets it. `launch` returns nothing on either thread — the calling thread returned long ago and
the device thread has no channel back — so a failure is put where a later reader will find it:
on the buffers the launch did not manage to write. The `FailureLedger` (one per device) holds
that state; a scope is opened in one of two ways, chosen once, in the constructor:

- `ExecuteScope.launching(...)`: if any buffer the launch *reads* carries a failure, the launch
  is skipped — its body never runs — and its write set points at *that same* failure, so a
  downstream reader sees the root cause (kernel and error), plus the chain of launches skipped
  because of it, never a new, vaguer error. A buffer full of garbage could be read as a cube
  count or a gather index and scatter writes into memory that carried no failure at all; that is
  why the skip exists. Otherwise the write set is claimed at once with a *provisional* failure:
  `execute(body)` releases it when the body returns normally, replaces it by the real error when
  the body reports one (returns an exception: the driver's refusal, a resource limit), and
  *keeps* it when the body raises (a bug: nobody knows what was written). Claiming on entry, not
  on exit, is what makes the raise path safe.
- `ExecuteScope.failed_writing(...)`: work that never started (a compile failure, an expansion
  panic, an unresolved dynamic count, a refused resource) claims its write set with the error.
  "Never started" leaves the bytes as they were, which is exactly why they must not look valid.

Failure is not a state to clean up: it is overwritten by the next successful write. Because a
pure output is not part of a launch's read set (see `buffer_io.py`), relaunching a good kernel
into a tainted output repairs it (`BufferRepaired`).

The body is a callable, not a guard object, so that every exit — normal, reported error, raise —
passes through this one place.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple

from cubelab.errors import BufferFailure, UnreportedFailureWarning
from cubelab.runtime import events as ev

if TYPE_CHECKING:
    from cubelab.runtime.handle import Handle
    from cubelab.runtime.kernel_id import KernelId


class LaunchInFlight(Exception):
    """The provisional failure a claimed buffer carries while its launch runs. Seen by a reader
    only when the launch's body raised: nobody knows what it wrote."""


@dataclass(frozen=True, slots=True)
class Failure:
    """What a failed buffer carries: the root cause and the launches skipped because of it."""

    kernel: str  # the kernel that really failed (the root cause)
    error: BaseException
    launch_seq: int
    skipped: tuple[str, ...] = ()
    provisional: bool = False

    def skipping(self, kernel: str) -> "Failure":
        return Failure(self.kernel, self.error, self.launch_seq, self.skipped + (kernel,))


_CLAIMED = Failure("(a launch in flight)", LaunchInFlight(
    "a launch claimed this buffer and has not finished"), 0, provisional=True)

#: What a scope body returns to say "the work never touched the buffers" (a zero dynamic count):
#: the write set goes back to exactly the state it had before the claim.
UNTOUCHED = object()


class FailureLedger:
    """Per device: handle id -> (Failure, binding name). Device thread only."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Failure, str]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, handle: "Handle") -> Failure | None:
        found = self._entries.get(handle.id)
        return found[0] if found else None

    def state(self, handle: "Handle") -> str:
        """"clean", "claimed" (a provisional failure) or "failed" — what a view draws."""
        f = self.get(handle)
        if f is None:
            return "clean"
        return "claimed" if f.provisional else "failed"

    def read_failure(self, handles: Iterable["Handle"]) -> tuple["Handle", Failure] | None:
        if not self._entries:
            return None
        for h in handles:
            found = self._entries.get(h.id)
            if found is not None:
                return h, found[0]
        return None

    def error_for(self, handle: "Handle") -> BufferFailure | None:
        found = self._entries.get(handle.id)
        if found is None:
            return None
        f, name = found
        error: BaseException = f.error
        return BufferFailure(handle.id, f.kernel, error, f.skipped, buffer=name)

    def put(self, written: list[tuple["Handle", str]], failure: Failure) -> None:
        for h, name in written:
            self._entries[h.id] = (failure, name)

    def snapshot(self, written: list[tuple["Handle", str]]) -> list[tuple[Failure, str] | None]:
        if not self._entries:
            return [None] * len(written)
        return [self._entries.get(h.id) for h, _ in written]

    def restore(self, written: list[tuple["Handle", str]],
                before: list[tuple[Failure, str] | None]) -> None:
        for (h, _), old in zip(written, before):
            if old is None:
                self._entries.pop(h.id, None)
            else:
                self._entries[h.id] = old

    def release(self, written: list[tuple["Handle", str]]) -> list[int]:
        """Drop the claims `written` still carries; returns the ids of those that carry a
        failure instead — recorded while the launch ran (a submission the driver refused, with
        this launch in it), which its normal end must not wipe."""
        entries = self._entries
        failed: list[int] = []
        for h, _ in written:
            found = entries.get(h.id)
            if found is None or found[0] is _CLAIMED:
                entries.pop(h.id, None)
            else:
                failed.append(h.id)
        return failed

    def forget(self, handle: "Handle") -> None:
        self._entries.pop(handle.id, None)

    def forget_id(self, handle_id: int) -> None:
        """The handle is gone: its failure record goes with it."""
        self._entries.pop(handle_id, None)


class LaunchInfo(NamedTuple):
    """Who is opening the scope (for the ledger's records and the events). A tuple: one is
    built per launch, and a frozen dataclass costs several times more to construct."""

    kernel: str
    kernel_id: "KernelId"
    launch_seq: int
    stream: int = 0


def _ids(written: list[tuple["Handle", str]]) -> tuple[int, ...]:
    return tuple(h.id for h, _ in written)


def fail_buffers(ledger: FailureLedger, bus: ev.EventBus, launch: LaunchInfo,
                 written: list[tuple["Handle", str]], error: BaseException) -> None:
    """`written` now carries `error`, raised by `launch` itself (it is the root cause).

    The trap: failures are buffer state, reported at read — so a launch that writes nothing
    would fail in silence. Then it is said at once, as an `UnreportedFailureWarning`."""
    _detach(error)
    if not written:
        warnings.warn(UnreportedFailureWarning(
            f"launch of `{launch.kernel}` (#{launch.launch_seq}) failed, and it writes no "
            f"buffer, so no read will report it: {type(error).__name__}: {error}"), stacklevel=2)
    ledger.put(written, Failure(launch.kernel, error, launch.launch_seq))
    if bus.active:
        ids = _ids(written)
        bus.publish(ev.BufferFailed(launch.kernel, ids, error, launch.kernel, launch.launch_seq))
        bus.publish(ev.LaunchFailed(launch.kernel, launch.kernel_id, error, ids,
                                    launch.launch_seq))


def _detach(error: BaseException) -> None:
    """Drop the error's traceback (and its causes') before the ledger keeps it. The frames of a
    device-thread failure hold the launch's `Bindings`, hence its handles: kept in the ledger
    under those handles' ids, they would keep the handles alive, and a handle's record is only
    dropped when the handle dies — a leak no garbage collection can break. The message, the
    type and the cause chain are what a reader is shown; the device thread's frames never were
    (the runner re-raises without them)."""
    seen = 0
    e: BaseException | None = error
    while e is not None and seen < 8:
        e.__traceback__ = None
        e = e.__cause__ or e.__context__
        seen += 1


class ExecuteScope:
    __slots__ = ("ledger", "bus", "launch", "written", "skipped", "root", "_before")

    def __init__(self, ledger: FailureLedger, bus: ev.EventBus, launch: LaunchInfo,
                 written: list[tuple["Handle", str]], skipped: bool,
                 root: Failure | None,
                 before: list[tuple[Failure, str] | None] | None = None) -> None:
        self.ledger, self.bus, self.launch, self.written = ledger, bus, launch, written
        self.skipped = skipped
        self.root = root  # the read failure that made this a skip
        # what the write set carried before the claim; None when it carried nothing
        self._before = before

    @staticmethod
    def launching(ledger: FailureLedger, bus: ev.EventBus, launch: LaunchInfo,
                  reads: Iterable["Handle"],
                  written: list[tuple["Handle", str]]) -> "ExecuteScope":
        if not ledger._entries:  # the common case, on every launch: nothing failed anywhere
            found = before = None
        else:
            found = ledger.read_failure(reads)
            before = ledger.snapshot(written)
            if before.count(None) == len(before):
                before = None
        if found is not None:
            _, root = found
            propagated = root.skipping(launch.kernel)
            ledger.put(written, propagated)
            if bus.active:
                bus.publish(ev.LaunchSkipped(launch.kernel, launch.kernel_id, "tainted-input",
                                             launch.launch_seq, root.kernel, root.error))
                if written:
                    bus.publish(ev.BufferFailed(launch.kernel, _ids(written), root.error,
                                                root.kernel, launch.launch_seq))
            return ExecuteScope(ledger, bus, launch, written, True, root)
        scope = ExecuteScope(ledger, bus, launch, written, False, None, before)
        # The claim itself is one shared marker (a launch costs no allocation for it); a body
        # that raises replaces it with a provisional failure that names the launch and why.
        ledger.put(written, _CLAIMED)
        if written and bus.active and bus.wants(ev.BufferClaimed):
            bus.publish(ev.BufferClaimed(launch.kernel, _ids(written), launch.launch_seq))
        return scope

    @staticmethod
    def failed_writing(ledger: FailureLedger, bus: ev.EventBus, launch: LaunchInfo,
                       written: list[tuple["Handle", str]], error: BaseException) -> None:
        """Work that never started: its write set carries `error`."""
        fail_buffers(ledger, bus, launch, written, error)

    def execute(self, body: Callable[..., object], *args: Any) -> bool:
        """Run `body(*args)` unless skipped; True when it ran to a normal end (claims
        released). (The server passes a method and its arguments: no closure per launch.)"""
        if self.skipped:
            return False
        try:
            result = body(*args)
        except Exception as exc:  # noqa: BLE001 - a refusal we did not foresee: still a failure
            result = exc
        except BaseException as exc:
            # Interrupted mid-body: keep the claim (nobody knows what was written), but let the
            # reader see why.
            self.ledger.put(self.written, Failure(self.launch.kernel, LaunchInFlight(
                f"launch of `{self.launch.kernel}` (#{self.launch.launch_seq}) claimed this "
                f"buffer and never finished: {type(exc).__name__}: {exc}"),
                self.launch.launch_seq, provisional=True))
            if self.bus.active and self.written:
                self.bus.publish(ev.BufferFailed(self.launch.kernel, _ids(self.written), exc,
                                                 self.launch.kernel, self.launch.launch_seq))
            raise
        if result is UNTOUCHED:
            before_or_none = self._before or [None] * len(self.written)
            self.ledger.restore(self.written, before_or_none)
            if self.bus.active and self.written:
                seq = self.launch.launch_seq
                clean = tuple(h.id for (h, _), old in zip(self.written, before_or_none)
                              if old is None)
                if clean:
                    self.bus.publish(ev.BufferReleased(self.launch.kernel, clean, seq))
                for (h, _), old in zip(self.written, before_or_none):
                    if old is not None:  # back to the failure it carried before the claim
                        f = old[0]
                        self.bus.publish(ev.BufferFailed(f.kernel, (h.id,), f.error, f.kernel,
                                                         f.launch_seq))
            return False
        if isinstance(result, BaseException):
            fail_buffers(self.ledger, self.bus, self.launch, self.written, result)
            return False
        written = self.written
        failed = self.ledger.release(written)
        if failed:  # the failure recorded meanwhile stands: only the others were released
            written = [(h, n) for h, n in written if h.id not in failed]
        if written and self.bus.active:
            if self.bus.wants(ev.BufferReleased):
                self.bus.publish(ev.BufferReleased(self.launch.kernel, _ids(written),
                                                   self.launch.launch_seq))
            before = self._before
            if before is not None:  # something carried a failure before the claim
                repaired = tuple(h.id for (h, _), old in zip(self.written, before)
                                 if old is not None and not old[0].provisional
                                 and h.id not in failed)
                if repaired:
                    self.bus.publish(ev.BufferRepaired(self.launch.kernel, repaired,
                                                       self.launch.launch_seq))
        return True
