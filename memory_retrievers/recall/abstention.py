"""When recall may abstain: never on a question about the user whose subject the memories hold (pure functions).

The calibrated abstention (fitted on LoCoMo, whose questions name people in the third person)
reads a short personal question as off-topic: "where do I live now?" scores 0.03 against "I live
in Lisbon" and "actually I moved to Berlin", below the gate, and the agent is handed nothing
although the namespace holds the answer. A question about the user ("I", "my", "we"; not a how-to
such as "how do I rebase a branch?") whose content word one of the candidates (a short statement,
not a paste) says too is about something the memories hold: recall does not abstain on it, and
the block shows what the floors keep. General questions ("what's the capital of Mongolia?") and
personal ones about something never said still get an empty block.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from memory_retrievers.recall.updates import STATEMENT_CHARS
from memory_retrievers.text.lines import body_of
from memory_retrievers.text.query import WORD
from memory_retrievers.text.words import meaning_words

__all__ = ["asks_about_the_user", "held_subject"]

#: Words that make a question about the user (case-folded).
FIRST_PERSON = frozenset("i i'm i've i'd me my mine myself we we're we've our ours us".split())

#: A how-to asks for knowledge, not for what the user said ("how do I rebase a branch?").
_HOW_TO = re.compile(r"^\W*how\s+(?:do|can|could|should|would|to)\b", re.IGNORECASE)

#: Words of a question that name no subject: asking for the current state, not what about.
_NO_SUBJECT = frozenset("now still currently today anymore these day days again".split())


def asks_about_the_user(query: str) -> bool:
    """Whether ``query`` asks about the user ("where do I live?", "what's our budget?"), not a how-to."""
    words = {w.casefold().replace("\u2019", "'") for w in WORD.findall(query)}
    return bool(words & FIRST_PERSON) and _HOW_TO.match(query) is None


def held_subject(query: str, texts: Iterable[str]) -> str | None:
    """The first content word of ``query`` that a short statement among ``texts`` says too, if any."""
    asked = [w for w in meaning_words(query) if w not in _NO_SUBJECT and w not in FIRST_PERSON]
    if not asked:
        return None
    said: set[str] = set()
    for text in texts:
        body = body_of(text)
        if len(body) <= STATEMENT_CHARS:  # a statement, not a paste (as for updates)
            said.update(meaning_words(body))
    return next((w for w in asked if w in said), None)
