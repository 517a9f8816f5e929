"""LoCoMo as the chat an assistant sees: turns, chatter, re-asked questions, a live window, and the
block metrics (shared by ``agent_context.py`` and its tests).

Every LoCoMo dialog turn becomes a user message from its speaker (a group chat the assistant is
in, so the speaker is named: ``"Caroline: ..."``). Around them, from a seeded generator:

- **pleasantries**: after a turn, with probability ``pleasantry_rate``, the user says one of a few
  stock phrases ("thanks, that's helpful!"...), so the same lines recur across sessions;
- **assistant replies**: after a user message, with probability ``reply_rate``, the assistant
  answers with a stock acknowledgement ("You're welcome! Anything else?"...);
- **earlier questions**: each LoCoMo question (every category) is asked once before, as a user
  message at a random point of the conversation, worded slightly differently ("Remind me, when
  did..."; and for half of them one content word left out, as a paraphrase would), so a stored
  question competes with the statements that answer it when it is asked again at the end.

The questions are asked after the last session, with its last ``window`` messages still in the
model's window.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from relevance import OFF_TOPIC

from memory_retrievers.text.lines import asks, body_of, line_key
from memory_retrievers.text.query import keywords

PLEASANTRIES = (
    "thanks, that's helpful!",
    "Thanks!",
    "ok, got it",
    "great, thank you!",
    "haha nice",
    "sounds good",
)
REPLIES = (
    "You're welcome! Anything else?",
    "Got it, I'll remember that.",
    "That sounds wonderful!",
    "Thanks for sharing that with me.",
    "I'm glad to hear that.",
    "Noted.",
)
REASK_PREFIXES = ("Remind me, ", "Quick question: ", "Do you remember: ", "I forgot, ")

#: General-knowledge questions no conversation answers. Half fit the calibration (``FIT``), the
#: other half only measure it (``HELD_OUT``), so the floor is never judged on questions it saw.
OFF_TOPIC_FIT = (
    *OFF_TOPIC,  # the ten of benchmarks/relevance.py
    "Which enzyme breaks down lactose?",
    "What is the capital of Mongolia?",
    "How does a Kalman filter update its estimate?",
    "What year did the Byzantine Empire fall?",
    "How do I configure DNS over HTTPS on Linux?",
    "What is the tensile strength of carbon fibre?",
    "Who wrote the Brandenburg Concertos?",
    "What is the time complexity of heapsort?",
    "How are bond yields related to bond prices?",
    "What causes the aurora borealis?",
)
OFF_TOPIC_HELD_OUT = (
    "What is the melting point of gallium?",
    "How do I rotate an AWS access key?",
    "Which planet has the longest day?",
    "What is the population of Reykjavik?",
    "How do you compute a matrix determinant?",
    "Who invented the printing press?",
    "What is the speed of sound in water?",
    "How do I rebase a git branch onto main?",
    "What is the atomic number of molybdenum?",
    "Which language is spoken in Suriname?",
    "How does TCP congestion control work?",
    "What is the tallest mountain in Africa?",
    "How many bones are in the human hand?",
    "What does the Krebs cycle produce?",
    "What is the exchange rate of the Swiss franc?",
    "How do I declare a generic function in Rust?",
    "Who painted The Garden of Earthly Delights?",
    "What is the pH of sea water?",
    "How is a hash table resized?",
    "What is the orbital period of Mars?",
)


@dataclass(frozen=True)
class Message:
    """One message of the chat script."""

    role: str  # "user" or "assistant"
    content: str  # what the participant typed (no speaker label)
    session: str
    created_at: datetime
    speaker: str | None = None  # a LoCoMo speaker's name, for their turns
    dia_id: str | None = None  # the LoCoMo turn, for its turns
    origin: str = "turn"  # turn | pleasantry | reply | asked

    @property
    def labelled(self) -> str:
        """The text with its speaker label, as a group chat shows it (``"Caroline: ..."``)."""
        return f"{self.speaker}: {self.content}" if self.speaker else self.content

    @property
    def stored(self) -> str:
        """How a chat adapter stores it: ``"user: Caroline: ..."``."""
        return f"{self.role}: {self.labelled}"


@dataclass(frozen=True)
class Question:
    text: str
    category: int  # 1-5 LoCoMo; 0 off-topic (held out from fitting); -1 off-topic used for fitting
    evidence: frozenset[str] = frozenset()


@dataclass
class Conversation:
    id: str
    messages: list[Message] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    @property
    def end(self) -> datetime:
        return max(m.created_at for m in self.messages)

    def window(self, size: int) -> list[Message]:
        """The last ``size`` messages of the last session: still in the model's window."""
        last = self.messages[-1].session
        return [m for m in self.messages if m.session == last][-size:]


@dataclass(frozen=True)
class Noise:
    pleasantry_rate: float = 0.1
    reply_rate: float = 0.3
    reask: bool = True

    @classmethod
    def off(cls) -> Noise:
        return cls(pleasantry_rate=0.0, reply_rate=0.0, reask=False)


class _Appender:
    """Appends script messages 30 s apart within their session."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.steps: dict[str, int] = {}

    def __call__(self, session: str, start: datetime, **kw: Any) -> None:
        self.steps[session] = self.steps.get(session, 0) + 1
        when = start + timedelta(seconds=30 * self.steps[session])
        self.messages.append(Message(session=session, created_at=when, **kw))


def reworded(question: str, rng: random.Random) -> str:
    """A question as a user asks it again: a lead-in, and half the time one content word less."""
    words = question.split()
    content = [i for i, w in enumerate(words) if i > 0 and w[0].islower() and keywords(w)]
    if len(content) > 1 and rng.random() < 0.5:
        del words[rng.choice(content)]
    text = " ".join(words)
    return rng.choice(REASK_PREFIXES) + text[0].lower() + text[1:]


def _date(raw: str) -> datetime:
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def _evidence(raw: list[str]) -> frozenset[str]:
    return frozenset(p for e in raw for p in re.split(r"[;,\s]+", e) if re.fullmatch(r"D\d+:\d+", p))


def load(
    path: Path, noise: Noise, *, seed: int = 7, limit: int | None = None, sessions: int | None = None
) -> list[Conversation]:
    """The conversations as chat scripts (``limit`` conversations, ``sessions`` first sessions each)."""
    out = []
    for index, conv in enumerate(json.loads(path.read_text())[:limit]):
        rng = random.Random(seed * 1000 + index)
        c = conv["conversation"]
        keys = sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        keys = keys[:sessions]
        dias = {t["dia_id"] for k in keys for t in c[k]}
        questions = []
        for q in conv["qa"]:
            evidence = _evidence(q.get("evidence") or [])
            if q.get("category") in (1, 2, 3, 4) and evidence and evidence <= dias:
                questions.append(Question(q["question"], q["category"], evidence))
            elif q.get("category") == 5 and evidence <= dias:
                questions.append(Question(q["question"], 5, evidence))
        questions += [Question(q, -1) for q in OFF_TOPIC_FIT] + [Question(q, 0) for q in OFF_TOPIC_HELD_OUT]
        turns: list[tuple[str, datetime, dict[str, str]]] = [
            (k, _date(c[f"{k}_date_time"]), t) for k in keys for t in c[k]
        ]
        # Each question asked once before, at a random turn of the conversation.
        asked_at: dict[int, list[str]] = {}
        if noise.reask:
            for q in questions:
                if q.category > 0:
                    asked_at.setdefault(rng.randrange(len(turns)), []).append(reworded(q.text, rng))
        messages: list[Message] = []
        add = _Appender(messages)
        for i, (session, start, turn) in enumerate(turns):
            for asked in asked_at.get(i, []):
                add(session, start, role="user", content=asked, origin="asked")
                if rng.random() < noise.reply_rate:
                    add(session, start, role="assistant", content=rng.choice(REPLIES), origin="reply")
            text = turn["text"]
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {turn['blip_caption']}]"
            add(session, start, role="user", content=text, speaker=turn["speaker"], dia_id=turn["dia_id"])
            if rng.random() < noise.reply_rate:
                add(session, start, role="assistant", content=rng.choice(REPLIES), origin="reply")
            if rng.random() < noise.pleasantry_rate:
                add(session, start, role="user", content=rng.choice(PLEASANTRIES), origin="pleasantry")
                if rng.random() < noise.reply_rate:
                    add(session, start, role="assistant", content=rng.choice(REPLIES), origin="reply")
        out.append(Conversation(conv["sample_id"], messages, questions))
    return out


# ---------------------------------------------------------------------- what a block holds


def evidence_of(conversations: list[Conversation]) -> dict[str, dict[str, str]]:
    """Per conversation: the body of each LoCoMo turn -> its dialog id (to read a block's lines)."""
    return {c.id: {_said(m.content): m.dia_id for m in c.messages if m.dia_id is not None} for c in conversations}


def _said(text: str) -> str:
    return " ".join(text.split()).casefold()


def dia_of(line: str, bodies: dict[str, str]) -> str | None:
    """The dialog id a block line (a stored memory's text) comes from, if it is a LoCoMo turn."""
    return bodies.get(_said(body_of(line)))


def _exact(line: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", line.casefold()).split())


@dataclass(frozen=True)
class BlockStats:
    found: frozenset[str]
    exact_duplicates: int
    near_duplicates: int
    window_lines: int
    question_rank: int | None  # 1-based place of a stored earlier copy of the question
    empty: bool


def block_stats(lines: list[str], question: str, window: list[str], bodies: dict[str, str]) -> BlockStats:
    """What one block holds: evidence, copies, window echoes, the earlier copy of the question.

    ``window`` holds the texts in the model's window as a chat adapter stores them (``"user: ..."``).
    """
    exact: set[str] = set()
    keys: set[str] = set()
    exact_dups = near_dups = 0
    for line in lines:
        e, k = _exact(line), line_key(line)
        if e in exact:
            exact_dups += 1
        elif k in keys:
            near_dups += 1
        exact.add(e)
        keys.add(k)
    shown = {line_key(t) for t in window}
    in_window = sum(1 for line in lines if line_key(line) in shown)
    words = set(re.findall(r"\w+", question.casefold()))
    rank = None
    for position, line in enumerate(lines, 1):
        body = body_of(line)
        if asks(line) and words and words <= set(re.findall(r"\w+", body.casefold())):
            rank = position
            break
    found = frozenset(d for d in (dia_of(line, bodies) for line in lines) if d is not None)
    return BlockStats(found, exact_dups, near_dups, in_window, rank, not lines)
