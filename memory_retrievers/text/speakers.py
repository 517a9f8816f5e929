"""Who said a chat turn, and which speakers a query names (pure functions).

Chat turns are stored as ``"Name: text"`` (the LoCoMo format, and what chat adapters write for
named participants). A question that names a speaker is nearly always about what that speaker
said: on the LoCoMo dev split, 96.5 % of the evidence turns of questions naming one speaker are
that speaker's own turns. Recall uses this twice (see :class:`~memory_retrievers.RecallConfig`):
the speaker's turns get ``speaker_boost``, and the vector channel embeds the query without the
name, which otherwise pulls in every turn that merely mentions it (vector recall@10 on LoCoMo
0.481 with the name, 0.587 without).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from memory_retrievers.text.query import STOP_WORDS

__all__ = ["may_name_a_speaker", "named_speakers", "speaker_of", "strip_speaker", "without_names"]

# A capitalised label of at most 41 characters, then a colon and text: "Caroline: ...",
# "Dr. Smith: ...". Lower-case role labels ("user: ...") are not names and are left alone, but a
# name may follow one: a chat adapter stores a named participant's message as
# "user: Caroline: ...".
_SPEAKER = re.compile(r"^(?:[a-z][a-z_\-]{0,19}:\s+)?([A-Z][\w.'\- ]{0,40}):\s+(?=\S)")
_POSSESSIVE = r"(?:'s|\u2019s)?"


def speaker_of(text: str) -> str | None:
    """The ``Name`` of a ``"Name: text"`` chat turn, or ``None``.

    >>> speaker_of("Caroline: I went to the support group.")
    'Caroline'
    >>> speaker_of("user: hi") is None, speaker_of("user: Caroline: I went.")
    (True, 'Caroline')
    """
    match = _SPEAKER.match(text)
    return match.group(1).strip() if match else None


def strip_speaker(text: str) -> str:
    """A chat turn's text without a leading ``"Name: "`` (and the role label before it, if any)."""
    return _SPEAKER.sub("", text, count=1)


def _name_pattern(name: str) -> re.Pattern[str]:
    words = r"\s+".join(re.escape(w) for w in name.split())
    return re.compile(rf"(?<![\w'\u2019-]){words}{_POSSESSIVE}(?![\w'\u2019-])", re.IGNORECASE)


# A capital letter that starts a word (speakers' names start with one: see _SPEAKER).
_CAPITAL = re.compile(r"(?<![\w'\u2019-])[A-Z]")


def may_name_a_speaker(query: str) -> bool:
    """Whether ``query`` could name any speaker at all (then the namespace's speakers are read).

    A name is capitalised in the query, and a first word that is a common word names nobody, so a
    query without another capitalised word needs no speaker list (for a namespace not read yet in
    this process, that saves a query of the table before the query is embedded).

    >>> may_name_a_speaker("What did she paint?"), may_name_a_speaker("What did Melanie paint?")
    (False, True)
    """
    lead = len(query) - len(query.lstrip())
    first = query[lead:].split(maxsplit=1)[0].casefold() if query.strip() else ""
    return any(m.start() != lead or first not in STOP_WORDS for m in _CAPITAL.finditer(query))


def named_speakers(query: str, speakers: Iterable[str]) -> tuple[str, ...]:
    """The ``speakers`` whose name occurs in ``query`` as whole words, in the order they occur.

    A possessive counts ("Melanie's kids" names Melanie). The name must be capitalised in the query
    (any case after the first letter), and a query's first word that is also a common word does not
    count: "will it rain?" and "Will it rain?" never name a speaker called Will.

    >>> named_speakers("What do Melanie's kids like?", ["Caroline", "Melanie"])
    ('Melanie',)
    """
    folded = " ".join(query.casefold().split())
    found: list[tuple[int, str]] = []
    for name in speakers:
        key = " ".join(name.casefold().split())
        if not key or key not in folded:  # the cheap test first: most names are absent
            continue
        for match in _name_pattern(name).finditer(query):
            first = match.group()[0]
            common = match.start() == len(query) - len(query.lstrip()) and name.casefold() in STOP_WORDS
            if first.isupper() and not common:
                found.append((match.start(), name))
                break
    return tuple(name for _, name in sorted(found))


def without_names(query: str, names: Sequence[str]) -> str:
    """``query`` with every occurrence of ``names`` (and their possessive) removed.

    The query itself when removing them would leave no word.

    >>> without_names("What does Melanie's son like?", ["Melanie"])
    'What does son like?'
    """
    out = query
    for name in names:
        out = _name_pattern(name).sub(" ", out)
    out = re.sub(r"\s+([?!.,;:])", r"\1", re.sub(r"\s+", " ", out)).strip()
    return out if re.search(r"\w", out) else query
