"""The cycle-collector policy of irviz's bulk stages (irviz/gc_pause.py), in a child process
each, since it changes the interpreter's collector state."""
import subprocess
import sys

SCRIPT = """
import gc
from irviz import gc_pause
if {cli}:
    gc_pause.freeze_loaded_objects()
    gc_pause.freeze_bulk_survivors()
before = gc.get_freeze_count()
with gc_pause.gc_paused():
    assert not gc.isenabled()
    kept = [[i] for i in range(10000)]          # what a bulk stage leaves alive
print(gc.isenabled(), gc.get_freeze_count() - before >= 10000)
"""


def _run(cli: bool) -> str:
    return subprocess.run([sys.executable, "-c", SCRIPT.format(cli=cli)], check=True,
                          capture_output=True, text=True).stdout.split()


def test_in_the_cli_what_a_bulk_stage_leaves_alive_is_frozen():
    """A CLI command on one model freezes the survivors, so the collector's next young scan does not
    walk the whole graph just built."""
    assert _run(cli=True) == ["True", "True"]


def test_a_library_caller_keeps_its_collector_as_it_was():
    """Outside the CLI (or for many models) nothing more is frozen: a notebook's
    objects stay collectable."""
    assert _run(cli=False) == ["True", "False"]


def test_a_render_leaves_no_cyclic_garbage_behind(monkeypatch):
    """Once a view is dropped, its graph, analyses and plan are freed by reference counts:
    nothing of theirs waits for the cycle collector. The CLI freezes what its bulk stages
    leave alive, so a cycle there would never be freed: a recursive closure over the
    graph's node dict kept a whole graph (670k objects a 100k-node render) per model."""
    import gc
    from pathlib import Path

    from irviz.frontends.loader import load
    from irviz.workspace import Workspace

    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    # the user's file is loaded once per command; a module is a cycle of its own
    [target] = load("benchmarks/models.py:mlp_stack(20)").targets
    gc.collect()
    gc.disable()
    try:
        view = Workspace().view(target, "trace")
        view.dot()
        nodes = view.graph.number_of_nodes()
        del view
        found = gc.collect()
    finally:
        gc.enable()
    # what is left: the stand-in class the trace calls (a class is a cycle), ~30 objects
    assert nodes > 300 and found < 100, (nodes, found)
