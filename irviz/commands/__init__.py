"""One module per command: a request (every option, typed) and ``run(request) -> exit
code``. They share one :class:`~irviz.workspace.Workspace` per run, so the CLI and the
``--isolate`` child stay declarative (options in, one call, exit code out).
"""
