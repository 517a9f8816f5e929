"""LangGraph's vendored tests run only in the child pytest of ``test_langgraph_standard.py``."""

# Collected directly they would test SqliteStore itself, under this repository's configuration.
collect_ignore = ["upstream"]
