"""The persistent compilation store: compiled kernels kept on disk between processes.

A new process — a restarted notebook kernel, a second student's notebook, the next test run —
starts with an empty pipeline cache, so every kernel pays expand + passes + codegen again. The
store keeps what those produce (the IR after the passes, the generated sources, the write/read
sets, the IR texts a view shows) under a key that names *everything* that changes the code, so
a compile in a later process can load it instead (CubeCL 0.11.1's compilation store; Triton and
Warp keep on-disk kernel caches too). What the *driver* makes of the source (the pipeline) is
not portable through wgpu-py, which has no pipeline-cache API; the driver keeps its own disk
cache — for lavapipe, Mesa's shader cache, which `driver_cache_env` points into this folder.

Where: `CUBELAB_CACHE_DIR` (a folder), else the user's cache folder (`$XDG_CACHE_HOME/cubelab`
or `~/.cache/cubelab`; `~/Library/Caches/cubelab` on macOS, `%LOCALAPPDATA%\\cubelab\\Cache` on
Windows); `CUBELAB_CACHE_DIR=off` turns it off. `CUBELAB_CACHE_MAX_MB` bounds it (default 256).

The key (`store_key`) is a digest of: the store's format and Python's version; the cubelab
build (a digest of every module of the package, so an edited cubelab never loads code an older
one made); the runtime and target; the device (adapter, driver, properties); the compilation
options (`compiler.options.options_key`: rules, budget, extra passes); the KernelId and its
origin; and the kernel's own fingerprint from the frontend (the source of the kernel and its
helpers, and the values of the globals they read). A change in any of these is a different key:
never stale code, at worst a compile.

Each compile says where its code came from (`origin` on `CompileFinished`, which the
CacheMonitor and the debug log show): "compiled" (nothing stored under the key: expand, passes
and codegen ran), "loaded" (read from the store), or "rekeyed" (nothing under the key, but what
the compile produced was already stored under another key — after a cubelab update, or under
options that do not change this kernel — so only a new key was written; the driver's cache,
keyed by the code, serves the pipeline). The code the store is keyed by is the generated
source, entry name included: the entry carries the KernelId's hash (seed 000), so the same
source under another KernelId does not happen in cubelab; the same KernelId under another key
does.

Layout: `<dir>/v1/keys/<ab>/<key>` holds the content digest of an object;
`<dir>/v1/objects/<cd>/<digest>` holds a header (magic, the body's sha256) and the body (a
zlib-compressed pickle). Every file is written to a temporary name in its folder and renamed
into place (`os.replace`, atomic), so two processes writing at once — two notebooks, two
students' kernels — leave one whole file, and a reader never sees half of one. A file that
fails its checksum or does not unpickle is ignored (a miss) and removed, and the compile that
follows writes it again. After a write the folder is kept under its bound by deleting the
least recently used files (a load touches its files).

Trust: loading unpickles. The folder is trusted like an installed package (as Python trusts
`__pycache__`): it is created private (0700), a folder owned by someone else or writable by
others is refused (the store is then off, said once), and the unpickler only builds cubelab's
own classes and plain containers.

The trap: the store must never be the reason a kernel is wrong or a launch fails — every error
reading or writing it is a miss or a skipped write, never an exception out of a compile.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import pickle
import stat
import sys
import tempfile
import threading
import time
import types
import warnings
import zlib
from pathlib import Path
from typing import Any

FORMAT = "v1"
MAGIC = b"CUBELAB-STORE-1\n"
DEFAULT_MAX_MB = 256
OFF = ("off", "none", "0", "false", "no")
# After this many bytes written by this process, the folder's size is checked (and evicted).
_CHECK_EVERY = 4 << 20


def cache_dir() -> Path | None:
    """The store's folder: `CUBELAB_CACHE_DIR`, else the user's cache folder; None when
    `CUBELAB_CACHE_DIR=off`."""
    env = os.environ.get("CUBELAB_CACHE_DIR")
    if env is not None and env.strip():
        if env.strip().lower() in OFF:
            return None
        return Path(env).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "cubelab"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "cubelab" / "Cache"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cubelab"


def max_bytes() -> int:
    try:
        return max(1, int(float(os.environ.get("CUBELAB_CACHE_MAX_MB", DEFAULT_MAX_MB)))) << 20
    except ValueError:
        return DEFAULT_MAX_MB << 20


@functools.cache
def build_fingerprint() -> str:
    """A digest of every module of the installed cubelab (paths and contents): the store's
    "build id". Computed once per process (~150 files, a few ms)."""
    root = Path(__file__).resolve().parent.parent  # the cubelab package
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def store_key(*parts: str) -> str:
    """The key of one compile: a digest of the format, Python's version, the cubelab build and
    `parts` (runtime, target, device, options, KernelId, kernel fingerprint)."""
    h = hashlib.sha256()
    for part in (FORMAT, f"{sys.version_info[0]}.{sys.version_info[1]}", build_fingerprint(),
                 *parts):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def _code_text(code: types.CodeType) -> str:
    consts = ",".join(_code_text(k) if isinstance(k, types.CodeType) else repr(k)
                      for k in code.co_consts)
    return f"{code.co_code.hex()}|{consts}|{code.co_names}"


def class_identity(cls: type) -> str:
    """A class as the code it runs: its qualified name and the bytecode of every function its
    classes define (bases included). Part of the key for each target a compile uses, so a
    target replaced or patched in the running process — a student's own target, a test's
    broken one — is a new key although no file of the build changed."""
    parts = []
    for c in cls.__mro__:
        if c is object:
            continue
        parts.append(f"{c.__module__}.{c.__qualname__}")
        for name, value in sorted(vars(c).items()):
            fn = getattr(value, "__func__", value)
            code = getattr(fn, "__code__", None)
            if code is not None:
                parts.append(f"{name}:{_code_text(code)}")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def content_digest(sources: dict[str, str], runs: str = "") -> str:
    """What a compile produced, as one digest: every target's source (the one that runs and the
    shown ones), by target name, and which of them runs. (Without `runs`, a wgpu compile and a
    CUDA compile of one kernel — the same three sources, WGSL running in one and CUDA C++ in the
    other — were one object, and the second server loaded the first one's entry: NVRTC was
    handed WGSL.)"""
    h = hashlib.sha256(runs.encode() + b"\0")
    for name in sorted(sources):
        h.update(name.encode() + b"\0" + sources[name].encode() + b"\0")
    return h.hexdigest()


class _Unpickler(pickle.Unpickler):
    """Builds cubelab's own classes and plain containers, nothing else: a stored entry is IR,
    sources and small records."""

    _BUILTINS = frozenset({"set", "frozenset", "tuple", "list", "dict", "slice", "complex",
                           "bytearray", "range", "getattr"})

    def find_class(self, module: str, name: str) -> Any:
        if module == "cubelab" or module.startswith("cubelab."):
            return super().find_class(module, name)
        if module == "builtins" and name in self._BUILTINS:
            return super().find_class(module, name)
        if module == "copyreg" and name in ("_reconstructor", "__newobj__"):
            return super().find_class(module, name)
        if module == "enum" and name == "Enum":
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"the store does not load {module}.{name}"
                                     )  # hint: none: caught, the entry is compiled again


def _private_dir(path: Path) -> bool:
    """Create `path` (0700) if needed; whether it is safe to load code from (ours, and not
    writable by group or others). Windows: no POSIX owner to check."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.name == "nt":
            return True
        st = path.stat()
        return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    except OSError:
        return False


class CompilationStore:
    """One folder of stored compiles (see the module docstring). Thread-safe: the one lock
    guards the size accounting; the files need none (atomic renames)."""

    def __init__(self, root: Path, limit: int | None = None) -> None:
        self.root = root
        self.base = root / FORMAT
        self.limit = limit if limit is not None else max_bytes()
        self._written = 0
        self._lock = threading.Lock()
        # what happened in this process (the benchmarks and tests read these)
        self.loads = self.misses = self.writes = self.corrupt = self.evicted = 0

    @staticmethod
    def open() -> "CompilationStore | None":
        """The store `CUBELAB_CACHE_DIR` names (or the user's cache folder), or None when it
        is off or cannot be used (said once, as a warning)."""
        root = cache_dir()
        if root is None:
            return None
        if not _private_dir(root) or not _private_dir(root / FORMAT):
            warnings.warn(f"cubelab: the compilation store at {root} is not used: it cannot be "
                          "created, or it is not private to you (owned by someone else, or "
                          "writable by others). Set CUBELAB_CACHE_DIR to a folder of your own, "
                          "or CUBELAB_CACHE_DIR=off.", RuntimeWarning, stacklevel=2)
            return None
        return CompilationStore(root)

    # -- paths ----------------------------------------------------------------------------------
    def _key_path(self, key: str) -> Path:
        return self.base / "keys" / key[:2] / key

    def _object_path(self, digest: str) -> Path:
        return self.base / "objects" / digest[:2] / digest

    # -- reading --------------------------------------------------------------------------------
    def load(self, key: str) -> dict[str, Any] | None:
        """The entry stored under `key`, or None (absent, or corrupt: then removed)."""
        kpath = self._key_path(key)
        try:
            digest = kpath.read_text("ascii").strip()
        except (OSError, UnicodeDecodeError):
            self.misses += 1
            return None
        if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            self._discard(kpath)
            self.misses += 1
            return None
        entry = self._read_object(digest)
        if entry is None:
            self._discard(kpath)  # its object is gone or broken: a miss, rewritten after
            self.misses += 1
            return None
        now = time.time()
        for p in (kpath, self._object_path(digest)):  # used: last to be evicted
            try:
                os.utime(p, (now, now))
            except OSError:
                pass
        self.loads += 1
        return entry

    def has_content(self, digest: str) -> bool:
        """Whether an object with this content digest is stored (and whole)."""
        return self._read_object(digest, check_only=True) is not None

    def _read_object(self, digest: str, check_only: bool = False) -> Any:
        path = self._object_path(digest)
        try:
            raw = path.read_bytes()
        except OSError:
            return None
        head = len(MAGIC)
        body = raw[head + 32:]
        if raw[:head] != MAGIC or hashlib.sha256(body).digest() != raw[head:head + 32]:
            self.corrupt += 1
            self._discard(path)
            return None
        if check_only:
            return True
        try:
            entry = _Unpickler(io.BytesIO(zlib.decompress(body))).load()
        except Exception:  # noqa: BLE001 - a stale or foreign object: a miss, never an error
            self.corrupt += 1
            self._discard(path)
            return None
        return entry if isinstance(entry, dict) else None

    # -- writing --------------------------------------------------------------------------------
    def save(self, key: str, digest: str, entry: dict[str, Any] | None) -> None:
        """Store `entry` (whose content digest is `digest`) under `key`. `entry` None: the
        object is stored already (a rekey), write the key only. Never raises."""
        try:
            if entry is not None:
                body = zlib.compress(pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL), 1)
                self._write(self._object_path(digest),
                            MAGIC + hashlib.sha256(body).digest() + body)
            self._write(self._key_path(key), (digest + "\n").encode("ascii"))
            self.writes += 1
        except Exception as exc:  # noqa: BLE001 - a full disk, a read-only folder: skip
            warnings.warn(f"cubelab: could not write to the compilation store at {self.root} "
                          f"({type(exc).__name__}: {exc}); the kernel will compile again next "
                          "time", RuntimeWarning, stacklevel=2)
            return
        self._maybe_evict()

    def _write(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)  # atomic: readers see the old file or the whole new one
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        with self._lock:
            self._written += len(data)

    def _discard(self, path: Path) -> None:
        try:
            path.unlink()
        except OSError:
            pass

    # -- the bound ------------------------------------------------------------------------------
    def _maybe_evict(self) -> None:
        with self._lock:
            if self._written < _CHECK_EVERY and self.writes > 1:
                return
            self._written = 0
        self.evict()

    def files(self) -> list[tuple[float, int, Path]]:
        """(last use, size, path) of every stored file."""
        out = []
        for sub in ("keys", "objects"):
            top = self.base / sub
            try:
                shards = list(os.scandir(top))
            except OSError:
                continue
            for shard in shards:
                try:
                    entries = list(os.scandir(shard.path))
                except OSError:
                    continue
                for e in entries:
                    if e.name.startswith(".tmp-"):
                        continue
                    try:
                        st = e.stat()
                    except OSError:
                        continue
                    out.append((st.st_mtime, st.st_size, Path(e.path)))
        return out

    def size(self) -> int:
        return sum(size for _, size, _ in self.files())

    def evict(self, limit: int | None = None) -> int:
        """Delete the least recently used files until the folder holds at most 80 % of
        `limit` (default: the store's bound) — once it holds more than the bound. Returns how
        many files went. Safe beside other processes doing the same (a file already gone is
        skipped)."""
        limit = self.limit if limit is None else limit
        files = self.files()
        total = sum(size for _, size, _ in files)
        if total <= limit:
            return 0
        gone = 0
        for _, size, path in sorted(files):
            if total <= limit * 0.8:
                break
            self._discard(path)
            total -= size
            gone += 1
        self.evicted += gone
        return gone

    def clear(self) -> None:
        """Delete every stored file (the folder stays)."""
        for _, _, path in self.files():
            self._discard(path)


def driver_cache_env(root: Path | None = None) -> dict[str, str]:
    """The environment that points the driver's own shader cache into the store's folder (made
    here, private), for the variables the user has not set: Mesa's (lavapipe and Mesa's GPU drivers) — its disk
    cache keeps the compiled pipelines between processes, which wgpu-py cannot — and NVIDIA's
    (`__GL_SHADER_DISK_CACHE_PATH`). Empty when the store is off."""
    root = cache_dir() if root is None else root
    if root is None:
        return {}
    out: dict[str, str] = {}
    if not _private_dir(root):  # made first, so its own mode is 0700 (not a parent's default)
        return out
    if "MESA_SHADER_CACHE_DIR" not in os.environ and "MESA_GLSL_CACHE_DIR" not in os.environ:
        mesa = root / "mesa"
        if not _private_dir(mesa):  # Mesa makes only the last level; an unusable one: leave
            return {}
        out["MESA_SHADER_CACHE_DIR"] = str(mesa)
    if "MESA_SHADER_CACHE_MAX_SIZE" not in os.environ:
        out["MESA_SHADER_CACHE_MAX_SIZE"] = f"{max(1, max_bytes() >> 20)}M"
    # NVIDIA's driver keeps its own pipeline cache; point it here too (untested on lavapipe)
    if "__GL_SHADER_DISK_CACHE_PATH" not in os.environ and _private_dir(root / "nvidia"):
        out["__GL_SHADER_DISK_CACHE_PATH"] = str(root / "nvidia")
    return out
