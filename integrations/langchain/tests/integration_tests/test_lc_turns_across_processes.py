"""A turn the middleware queued in one process is recalled by the next turn in another (issue 42).

The first process's agent returns before its turn is committed; the turn is committed in the
background within the documented lag (``StoreConfig.write_linger`` plus one commit), and a second
process's next turn, on the same folder, recalls it. The first process stays alive meanwhile: the
commit does not wait for its exit.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_memory_retrievers import MemoryMiddleware
from memory_retrievers import HashEmbedder, MemoryStore

_FIRST = textwrap.dedent(
    """
    import sys
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_memory_retrievers import MemoryMiddleware
    from memory_retrievers import HashEmbedder, MemoryStore

    store = MemoryStore(sys.argv[1], embedder=HashEmbedder(32))
    model = FakeMessagesListChatModel(responses=[AIMessage("Noted.")])
    agent = create_agent(model, tools=[], middleware=[MemoryMiddleware(store, namespace="alice")])
    agent.invoke({"messages": [HumanMessage("My sister Carla lives in Lisbon")]}, {"configurable": {"thread_id": "a"}})
    print("turn done", flush=True)
    sys.stdin.readline()  # alive until the test is done: its commit must not wait for an exit
    store.close()
    """
)


class _Spy(FakeMessagesListChatModel):
    seen: list[str]

    def _generate(self, messages: list[BaseMessage], stop: object = None, run_manager: object = None, **kw: object):  # type: ignore[no-untyped-def]
        self.seen.append(str(messages[0].text) if messages and messages[0].type == "system" else "")
        return super()._generate(messages, stop, run_manager, **kw)


def test_the_next_turn_in_another_process_recalls_the_queued_turn(tmp_path: Path) -> None:
    folder = tmp_path / "db"
    first = subprocess.Popen(
        [sys.executable, "-c", _FIRST, str(folder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "turn done"
        store = MemoryStore(folder, embedder=HashEmbedder(32))
        middleware = MemoryMiddleware(store, namespace="alice", remember="off")
        deadline = time.monotonic() + 30  # the documented lag is milliseconds; a loaded machine gets room
        seen = ""
        while "My sister Carla lives in Lisbon" not in seen and time.monotonic() < deadline:
            model = _Spy(responses=[AIMessage("Carla lives in Lisbon.")], seen=[])
            create_agent(model, tools=[], middleware=[middleware]).invoke(
                {"messages": [HumanMessage("Where does my sister Carla live?")]}, {"configurable": {"thread_id": "b"}}
            )
            seen = model.seen[0]
        assert "user: My sister Carla lives in Lisbon" in seen
        assert first.poll() is None  # committed while the first process still runs
        store.close()
    finally:
        first.communicate("\n", timeout=60)
    assert first.returncode == 0
