"""examples/custom_channel.py runs offline, and its channel changes what is recalled (issue 28),
through ``MemoryRetriever`` and through the LangChain and LlamaIndex retrievers (issue 41)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_channel.py"

ANSWER = "Error E-4012 means the calendar token is stale"


def test_custom_channel_example_brings_in_the_exact_code(capsys: pytest.CaptureFixture[str]) -> None:
    # Run as a script (``__main__``) in this process: a new interpreter would spend ~4 s of the fast
    # tier importing LangChain and LlamaIndex, which this worker has imported already.
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    before, _, after = out.partition("with the error-code channel:")
    assert after, out
    assert ANSWER not in before  # the built-in channels fill k=2 with licence memories
    core, _, adapters = after.partition("LangChain RecallRetriever with the channel:")
    langchain, _, llama_index = adapters.partition("LlamaIndex RecallRetriever with the channel:")
    assert "'error_code']" in core  # routed like a built-in channel
    for shown in (core, langchain, llama_index):
        (line,) = [line for line in shown.splitlines() if ANSWER in line]
        assert "error_code#1" in line, out  # and explained like one, whichever adapter recalled
        assert len([line for line in shown.splitlines() if line.startswith("  ")]) == 2, out  # k=2 each
