"""test_readme.py: the README's TensorFlow example runs and prints what its comments say."""
import contextlib
import io
import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs(full_cuda_work_on_cpu):
    section = README.read_text().split("## TensorFlow", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 10
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(README), "exec"), {})
    lines = printed.getvalue().splitlines()
    assert lines == ["(2, 64, 196) (2, 64, 8) (2, 64, 196)", "(2, 196, 80)"]
