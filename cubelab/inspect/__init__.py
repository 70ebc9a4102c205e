"""Plain-data views of everything cubelab builds: the functions behind every widget and CLI view.

    inspect.generated(saxpy)                     # the items @cube made (`cargo expand`'s list)
    inspect.expanded(saxpy)                      # the generated expand function (`cargo expand`)
    inspect.generated_launch(saxpy)              # what saxpy.launch[F] does, written out
    k = inspect.instance(saxpy, f32, sizes=(4,), cube_dim=CubeDim.new_1d(4))
    inspect.kernel_id(k)                         # the KernelId, field by field
    inspect.ir(k), inspect.passes(k)             # IR before passes, and each pass's before/after
    inspect.wgsl(k)                              # the generated WGSL
    inspect.diff(id_a, id_b)                     # "why did this recompile?"

Everything here returns strings, dicts and dataclasses; renderers for notebooks and terminals
sit on top. Nothing here runs on a device except `trace` (the CPU runtime's step-through),
`access_map` (who touched which cell, and what it cost), `work` (a launch's bytes and flops,
counted on the CPU runtime), `roofline` and `device_peaks` (timed launches), which run launches
for real; the others define and compile on the calling thread, for looking.

This module is the face only; each function lives in a module named for what it holds:
`instances.py` (source, expand, Kernel instances, KernelIds), `preview.py` (the compile preview,
through the server's own pipeline), `live.py` (ledgers built from runtime events), `memory.py` (the memory pools as pages and
slices), `render.py`
(`view`/`show`), `generated.py` (the items @cube made, and the launch written out), `trace.py`
(step-through), `access_map.py` + `access_svg.py` (access maps), `cost.py` (their coalescing and
bank-conflict tables), `peaks.py` + `peak_kernels.py` (what a device reaches), `roofline.py` +
`roofline_plot.py` (a launch under its device's roof).
"""

from cubelab.inspect.access_map import AccessMap, access_map  # seeing units: who touched what
from cubelab.inspect.generated import generated, generated_launch
from cubelab.inspect.instances import (
    default_instance,
    diff,
    expanded,
    explain,
    instance,
    instance_from_id,
    kernel_id,
    source,
)
from cubelab.inspect.live import BufferStates, CacheStats, LaunchLog
from cubelab.inspect.memory import MemoryMap, memory_map
from cubelab.inspect.peaks import DevicePeaks, device_peaks
from cubelab.inspect.preview import (Compiled, compiled, correspondence, ir, msl, passes,
                                     source_of, wgsl)
from cubelab.inspect.render import show, view
from cubelab.inspect.roofline import (Roofline, RooflineChart, Work, roofline, roofline_chart,
                                      work)
from cubelab.inspect.trace import Trace, TraceStep, trace, unit_position

__all__ = ["generated", "generated_launch", "expanded", "instance", "kernel_id", "ir", "passes", "wgsl", "compiled", "diff",
           "Compiled", "source", "explain", "default_instance", "instance_from_id",
           "correspondence", "view", "show", "CacheStats", "BufferStates", "LaunchLog", "msl",
           "trace", "Trace", "TraceStep", "unit_position", "memory_map", "MemoryMap",
           "access_map", "AccessMap", "source_of", "roofline", "Roofline", "roofline_chart",
           "RooflineChart", "device_peaks", "DevicePeaks", "work", "Work"]
