"""Live views of a cubelab client, built from stock ipywidgets controls (no JS build, no CDN).

    from cubelab.widgets import KernelInspector, CacheMonitor, BufferBoard, LaunchTimeline, Quiz
    CacheMonitor(client)           # compiles / hits per KernelId, and why each new id
    BufferBoard(client)            # per-buffer state (seed 001), history on selection
    LaunchTimeline(client)         # the two hops of the last launches
    MemoryBoard(client)            # memory pools: pages, slices, which handle lives where
    KernelInspector(saxpy, client) # Source · Expanded · IR · Passes · WGSL · MSL · KernelIds
    Quiz()                         # "how many compiles?" checked against a real run
    Stepper(trace)                 # step through a CPU-runtime trace
    AccessMap(access_map)          # who touched which cell, per unit and barrier phase
    Roofline(naive, tiled)         # kernels on their device's roofline (inspect.roofline)

Views read only the event bus and `cubelab.inspect`; they record on the device thread and
redraw on one UI thread at most 10 times a second (see `_live.py`). Importing this module
imports ipywidgets; `import cubelab` does not.
"""

from cubelab.widgets._live import LiveView, UiThread, default_ui
from cubelab.widgets.access_map import AccessMap
from cubelab.widgets.buffer_board import BufferBoard
from cubelab.widgets.cache_monitor import CacheMonitor
from cubelab.widgets.kernel_inspector import KernelInspector
from cubelab.widgets.launch_timeline import LaunchTimeline
from cubelab.widgets.memory_board import MemoryBoard
from cubelab.widgets.quiz import Quiz
from cubelab.widgets.roofline import Roofline
from cubelab.widgets.stepper import Stepper

__all__ = ["KernelInspector", "CacheMonitor", "BufferBoard", "LaunchTimeline", "MemoryBoard",
           "Quiz", "Stepper", "AccessMap", "Roofline",
           "LiveView", "UiThread", "default_ui", "monitor"]


def monitor(client=None, live: bool = True):  # type: ignore[no-untyped-def]
    """CacheMonitor + BufferBoard + LaunchTimeline for one client, in one box."""
    import ipywidgets as W

    views = [CacheMonitor(client, live=live), BufferBoard(client, live=live),
             LaunchTimeline(client, live=live)]
    box = W.VBox([v.widget for v in views])
    box.add_class("cubelab-monitor")
    box.views = views  # type: ignore[attr-defined]
    return box
