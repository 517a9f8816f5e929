"""The ask page's data: the block an agent receives, its explanation, the losers, the comparison (no web)."""

from __future__ import annotations

import asyncio
import math

import pytest

from memory_retrievers import ConfigError, InvalidInputError, MemoryRetriever, MemoryStore, RecallConfig
from memory_retrievers.integration import MIDDLEWARE_HEADER
from memory_retrievers.testing import ManualClock
from memory_retrievers.ui.ask import CONFIG_CHOICES, CUT_REASONS, AskForm, ask_view, compare_view

NS = "alice/work"  # a namespace with a slash, as the page's path carries it
QUERY = "what theme does Alice like in her editor?"

MEMORIES = [
    ("Alice prefers the dark theme in every editor", "preference", {}),
    ("Alice's editor is Neovim with a dark colour scheme", "fact", {}),
    ("Always answer Alice in British English", "fact", {"pinned": True}),
    ("user: can you switch my editor theme to solarized dark?", "message", {"context": "the theme of my editor"}),
    ("user: the light theme hurts my eyes at night", "message", {"context": "editor theme at night"}),
    ("Alice moved to Berlin in March", "event", {}),
    ("Alice's dog is called Rex", "fact", {}),
    ("user: I drink green tea every morning", "message", {}),
    ("Alice works as a data engineer at Acme", "fact", {}),
    ("user: my theme song is Bohemian Rhapsody", "message", {"context": "music theme"}),
    ("Alice keeps her dotfiles on GitHub", "fact", {}),
    ("user: which font goes with a dark theme?", "message", {}),
    ("Alice's sister lives in Lisbon", "fact", {}),
]


@pytest.fixture
def alice(store: MemoryStore, clock: ManualClock) -> MemoryStore:
    for i, (text, kind, extra) in enumerate(MEMORIES):
        store.add(text, namespace=NS, kind=kind, **extra)
        clock.advance(days=30 if i % 2 else 3)  # ages differ: decay matters to one preset, not the other
    return store


def form(**params: str) -> AskForm:
    return AskForm.parse({"q": QUERY, **params})


async def test_the_block_is_byte_for_byte_what_the_retriever_hands_an_agent(alice: MemoryStore) -> None:
    view = await ask_view(alice, NS, form(budget="120"))
    expected = MemoryRetriever(alice, config={"record_access": False}).recall(QUERY, namespace=NS, token_budget=120)
    assert view.block == expected.to_context() and view.block.startswith("Relevant memories")
    assert view.tokens_used == expected.tokens_used <= 120 and view.budget == 120
    assert [m.id for m in view.explained] == [m.id for m in expected.memories]


#: Questions for the adapters' panels, each asked twice: the first time is then stored, so the second
#: finds a stored copy of the question, which the model's window holds (no adapter hands it back).
ADAPTER_QUESTIONS = [QUERY, "which font goes with a dark theme?", "quantum chromodynamics lecture notes"] * 2


def panel(view: object, adapter: str) -> str:
    return next(a.text for a in view.adapters if a.adapter.startswith(adapter))  # type: ignore[attr-defined]


async def test_the_llama_index_panel_is_what_the_memory_block_hands_the_model(alice: MemoryStore) -> None:
    """Issue 40 item 7: the panel listed the stored copy of the question, which the block leaves out."""
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    from llama_index.memory_retrievers import RecallMemoryBlock

    block = RecallMemoryBlock(store=alice, namespace=NS, token_budget=150)
    handed, views = [], []
    for question in ADAPTER_QUESTIONS:
        views.append(await ask_view(alice, NS, form(q=question, budget="150")))
        handed.append(await block.aget([ChatMessage(role=MessageRole.USER, content=question)]))
        assert panel(views[-1], "LlamaIndex RecallMemoryBlock") == handed[-1], question
        await block.aput([ChatMessage(role=MessageRole.USER, content=question)])  # flushed: stored, as Memory does
    assert "user: quantum chromodynamics" in views[5].block  # the stored copy of the question: the agent's
    assert "quantum chromodynamics" not in handed[5]  # window holds it, so the block leaves it out


def test_the_langchain_panel_is_the_system_message_the_middleware_hands_the_model(alice: MemoryStore) -> None:
    """Issue 40 item 7: the panel showed memories while the model was handed none (its window held them)."""
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

    from langchain_memory_retrievers import MemoryMiddleware

    seen: list[list[BaseMessage]] = []

    class Spy(FakeMessagesListChatModel):
        def _generate(self, messages: list[BaseMessage], stop: object = None, run_manager: object = None, **kw: object):  # type: ignore[no-untyped-def]
            seen.append(list(messages))
            return super()._generate(messages, stop, run_manager, **kw)  # type: ignore[arg-type]

    middleware = MemoryMiddleware(alice, namespace=NS, token_budget=150)  # remembers each question it is asked
    agent = create_agent(Spy(responses=[AIMessage("ok")] * 6), tools=[], middleware=[middleware])
    for question in ADAPTER_QUESTIONS:
        view = asyncio.run(ask_view(alice, NS, form(q=question, budget="150")))
        agent.invoke({"messages": [HumanMessage(question)]})
        system = str(seen[-1][0].text) if seen[-1][0].type == "system" else ""
        assert panel(view, "LangChain MemoryMiddleware") == system, question
    first, last = str(seen[0][0].text), str(seen[5][0].text)
    assert first.startswith(MIDDLEWARE_HEADER + "\n") and "Relevant memories" not in first  # one header
    assert "quantum chromodynamics" not in last  # asked before: its stored copy is in the window


async def test_asking_records_no_access(alice: MemoryStore) -> None:
    before = {m.id: (m.access_count, m.last_accessed_at) for m in alice.list(NS, limit=100)}
    view = await ask_view(alice, NS, form())
    assert view.explained
    after = {m.id: (m.access_count, m.last_accessed_at) for m in alice.list(NS, limit=100)}
    assert after == before
    # the check can fail: an agent's recall does record
    MemoryRetriever(alice).recall(QUERY, namespace=NS)
    assert {m.id: (m.access_count, m.last_accessed_at) for m in alice.list(NS, limit=100)} != before


async def test_the_budget_is_respected_and_the_cut_list_explains_what_fell_out(alice: MemoryStore) -> None:
    view = await ask_view(alice, NS, form(budget="40"))
    assert 0 < view.tokens_used <= 40 and view.trimmed_count > 0
    assert "omitted to fit the token budget" in view.block
    over = [c for c in view.cut if c.reason == "over_budget"]
    assert len(over) >= view.trimmed_count
    assert all(c.reason_text == "did not fit in what was left of the token budget" for c in over)
    shown = {m.id for m in view.explained}
    assert not shown & {c.id for c in view.cut}
    assert len(shown) + len(view.cut) <= len(MEMORIES)
    assert set(CUT_REASONS) and all(text for text in CUT_REASONS.values())


async def test_sections_group_the_block_as_to_context_does(alice: MemoryStore) -> None:
    view = await ask_view(alice, NS, form(budget="2000"))
    keys = [s.key for s in view.sections]
    assert keys[0] == "pinned" and len(keys) > 1
    for section in view.sections:
        assert f"{section.title}:" in view.block
    assert [i for s in view.sections for i in s.memory_ids] == sorted(
        (m.id for m in view.explained), key=lambda i: keys.index(next(m.section for m in view.explained if m.id == i))
    )
    pinned = next(m for m in view.explained if m.pinned)
    assert pinned.section == "pinned" and pinned.phase == "pinned"


async def test_the_explanations_add_up(alice: MemoryStore) -> None:
    view = await ask_view(alice, NS, form(budget="80"))
    assert view.explained and view.losers
    for m in (*view.explained, *view.losers):
        assert math.isclose(sum(p.value for p in m.channels) + m.rank_bonus, m.fused_score, abs_tol=1e-9), m.id
        assert math.isclose(m.base_score * math.prod(f for _, f in m.multipliers), m.final_score, abs_tol=1e-9)
        for p in m.channels:  # weight / (rrf_k + rank), rrf_k = 60, ranks from 1
            assert math.isclose(p.value, p.weight / (60 + p.rank), rel_tol=1e-9)
        assert {name for name, _ in m.multipliers} >= {"decay", "priority", "pinned"}
        assert 0.0 <= m.score <= 1.0 and m.calibration and m.calibrated_by
    assert [m.rank for m in view.explained] == list(range(1, len(view.explained) + 1))
    assert all(m.tokens > 0 for m in view.explained)


async def test_the_losers_are_the_best_candidates_left_out_with_the_winners_numbers(alice: MemoryStore) -> None:
    view = await ask_view(alice, NS, form(budget="60"))
    winners = {m.id for m in view.explained}
    assert view.losers and not winners & {m.id for m in view.losers}
    scores = [m.score for m in view.losers]
    assert scores == sorted(scores, reverse=True)  # best first
    cut = {c.id: c for c in view.cut}
    for m in view.losers:
        assert not m.selected and m.rank is None and m.phase == "not selected"
        assert m.cut_reason == cut[m.id].reason and m.cut_reason_text
        assert math.isclose(m.score, cut[m.id].score, abs_tol=1e-12)  # the same calibrated score as the real recall
    # the wide pass reproduces the real recall's numbers: the first loser had a place but for the budget
    full = await ask_view(alice, NS, form(budget="5000"))
    by_id = {m.id: m for m in full.explained}
    for m in view.losers:
        if m.id in by_id:
            assert math.isclose(by_id[m.id].final_score, m.final_score, rel_tol=1e-12)
            assert by_id[m.id].channels == m.channels


async def test_compare_diffs_two_presets_that_rank_differently(alice: MemoryStore) -> None:
    both = await compare_view(alice, NS, form(compare="knowledge_base", budget="5000"))
    left = [m.id for m in both.left.explained]
    right = [m.id for m in both.right.explained]
    assert both.left.config_name == "default" and both.right.config_name == "knowledge_base"
    assert left != right  # the presets rank this namespace differently
    diff = both.diff
    assert [r.id for r in diff.only_left] == [i for i in left if i not in right]
    assert [r.id for r in diff.only_right] == [i for i in right if i not in left]
    assert [r.id for r in diff.both] == [i for i in left if i in right]
    for row in diff.both:
        assert (row.left_rank, row.right_rank) == (left.index(row.id) + 1, right.index(row.id) + 1)
        assert row.move == row.left_rank - row.right_rank
    assert any(row.move != 0 for row in diff.both) or diff.only_left or diff.only_right
    assert {row.move for row in (*diff.only_left, *diff.only_right)} <= {0}


async def test_compare_needs_a_second_config(alice: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match="compare"):
        await compare_view(alice, NS, form())


@pytest.mark.parametrize(
    ("params", "error", "field"),
    [
        ({"budget": "lots"}, InvalidInputError, "budget"),
        ({"budget": "-5"}, InvalidInputError, "budget"),
        ({"budget": "2000000"}, InvalidInputError, "budget"),
        ({"config": "fastest"}, ConfigError, "config"),
        ({"compare": "nope"}, ConfigError, "compare"),
        ({"overrides": "{k: 5"}, InvalidInputError, "overrides"),
        ({"overrides": "[1, 2]"}, InvalidInputError, "overrides"),
        ({"overrides": '{"k": 0}'}, ConfigError, "overrides"),
        ({"overrides": '{"kk": 5}'}, ConfigError, "overrides"),
        ({"overrides": '{"name": "x"}'}, ConfigError, "overrides"),
        ({"overrides": '{"weights": {"telepathy": 1}}'}, ConfigError, "overrides"),
        ({"config": "support", "overrides": '{"weights": "heavy"}'}, ConfigError, "overrides"),
        ({"compare": "support", "compare_overrides": '{"fusion": {"rrf_k": -1}}'}, ConfigError, "compare_overrides"),
        ({"compare_overrides": '{"k": 3}'}, InvalidInputError, "compare"),
        (  # issue 40 item 5: JSON's NaN made every score NaN, so nothing was cut
            {"overrides": '{"relevance": {"calibration": {"name": "x", "intercept": NaN, "weights": {}}}}'},
            ConfigError,
            "overrides",
        ),
        ({"q": "x" * 101, "overrides": '{"query": {"max_query_chars": 100}}'}, InvalidInputError, "q"),
    ],
)
def test_bad_fields_raise_naming_the_field(params: dict[str, str], error: type[Exception], field: str) -> None:
    with pytest.raises(error) as info:
        AskForm.parse({"q": QUERY, **params})
    assert str(info.value).startswith(f"{field}: "), str(info.value)


def test_the_form_defaults_are_the_adapters_defaults() -> None:
    parsed = AskForm.parse({})
    assert parsed.query == "" and parsed.budget == RecallConfig().token_budget == 2000
    assert parsed.left == RecallConfig() and parsed.right is None
    assert CONFIG_CHOICES == ("default", "assistant", "support", "knowledge_base")
    tuned = AskForm.parse({"q": " hi ", "budget": "1,500", "config": "support", "overrides": '{"k": 3}'})
    assert tuned.query == "hi" and tuned.budget == 1500
    assert tuned.left == RecallConfig.preset("support", k=3)
    kb = AskForm.parse({"config": "knowledge_base", "overrides": '{"scoring": {"decay_weight": 0.5}}'}).left
    assert kb == RecallConfig.preset("knowledge_base", scoring={"decay_weight": 0.5})
    assert kb.scoring.decay == RecallConfig.preset("knowledge_base").scoring.decay  # the section is merged


async def test_an_empty_query_is_refused_by_the_view(alice: MemoryStore) -> None:
    with pytest.raises(InvalidInputError, match=r"^q: "):
        await ask_view(alice, NS, AskForm.parse({}))


async def test_a_namespace_without_memories_gives_an_empty_block(alice: MemoryStore) -> None:
    view = await ask_view(alice, "nobody", form())
    assert view.block == "" and view.explained == () and view.losers == () and view.tokens_used == 0
