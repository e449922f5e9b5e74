"""irviz lint: TorchScript tracing pitfalls reported with codes, like ruff and flake8 do.
``irviz.lint(model)`` is :func:`irviz.api.lint`."""

from .. import _callable_package

_callable_package(__name__)   # irviz.lint(...) calls irviz.api.lint
