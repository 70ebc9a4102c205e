"""Every notebook in notebooks/ runs top to bottom (cells tagged `raises-exception` may raise,
`skip-execution` ones are skipped), and is committed without outputs."""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the test extra (nbformat, nbclient) is missing")
from nbclient import NotebookClient  # noqa: E402

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ is empty"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs"), f"{path.name} is committed with outputs: strip it"
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code"
              and "raises-exception" not in c.metadata.get("tags", [])
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
