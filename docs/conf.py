"""Sphinx configuration of irviz's own documentation (``make docs``)."""
from __future__ import annotations


import click
from docutils import nodes
from sphinx.util.docutils import SphinxDirective

import irviz

project = "irviz"
author = "the irviz authors"
copyright = "the irviz authors"
version = release = irviz.__version__

extensions = ["irviz.sphinxext", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
numfig = True
myst_heading_anchors = 2

try:  # furo if it is installed (the docs extra), Sphinx's default theme otherwise
    import furo  # noqa: F401

    html_theme = "furo"
except ImportError:  # pragma: no cover
    html_theme = "alabaster"
html_title = f"irviz {release}"

# irviz.sphinxext: node links in the viewer are relative to the repository root
irviz_source_root = ".."
irviz_timeout = 300


class ClickHelp(SphinxDirective):
    """``.. irviz-help:: render``: the ``--help`` text of an irviz command, generated
    at build time so the reference cannot go stale."""

    optional_arguments = 1

    def run(self):
        from irviz.cli import main

        name = self.arguments[0] if self.arguments else ""
        command = main.commands[name] if name else main
        ctx = click.Context(command, info_name=f"irviz {name}".strip(), terminal_width=88,
                            max_content_width=88)
        text = command.get_help(ctx)
        block = nodes.literal_block(text, text, language="text")
        return [block]


def setup(app):
    app.add_directive("irviz-help", ClickHelp)
