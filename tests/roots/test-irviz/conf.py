"""A tiny Sphinx project for tests/test_sphinxext.py (copied next to a copy of samples/)."""
project = "irviz-test"
extensions = ["irviz.sphinxext"]
exclude_patterns = ["_build"]
numfig = True
irviz_timeout = 120
