"""The one way irviz runs its work in a child process, so that a model that loops, crashes
in native code or eats the memory can neither hang irviz nor take it down.

- :mod:`.process`: ``python -m MODULE`` in its own process group (killed as a whole),
  with the memory limit, ``IRVIZ_ISOLATED`` and its stderr relayed as it comes;
- :mod:`.protocol`: requests and results as JSON lines on its stdin and stdout: the
  child :func:`~.protocol.serve`\\ s a role, the parent :func:`~.protocol.call`\\ s it
  once within a deadline, or :func:`~.pool.run_pool` keeps N busy;
- :mod:`.ending`: :func:`~.ending.explain` tells how any child ended (timeout, OOM
  killer, crash, exit code) in the same words.

The roles (request -> result): ``--isolate`` (:mod:`irviz.isolate`: the command line ->
its exit code, the output relayed byte for byte); ``lint --jobs``
(:mod:`irviz.lint.parallel`: the settings, then a spec -> its SpecResult); the measuring
child (:mod:`irviz.measure.child`: a thread setting and an action -> timings or a
profile); the Sphinx child (:mod:`irviz.sphinxext`: a directive -> its SVGs and tables).
"""
