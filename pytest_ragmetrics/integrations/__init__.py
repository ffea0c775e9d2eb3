"""Adapters for retrieval frameworks: ``integrations.langchain`` and ``integrations.llama_index``.

Each module imports its framework only when it is itself imported (``pip install
pytest-ragmetrics[langchain]`` or ``[llama-index]``); importing ``pytest_ragmetrics`` or this
package imports neither.
"""
