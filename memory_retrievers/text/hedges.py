"""An assistant's hedge: a reply saying it does not know, which recall never hands back as an answer.

A chat app stores the assistant's turns too: what it booked, recommended or explained is worth
recalling ("which shoes did you recommend?"). But some of its turns say only that it did not know:
"I don't think you've told me its name", "I'm not sure I have that, I don't want to guess". Recalled
for the same question later, such a line reads to the agent as the answer ("the user never said"),
above or instead of the message that did say it. The test is English phrasing, read in the reply's
first sentence (a reply that hedges and then answers is an answer): the role label must be
``assistant``.
"""

from __future__ import annotations

import re

from memory_retrievers.text.lines import body_of, role_of

__all__ = ["is_hedge"]

_APOSTROPHE = str.maketrans({"\u2019": "'", "\u2018": "'"})

#: How a reply says it does not know, at the start of a sentence or after a comma.
_HEDGE = re.compile(
    r"""\b(?:
        i\s+don'?t\s+(?:think|believe)\s+you(?:'ve|\s+have)?\s+(?:told|mentioned|said|shared|given)
      | you\s+(?:haven'?t|have\s+not|never)\s+(?:told|mentioned|said|shared|given)
      | i\s+(?:don'?t|do\s+not)\s+(?:know|remember|recall|have\s+(?:that|this|any|a\s+record))\b
      | i'?m\s+not\s+sure\s+(?:i\s+have|i\s+know|i\s+remember|what|which|where|when|who)
      | i\s+(?:can'?t|cannot)\s+(?:recall|remember|find|tell)
      | i(?:'d|\s+would)\s+have\s+to\s+check
      | i\s+(?:don'?t|do\s+not)\s+want\s+to\s+(?:guess|give\s+you\s+a\s+wrong)
      | i\s+have\s+no\s+(?:record|information|memory|idea)
    )""",
    re.IGNORECASE | re.VERBOSE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def is_hedge(text: str) -> bool:
    """Whether a stored line is the assistant saying, in its first sentence, that it does not know.

    >>> is_hedge("assistant: I don't think you've told me its name. Was it in Belém?")
    True
    >>> is_hedge("assistant: For 40 km a week I'd recommend the Brooks Ghost 15."), is_hedge("user: I don't know")
    (False, False)
    """
    if role_of(text) != "assistant":
        return False
    first = _SENTENCE_END.split(body_of(text).translate(_APOSTROPHE).strip(), maxsplit=1)[0]
    return _HEDGE.search(first) is not None
