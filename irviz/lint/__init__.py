"""irviz lint: TorchScript tracing pitfalls reported with codes, like ruff and flake8 do."""
