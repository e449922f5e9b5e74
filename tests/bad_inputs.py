"""The bad-input table: every user mistake irviz must answer with one clear message.

Each case builds its files in an empty working directory, runs a real CLI command, and
expects exit code 2, an ``error:`` message without a Python traceback, and no output file.
`tests/test_bad_input.py` runs the table; ``python tests/bad_inputs.py`` writes it, with
the messages irviz prints today, to ``docs/bad-input.md`` (a test checks it is current).
"""
from __future__ import annotations

import io
import os
import sys
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "bad-input.md"

GOOD = """
import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
    def forward(self, x):
        return torch.relu(self.linear(x))
example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
"""


def write(name: str, text: str) -> Callable[[Path], None]:
    def setup(cwd: Path) -> None:
        (cwd / name).write_text(textwrap.dedent(text))
    return setup


def archive(kind: str) -> Callable[[Path], None]:
    """A broken .pt built from a real TorchScript archive (or a plain torch.save file)."""
    def setup(cwd: Path) -> None:
        import torch

        path = cwd / "model.pt"
        if kind == "pickle":
            torch.save({"weight": torch.ones(2)}, path)
            return
        if kind == "empty":
            path.write_bytes(b"")
            return
        if kind == "text":
            path.write_text("not an archive\n")
            return
        buffer = io.BytesIO()
        torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), buffer)
        data = buffer.getvalue()
        if kind == "truncated":
            path.write_bytes(data[: len(data) // 2])
            return
        with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(path, "w") as dst:
            for item in src.infolist():
                if not item.filename.endswith("data.pkl"):  # the module's state is missing
                    dst.writestr(item, src.read(item))
    return setup


@dataclass
class Case:
    id: str
    what: str                      # the mistake, for the table
    setup: Callable[[Path], None]
    args: list[str]                # irviz arguments (run in the case's directory)
    expect: str                    # a fragment of the first message line
    output: str | None = "out.svg"  # the file that must not appear


CASES = [
    Case("empty-file", "empty model file", write("model.py", ""),
         ["render", "model.py", "-o", "out.svg"], "defines no models"),
    Case("only-imports", "file with only imports", write("model.py", "import torch\n"),
         ["render", "model.py", "-o", "out.svg"], "defines no models"),
    Case("syntax-error", "syntax error in the model file",
         write("model.py", "import torch\ndef forward(x:\n    return x\n"),
         ["render", "model.py", "-o", "out.svg"], "model.py:2"),
    Case("import-error", "import error inside the model file",
         write("model.py", "import torch\nimport not_installed_package\n"),
         ["render", "model.py", "-o", "out.svg"], "not_installed_package"),
    Case("constructor-raises", "a model whose constructor raises",
         write("model.py", """
             import torch
             class Model(torch.nn.Module):
                 def __init__(self):
                     super().__init__()
                     raise RuntimeError("weights file not found")
             """),
         ["render", "model.py:Model", "-o", "out.svg"], "weights file not found"),
    Case("forward-raises-in-trace", "a forward that raises during tracing",
         write("model.py", """
             import torch
             class Model(torch.nn.Module):
                 def forward(self, x):
                     raise ValueError("expected a batch of images")
             example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
             """),
         ["render", "model.py:Model", "--mode", "trace", "-o", "out.svg"],
         "expected a batch of images"),
    Case("fails-at-run-time", "a model that scripts but fails when run on its inputs",
         write("model.py", """
             import torch
             class Model(torch.nn.Module):
                 def forward(self, x):
                     return x.view(5, -1)
             example_inputs = {"Model": lambda: (torch.rand(3, 4),)}
             """),
         ["render", "model.py:Model", "-o", "out.svg"], "running it on its example inputs"),
    Case("wrong-dtype", "inputs of the wrong dtype", write("model.py", GOOD),
         ["render", "model.py:Model", "--mode", "trace", "--inputs",
          "torch.randint(0, 5, (3, 4))", "-o", "out.svg"], "torch.jit.trace failed"),
    Case("wrong-device", "inputs on the wrong device", write("model.py", GOOD),
         ["render", "model.py:Model", "--mode", "trace", "--inputs",
          "torch.rand(3, 4, device='meta')", "-o", "out.svg"], "torch.jit.trace failed"),
    Case("too-many-inputs", "one input more than forward() takes", write("model.py", GOOD),
         ["render", "model.py:Model", "--mode", "trace", "--inputs",
          "torch.rand(3, 4), torch.rand(3, 4)", "-o", "out.svg"],
         "--inputs gives 2 positional inputs, but Model's forward(x) takes at most 1"),
    Case("huge-input", "a huge tensor input expression", write("model.py", GOOD),
         ["render", "model.py:Model", "--mode", "trace", "--inputs",
          "torch.empty(10**7, 10**7)", "-o", "out.svg"], "evaluating --inputs raised"),
    Case("not-tensors", "--inputs that are not tensors", write("model.py", GOOD),
         ["render", "model.py:Model", "--mode", "trace", "--inputs", "3", "-o", "out.svg"],
         "--inputs gave int"),
    Case("trace-without-inputs", "--mode trace without example inputs",
         write("model.py", GOOD.replace('example_inputs = {"Model": lambda: (torch.rand(3, 4),)}',
                                        "")),
         ["render", "model.py:Model", "--mode", "trace", "-o", "out.svg"],
         "--mode trace needs example inputs"),
    Case("unknown-name", "an unknown :NAME", write("model.py", GOOD),
         ["render", "model.py:Modle", "-o", "out.svg"], "has no attribute 'Modle'"),
    Case("pickle-pt", "a .pt that is a plain torch.save pickle", archive("pickle"),
         ["render", "model.pt", "-o", "out.svg"], "is not a TorchScript archive"),
    Case("truncated-pt", "a truncated .pt zip", archive("truncated"),
         ["render", "model.pt", "-o", "out.svg"], "is not a TorchScript archive"),
    Case("missing-entry-pt", "a .pt zip with a missing entry", archive("missing"),
         ["render", "model.pt", "-o", "out.svg"], "is not a TorchScript archive"),
    Case("non-zip-pt", "a .pt that is not a zip", archive("text"),
         ["render", "model.pt", "-o", "out.svg"], "is not a TorchScript archive"),
    Case("empty-pt", "an empty .pt", archive("empty"),
         ["render", "model.pt", "-o", "out.svg"], "is not a TorchScript archive"),
    Case("directory", "a directory where a file is expected",
         lambda cwd: (cwd / "models").mkdir(),
         ["render", "models", "-o", "out.svg"], "is a directory"),
    Case("missing-output-dir", "an output path in a missing directory", write("model.py", GOOD),
         ["render", "model.py:Model", "-o", "missing/out.svg"], "does not exist",
         output="missing/out.svg"),
    Case("unwritable-output", "an output path that cannot be written", write("model.py", GOOD),
         ["render", "model.py:Model", "-o", "/proc/irviz-out.svg"], "could not write",
         output="/proc/irviz-out.svg"),
    Case("format-conflict", "conflicting options: -o *.svg with --format dot",
         write("model.py", GOOD),
         ["render", "model.py:Model", "--format", "dot", "-o", "out.svg"], "--format is dot"),
    Case("many-models-one-file", "conflicting options: one -o file for several models",
         write("model.py", GOOD + "\nclass Other(Model):\n    pass\n"),
         ["render", "model.py", "-o", "out.svg"], "is one file"),
    Case("trace-out-without-measure", "conflicting options: --trace-out without --measure",
         write("model.py", GOOD),
         ["report", "model.py:Model", "--trace-out", "trace.json"], "--trace-out needs --measure",
         output="trace.json"),
    Case("lint-bad-select", "an unknown rule code", write("model.py", GOOD),
         ["lint", "model.py", "--select", "IRV9"], "IRV9", output=None),
    Case("lint-bad-config", "an unknown key in [tool.irviz]",
         lambda cwd: (write("model.py", GOOD)(cwd),
                      (cwd / "pyproject.toml").write_text('[tool.irviz]\nselct = ["IRV1"]\n')),
         ["lint", "model.py"], "selct", output=None),
]


def run_case(case: Case, cwd: Path):
    """Run ``case`` in ``cwd`` through click's runner: (exit code, stderr)."""
    import torch
    from click.testing import CliRunner

    from irviz.cli import main

    case.setup(cwd)
    old = os.getcwd()
    os.chdir(cwd)
    try:
        torch.manual_seed(0)
        result = CliRunner().invoke(main, case.args)
    finally:
        os.chdir(old)
    return result.exit_code, result.stderr


def write_doc(path: Path = DOC) -> None:
    import tempfile

    rows = ["# What irviz says when the input is wrong", "",
            "Every row is a test (`tests/test_bad_input.py`): exit code 2, the message below "
            "(first line; the hint follows it), no traceback, and no output file. "
            "Regenerate with `make bad-input-doc`.", "",
            "| mistake | command | message |", "|---|---|---|"]
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            code, err = run_case(case, Path(tmp))
        lines = [line for line in err.splitlines() if line.startswith(("error:", "hint:"))]
        message = " ".join(lines).replace("|", "\\|")
        rows.append(f"| {case.what} | `irviz {' '.join(case.args)}` | {message} |")
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    write_doc()
    print(f"wrote {DOC.relative_to(ROOT)}")
