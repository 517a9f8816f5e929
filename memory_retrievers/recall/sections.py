"""Sections of the context block: which memories are pinned, facts, or conversation (pure).

A prompt reads better when standing instructions, what is known about the user, and what was said
are told apart: a model that sees "Alice: I might try sushi" next to "Alice is allergic to fish"
under one heading cannot tell a passing remark from a fact. :meth:`RecallResult.to_context` groups
the selected memories under one title per section, and selection reserves each section a share
of the token budget (``RecallConfig.selection.section_shares``) so that one kind cannot crowd out the others.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from memory_retrievers.models import Memory, MemoryKind

__all__ = ["DEFAULT_SECTION_SHARES", "SECTION_TITLES", "ContextSection", "section_of"]


class ContextSection(str, enum.Enum):
    """A section of the context block, in the order the block shows them."""

    PINNED = "pinned"
    """Pinned memories, whatever their kind: standing instructions and must-know facts."""
    KNOWLEDGE = "knowledge"
    """Facts, preferences, events, insights and raw notes: what is known."""
    CONVERSATION = "conversation"
    """Chat turns (kind ``message``): what was said."""


SECTION_TITLES: Mapping[ContextSection, str] = {
    ContextSection.PINNED: "Pinned:",
    ContextSection.KNOWLEDGE: "Facts and preferences:",
    ContextSection.CONVERSATION: "Conversation:",
}
"""The title line of each section in the context block."""

DEFAULT_SECTION_SHARES: Mapping[ContextSection, float] = {
    ContextSection.PINNED: 0.2,
    ContextSection.KNOWLEDGE: 0.4,
    ContextSection.CONVERSATION: 0.3,
}
"""Shares of the token budget reserved per section (the rest, 0.1, is reserved for none).

A reservation only holds while its section still has candidates: a recall that finds no pinned
memory lends the pinned share to the others, so a store of chat turns alone selects exactly as if
there were no sections."""


def section_of(memory: Memory) -> ContextSection:
    """The section a memory is shown in: pinned first, then by kind."""
    if memory.pinned:
        return ContextSection.PINNED
    if memory.kind is MemoryKind.MESSAGE:
        return ContextSection.CONVERSATION
    return ContextSection.KNOWLEDGE
