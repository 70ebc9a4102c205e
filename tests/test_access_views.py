"""The AccessMap widget (the `%cubelab races|nonfinite` magics are tested in test_magic.py)."""

from __future__ import annotations

import numpy as np

from cubelab import BufferArg, CubeCount, CubeDim, inspect
from cubelab.prelude import f32
from tests.fixtures.access_kernels import tree_sum_no_sync



def racy_map(client):
    x = client.create_from_slice(f32.as_bytes(np.arange(16, dtype=np.float32)))
    out = client.create_from_slice(f32.as_bytes(np.zeros(2, dtype=np.float32)))
    return inspect.access_map(tree_sum_no_sync.launch, client, CubeCount.Static(2),
                              CubeDim.new_1d(8), BufferArg.from_raw_parts(x, 16),
                              BufferArg.from_raw_parts(out, 2))


def test_the_widget_steps_through_phases_picks_a_unit_and_says_who_touched_a_cell(client):
    from cubelab.widgets import AccessMap

    w = AccessMap(racy_map(client))
    assert w.model()["phase"] == 0 and w.back_button.disabled
    w.forward_button.click()
    assert w.model()["phase"] == 1 and w.forward_button.disabled
    assert 'data-phase="1"' in w.drawing.value and 'data-phase="0"' not in w.drawing.value
    w.unit_picker.value = 2
    assert w.model()["touched"] == {"sm": [2, 6]}  # its s=4 sum: sm[2] = sm[2] + sm[6]
    assert "selected" in w.drawing.value
    w.array_picker.value = "sm"
    w.index_picker.value = 2
    who = w.model()["who_touched"]
    assert {(a["unit"], a["kind"]) for a in who if a["cube"] == 0} == {(2, "read"), (2, "write"),
                                                                        (0, "read")}
    assert "race on sm[2]" in w.details.value
    w.phase_picker.value = -1  # every phase at once
    assert 'data-phase="0"' in w.drawing.value
