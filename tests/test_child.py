"""irviz.child: the one child-process protocol, with real child processes.

Each test writes a small role module (what request it reads, what result it writes)
and runs it as ``python -m MODULE`` through :func:`irviz.child.protocol.call` or
:func:`irviz.child.pool.run_pool`, the way the measuring child, the Sphinx child and
the ``lint --jobs`` workers are run.
"""
from __future__ import annotations

import os
import sys
import textwrap

import pytest

from irviz.child.ending import Ended, explain
from irviz.child.pool import run_pool
from irviz.child.protocol import call

posix_only = pytest.mark.skipif(os.name != "posix", reason="process groups and signals")

ROLE = """
import os
import sys
import time

from irviz.child.protocol import serve


def answer(request):
    print("the model prints this")          # must not reach the results' pipe
    os.write(1, b"and C code this\\n")
    if request == "abort":
        os.abort()
    if request == "loop":
        while True:
            time.sleep(0.1)
    if request == "internal":
        raise KeyError("a bug in irviz")
    if request == "nothing":
        os._exit(0)
    return {"echo": request, "isolated": os.environ.get("IRVIZ_ISOLATED")}


def role(requests):
    setup = next(requests)              # the pool's first request
    for request in requests:
        yield dict(answer(request), setup=setup)


if __name__ == "__main__":
    sys.exit(serve(role if os.environ.get("POOL") else lambda rs: map(answer, rs)))
"""


@pytest.fixture
def role(tmp_path, monkeypatch):
    (tmp_path / "a_role.py").write_text(textwrap.dedent(ROLE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    return "a_role"


def test_one_request_one_result_and_the_prints_go_to_stderr(role):
    reply = call(role, ["a", 1], timeout=60)
    assert reply.result == {"echo": ["a", 1], "isolated": "1"}
    assert reply.failure("the role") is None
    assert "the model prints this" in reply.stderr and "and C code this" in reply.stderr


@posix_only
def test_a_timeout_a_crash_and_no_result_in_the_same_words(role):
    late = call(role, "loop", timeout=1)
    assert late.result is None and late.ended.timed_out
    assert late.failure("the role", " while it ran").message == (
        "the role did not finish within 1 s (--timeout) while it ran; it may loop forever "
        "or be too slow")
    crashed = call(role, "abort", timeout=60).failure("the role")
    assert crashed.message == "the role crashed (SIGABRT, e.g. a native extension or os.abort())"
    assert call(role, "nothing", timeout=60).failure("the role").message == \
        "the role wrote no result"


def test_an_internal_error_in_the_child_is_raised_in_the_parent(role):
    with pytest.raises(RuntimeError, match="KeyError: 'a bug in irviz'"):
        call(role, "internal", timeout=60)


@posix_only
def test_the_pool_answers_in_order_and_a_dead_child_is_that_requests_ending(role, monkeypatch):
    monkeypatch.setenv("POOL", "1")
    found = run_pool(role, "set up", ["a", "abort", "b", "c"], jobs=2, timeout=60,
                     memory_mb=0)
    assert [f if isinstance(f, Ended) else f["echo"] for f in found] == \
        ["a", found[1], "b", "c"]
    assert all(f["setup"] == "set up" for f in found if not isinstance(f, Ended))
    assert "crashed (SIGABRT" in explain(found[1], "the worker").message


def test_explain_names_the_oom_killer_and_an_exit_code():
    assert "OOM killer" in explain(Ended(-9), "it").message
    assert explain(Ended(0), "it") is None
    assert explain(Ended(4), "it", " while it ran").message == \
        "it exited unexpectedly (exit code 4) while it ran"
    assert "limit 512 MB" in explain(Ended(-6, memory_mb=512), "it").hint
