"""The README's thirty-second example runs as written and prints what the README says."""

import contextlib
import io
import re
import runpy
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def test_the_readme_example_prints_the_seed_saxpy_result(tmp_path):
    code = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[0]
    script = tmp_path / "readme_example.py"  # @cube reads its source from a file, as in a cell
    script.write_text(code)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(script), run_name="readme_example")
    assert [float(v) for v in out.getvalue().strip(" []\n").split()] == list(range(1, 32, 2))
