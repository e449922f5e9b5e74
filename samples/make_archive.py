"""Seed 1, part 6: save the traced ``WrapRNN`` as a TorchScript archive.

Usage: ``python samples/make_archive.py build/wrapped_rnn.pt`` - then
``irviz render build/wrapped_rnn.pt`` draws it without the Python classes.
"""
import sys
import warnings
from pathlib import Path

warnings.simplefilter("ignore")  # torch.jit's deprecation and tracer warnings

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rnn_loop import WrapRNN  # noqa: E402


def main(path: str) -> None:
    torch.manual_seed(0)
    traced = torch.jit.trace(WrapRNN(), (torch.rand(10, 3, 4),))
    traced.save(path)
    print(f"saved {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "wrapped_rnn.pt")
