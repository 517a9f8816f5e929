"""A zero-LLM importance score for a memory, on write (pure functions).

Greetings, acknowledgements, one-word replies, emoji and very short texts score low; texts that
carry names, numbers, dates, plans or preferences score high. The score is stored in the
memory's ``importance`` field, and formation can drop what falls under a threshold the caller sets.
"""

from __future__ import annotations

import re

from memory_retrievers.text.words import meaning_words, strip_speaker

__all__ = ["FILLER_WORDS", "importance"]

#: Words that carry no memory on their own: greetings, acknowledgements, reactions.
FILLER_WORDS = frozenset(
    """hi hello hey hiya yo morning evening night good great nice cool ok okay k sure yes yeah yep yup
    no nope thanks thank thx ty welcome bye goodbye cya lol haha hahaha lmao wow oh ah hmm um uh
    awesome amazing fine alright right totally exactly indeed agreed true same glad see later soon not
    too see you congrats congratulations cheers love dear""".split()
)
_SIGNAL = frozenset(
    """like love hate prefer favourite favorite allergic plan planning going will want need must
    always never remember birthday anniversary moved move work job married born started start
    finished bought learned learning decided decision promise appointment meeting deadline""".split()
)
_NUMBER = re.compile(r"\d")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}")


def importance(text: str) -> float:
    """How worth remembering a text is, in [0, 1], without an LLM.

    0.05 for text without a word (emoji, punctuation); 0.1 for fillers only ("Hey! Thanks!"),
    with at most two names besides ("Hey Mel! Good to see you!");
    otherwise 0.3 rising with the number of content words to 0.8, plus 0.1 for a number or
    date, 0.05 for a name inside the sentence and 0.1 for a plan or preference word.
    """
    body = strip_speaker(text).strip()
    words = meaning_words(body)
    if not words:
        return 0.05
    content = [w for w in words if w not in FILLER_WORDS]
    # A greeting that names someone ("Hey Mel! Good to see you!") is still a greeting.
    names = {m.group(0).casefold() for m in re.finditer(r"\b[A-Z][a-z]+\b", body)}
    if not content or (len(content) <= 2 and set(content) <= names):
        return 0.1
    score = 0.3 + 0.5 * min(1.0, len(content) / 12)
    if _NUMBER.search(body):
        score += 0.1
    if _NAME.search(body):
        score += 0.05
    if any(w in _SIGNAL for w in content):
        score += 0.1
    return round(min(1.0, score), 3)
