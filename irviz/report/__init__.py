"""Reports of what the analyses found: the parallelism report, the diff text and JSON,
the lint formatters. ``irviz.report(model)`` is :func:`irviz.api.report`."""

from .. import _callable_package

_callable_package(__name__)   # irviz.report(...) calls irviz.api.report
