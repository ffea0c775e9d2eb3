"""Reports: the session outcome and its renderers (terminal tables, JSON, Markdown), the
retrieval and answer layers kept apart."""
