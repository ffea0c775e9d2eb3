"""pytest-ragmetrics pytest plugin (wiring only)."""
