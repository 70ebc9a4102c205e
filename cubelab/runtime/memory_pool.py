"""Device memory as pools of pages, in CubeCL's manner: the bookkeeping every server shares.

A server asks its backend for *pages* (a wgpu buffer, a numpy byte array) and hands out *slices*
of them to handles. Two pools, chosen by size (CubeCL's `SlicedPool` and `ExclusiveMemoryPool`):

- **sliced**: a request up to `max_slice` bytes is cut from a page of `page_size` bytes, first
  fit; a released slice merges with free neighbours, so a page that empties is one free slice
  again;
- **exclusive**: a larger request gets a page of its own; a released page is kept and given to
  the next request it fits without wasting more than half of it.

Every size is rounded up to the device's alignment (on wgpu `min_storage_buffer_offset_alignment`,
because a slice is bound at its offset), so slices never share an aligned block. Memory is only
given back to the driver by `cleanup()` (`client.memory_cleanup()`): pages that hold no live
slice are freed; pages in use stay.

Whether a released slice may be reused *now* is not this module's business: the server decides
(a slice still read by queued work waits, see `server.py`), and calls `release` when it may.
`reserve` says whether the bytes came from the pool (`reused`) or from a new page, which is what
`MemoryAllocated.reused` and the stats report. A reused slice holds whatever its last owner left:
the server zeroes or writes it when the contract asks (`zeros`, `create_from_slice`), never for
`empty`.

Device thread only: no locks.
"""

from __future__ import annotations

from cubelab.errors import hinted
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True)
class MemoryConfiguration:
    """The pools' shape. `page_size`: bytes per sliced page; `max_slice`: the largest request
    the sliced pool takes (larger ones are exclusive); `alignment`: every offset and size is a
    multiple of it."""

    alignment: int = 256
    page_size: int = 8 * MiB
    max_slice: int = 2 * MiB


@dataclass(slots=True, eq=False)
class Slice:
    page: "Page"
    offset: int
    size: int  # bytes reserved (aligned)
    handle_id: int = 0  # 0: free
    requested: int = 0  # bytes the handle asked for (size - requested is padding)


@dataclass(slots=True, eq=False)
class Page:
    id: int
    pool: str  # "sliced" | "exclusive"
    size: int
    storage: Any  # the backend's memory (a wgpu buffer, a numpy array)
    slices: list[Slice] = field(default_factory=list)  # by offset, covering [0, size)

    @property
    def used(self) -> int:
        return sum(s.size for s in self.slices if s.handle_id)


@dataclass(frozen=True, slots=True)
class SliceInfo:
    """One slice of a page, for views: `handle_id` 0 means free."""

    offset: int
    size: int
    handle_id: int
    requested: int
    pending: bool = False  # released by its handle, waiting for queued work to finish


@dataclass(frozen=True, slots=True)
class PageInfo:
    id: int
    pool: str
    size: int
    slices: tuple[SliceInfo, ...]

    @property
    def bytes_used(self) -> int:
        return sum(s.size for s in self.slices if s.handle_id)


@dataclass(frozen=True, slots=True)
class MemoryUsage:
    """`client.memory_usage()`: what the device's pools hold right now (CubeCL's MemoryUsage
    plus the pool detail a view draws).

    `bytes_in_use`: bytes live handles asked for; `bytes_padding`: what alignment added to them;
    `bytes_reserved`: every page's size (what the driver / the OS gave); `handles`: live
    allocations (CubeCL's `number_allocs`); `pending`: handles already dropped whose slices wait
    for queued work before they return to the pool; `pages`: every page with its slices.
    `allocations` / `reuses` / `pages_created` / `pages_freed` count since the device started."""

    bytes_in_use: int
    bytes_padding: int
    bytes_reserved: int
    handles: int
    pending: int
    pages: tuple[PageInfo, ...]
    allocations: int
    reuses: int
    pages_created: int
    pages_freed: int
    alignment: int
    page_size: int
    max_slice: int

    def __str__(self) -> str:
        sliced = sum(1 for p in self.pages if p.pool == "sliced")
        return (f"MemoryUsage: {self.handles} handles, {_fmt(self.bytes_in_use)} in use "
                f"(+{_fmt(self.bytes_padding)} padding), {_fmt(self.bytes_reserved)} reserved in "
                f"{len(self.pages)} pages ({sliced} sliced, {len(self.pages) - sliced} exclusive)"
                f"; {self.pending} pending release; {self.reuses}/{self.allocations} allocations "
                "reused pooled memory")


def _fmt(n: int) -> str:
    for unit, size in (("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


class MemoryPool:
    """The sliced and exclusive pools of one device. `alloc_page(size)` / `free_page(storage)`
    are the backend's driver calls."""

    def __init__(self, config: MemoryConfiguration, alloc_page: Callable[[int], Any],
                 free_page: Callable[[Any], None]) -> None:
        a = config.alignment
        if a < 4 or a & (a - 1):
            raise ValueError(hinted(f"alignment must be a power of two >= 4, got {a}",
                                    "e.g. 256, the device's offset alignment"))
        self.config = config
        self._alloc_page = alloc_page
        self._free_page = free_page
        self._page_ids = itertools.count(1)
        self.sliced: list[Page] = []
        self.exclusive: list[Page] = []
        self.slices: dict[int, Slice] = {}  # handle id -> its slice (live or pending)
        self.pending: set[int] = set()  # handle ids released by Python, not yet by the device
        self.allocations = 0
        self.reuses = 0
        self.pages_created = 0
        self.pages_freed = 0

    def aligned(self, size: int) -> int:
        a = self.config.alignment
        return max(a, (size + a - 1) & ~(a - 1))

    # -- reserve / release --------------------------------------------------------------------
    def reserve(self, handle_id: int, size: int) -> tuple[Slice, bool]:
        """A slice for `handle_id`; True when it came from the pool (no new page)."""
        need = self.aligned(size)
        if need <= self.config.max_slice:
            s, reused = self._reserve_sliced(need)
        else:
            s, reused = self._reserve_exclusive(need)
        s.handle_id = handle_id
        s.requested = size
        self.slices[handle_id] = s
        self.allocations += 1
        self.reuses += reused
        return s, reused

    def _new_page(self, pool: str, size: int) -> Page:
        storage = self._alloc_page(size)  # may raise (out of memory): nothing changed yet
        page = Page(next(self._page_ids), pool, size, storage)
        page.slices.append(Slice(page, 0, size))
        (self.sliced if pool == "sliced" else self.exclusive).append(page)
        self.pages_created += 1
        return page

    def _reserve_sliced(self, need: int) -> tuple[Slice, bool]:
        for page in self.sliced:
            s = _take(page, need)
            if s is not None:
                return s, True
        page = self._new_page("sliced", self.config.page_size)
        s = _take(page, need)
        assert s is not None
        return s, False

    def _reserve_exclusive(self, need: int) -> tuple[Slice, bool]:
        best: Page | None = None
        for page in self.exclusive:
            s = page.slices[0]
            # a free page that fits without wasting more than half of it
            if not s.handle_id and need <= page.size < 2 * need and (
                    best is None or page.size < best.size):
                best = page
        if best is not None:
            return best.slices[0], True
        return self._new_page("exclusive", need).slices[0], False

    def release(self, handle_id: int) -> Slice | None:
        """The slice goes back to its pool (merged with free neighbours); None if unknown."""
        s = self.slices.pop(handle_id, None)
        self.pending.discard(handle_id)
        if s is None:
            return None
        page = s.page
        s.handle_id = 0
        s.requested = 0
        if page.pool == "sliced":
            _merge(page, s)
        return s

    # -- cleanup and reports ------------------------------------------------------------------
    def cleanup(self) -> list[Page]:
        """Free every page that holds no live slice; returns them (already given back)."""
        freed = []
        for pages in (self.sliced, self.exclusive):
            keep = []
            for page in pages:
                if all(not s.handle_id for s in page.slices):
                    self._free_page(page.storage)
                    page.storage = None
                    freed.append(page)
                else:
                    keep.append(page)
            pages[:] = keep
        self.pages_freed += len(freed)
        return freed

    def usage(self) -> MemoryUsage:
        pages = tuple(
            PageInfo(p.id, p.pool, p.size, tuple(
                SliceInfo(s.offset, s.size, s.handle_id, s.requested,
                          s.handle_id in self.pending) for s in p.slices))
            for p in self.sliced + self.exclusive)
        live = list(self.slices.values())
        in_use = sum(s.requested for s in live)
        c = self.config
        return MemoryUsage(
            bytes_in_use=in_use, bytes_padding=sum(s.size for s in live) - in_use,
            bytes_reserved=sum(p.size for p in pages), handles=len(live) - len(self.pending),
            pending=len(self.pending), pages=pages, allocations=self.allocations,
            reuses=self.reuses, pages_created=self.pages_created, pages_freed=self.pages_freed,
            alignment=c.alignment, page_size=c.page_size, max_slice=c.max_slice)


def _take(page: Page, need: int) -> Slice | None:
    """First fit: cut `need` bytes from the first free slice that holds them."""
    slices = page.slices
    for i, s in enumerate(slices):
        if not s.handle_id and s.size >= need:
            if s.size > need:
                slices.insert(i + 1, Slice(page, s.offset + need, s.size - need))
                s.size = need
            return s
    return None


def _merge(page: Page, s: Slice) -> None:
    slices = page.slices
    i = slices.index(s)
    if i + 1 < len(slices) and not slices[i + 1].handle_id:
        s.size += slices.pop(i + 1).size
    if i > 0 and not slices[i - 1].handle_id:
        prev = slices[i - 1]
        prev.size += s.size
        slices.pop(i)
