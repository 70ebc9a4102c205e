"""`InfoRing`: where every wgpu launch's info block lives — one storage buffer, bound with a
dynamic offset.

Contract. A launch's info block (its scalars, buffer lengths and tensor metadata:
`compiler/info.py`) is read by the kernel through the bind group's last-but-one binding. The
bind group holds the ring with a *dynamic* offset, so one group serves every launch on the same
buffers, whatever its scalars; `offset(stream, info)` says where the dispatch being encoded on
`stream` finds `info`. Each stream's open batch takes chunks of the ring (16 KiB: 64 blocks of
up to 256 bytes, the offset alignment), fills them on the host, and `write(queue, stream)`
writes them with one `queue.write_buffer` per chunk when the batch is submitted.

Why: a launch whose scalar changed every time (`a = float(i)`) used to create an info buffer
and a bind group per value (≈ 30 µs each on lavapipe, and a cache that filled up); a loop of one
launch now reuses one block per batch, and a new value costs a copy into the chunk.

The trap — a ring wraps, and batches of several streams are open at once. It is safe because
each batch's writes go to the queue right before the batch itself: `queue.write_buffer` is
ordered after every earlier submission and before every later one. So a batch always reads the
bytes it staged, even where another stream's unsubmitted batch took the same chunk after a wrap
(that batch's writes come after this batch on the queue, or before it and are overwritten by
this batch's own). What must not happen is one batch taking the same chunk twice: a batch that
would need more than the whole ring gets None, and the server submits it first
(`Flushed(why="info-ring")`).
"""

from __future__ import annotations

from typing import Any

# The ring and the chunks a batch takes of it (module constants: tests make them smaller).
RING_BYTES = 4 << 20
CHUNK_BYTES = 16 << 10


class InfoRing:
    """The ring buffer and each stream's open batch's share of it (device thread only)."""

    def __init__(self, device: Any, usage: Any, alignment: int) -> None:
        self.stride = max(256, alignment)  # a dynamic offset's alignment
        self.buffer = device.create_buffer(size=RING_BYTES, usage=usage)
        self._next = 0  # where the next chunk starts
        # stream -> its open batch: [info given a slot last, its offset, the current chunk,
        # every chunk taken: [ring offset, bytes, bytes used, size]]
        self._batches: dict[int, list[Any]] = {}

    def offset(self, stream: int, info: bytes) -> int | None:
        """Where `info` is for the dispatch being encoded on `stream`: the offset given last in
        this batch if the bytes are the same (a loop of one launch), else the next slot of the
        batch's chunk. None when the batch has taken the whole ring (see the module)."""
        batch = self._batches.get(stream)
        if batch is None:
            batch = self._batches[stream] = [None, -1, None, []]
        else:
            last = batch[0]
            if last is info or last == info:
                return batch[1]  # type: ignore[no-any-return]
        size = len(info)
        chunk = batch[2]
        if chunk is None or chunk[2] + size > chunk[3]:
            chunk = self._new_chunk(batch, size)
            if chunk is None:
                return None
        used = chunk[2]
        chunk[1][used:used + size] = info
        stride = self.stride
        chunk[2] = used + (size + stride - 1) // stride * stride
        off = chunk[0] + used
        batch[0], batch[1] = info, off
        return off  # type: ignore[no-any-return]

    def _new_chunk(self, batch: list[Any], size: int) -> list[Any] | None:
        want = max(CHUNK_BYTES, size)
        chunks = batch[3]
        if sum(c[3] for c in chunks) + want > RING_BYTES:
            return None
        off = self._next
        if off + want > RING_BYTES:
            off = 0
        self._next = off + want
        chunk = batch[2] = [off, bytearray(want), 0, want]
        chunks.append(chunk)
        return chunk

    def write(self, queue: Any, stream: int) -> None:
        """`stream`'s batch is being submitted: write its chunks first (see the module)."""
        batch = self._batches.pop(stream, None)
        if batch is not None:
            buffer = self.buffer
            for off, data, used, _ in batch[3]:
                queue.write_buffer(buffer, off, data, 0, used)

    def drop(self, stream: int) -> None:
        """`stream`'s batch was lost (a refused command): nothing of it is written."""
        self._batches.pop(stream, None)
