"""Messy chat: three users' multi-session chats with an assistant, written like real messaging traffic.

Why: LoCoMo is two people chatting in full sentences. A memory layer in a chat app sees something
else: typos, "lol", "k", emoji, the assistant's "Got it!" and "I don't think you've told me", facts
that change ("I live in Lisbon" ... "actually I moved to Berlin"), a question asked weeks before
its answer turns up, a 190-line stack trace pasted as one message, a second language. This file is
that traffic, hand-written (no LLM, nothing random but the pasted traces' line numbers, which are
seeded), with the questions asked at the end and what a good block holds for each.

Each user is one namespace. Messages are indexed in order (``Persona.messages[i].index == i``);
a question names its evidence and what it supersedes by those indices (written by key below,
resolved when the module is imported, so a typo fails at once).

Question categories:

- ``current_fact``: a fact said once and never changed.
- ``correction``: a fact that changed; ``evidence`` is the newest statement, ``supersedes`` the
  ones it replaced (they must be absent from the block, or below the newer one).
- ``answer_after_question``: the user asked something the assistant could not answer, and gave
  the answer later ("found it! it was ...").
- ``emoji``: a fact carried by emoji, or an emoji-only message.
- ``second_language``: asked in the language the fact was said in (Portuguese, German, Chinese).
- ``assistant_said``: the assistant's own words carry the answer (a booking, a recommendation).
- ``multi_hop``: two messages are needed.
- ``off_topic``: nothing in the chat answers it; the block should be empty.

``answer``: the parts the block's text must hold for the model to answer (each part is a set of
alternatives separated by ``|``; every part must be present, case aside).
"""

# ruff: noqa: E501, RUF001 - chat messages: long lines, dashes and emoji are the content

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from _messy_chat_pastes import (
    LENA_CODE,
    LENA_LOG,
    MAYA_CODE,
    MAYA_COMPOSE,
    WEI_NGINX,
    WEI_SQL,
    lena_trace,
    maya_trace,
    wei_trace,
)

CATEGORIES = (
    "current_fact",
    "correction",
    "answer_after_question",
    "emoji",
    "second_language",
    "assistant_said",
    "multi_hop",
    "off_topic",
)
#: What a message is, for the block metrics: ``fact`` (carries something worth remembering),
#: ``filler`` (chit-chat, acknowledgements), ``hedge`` (the assistant saying it does not know),
#: ``ask`` (the user asking something in the chat), ``paste`` (a pasted trace, code or config),
#: ``reaction`` (an emoji-only message).
KINDS = ("fact", "filler", "hedge", "ask", "paste", "reaction")


@dataclass(frozen=True)
class Line:
    """One message as written in the script (before it gets an index and a time)."""

    role: str
    text: str
    key: str = ""
    kind: str = "filler"


def U(text: str) -> Line:
    """The user: chit-chat."""
    return Line("user", text)


def F(key: str, text: str) -> Line:
    """The user states a fact."""
    return Line("user", text, key, "fact")


def ASK(key: str, text: str) -> Line:
    """The user asks something in the chat (a question that may be answered later)."""
    return Line("user", text, key, "ask")


def PASTE(key: str, text: str) -> Line:
    """The user pastes a trace, code or a config: one message."""
    return Line("user", text, key, "paste")


def R(key: str, text: str) -> Line:
    """The user reacts with emoji only."""
    return Line("user", text, key, "reaction")


def A(text: str) -> Line:
    """The assistant: an acknowledgement or chit-chat."""
    return Line("assistant", text)


def AF(key: str, text: str) -> Line:
    """The assistant says something the user may ask about later (a booking, advice)."""
    return Line("assistant", text, key, "fact")


def H(key: str, text: str) -> Line:
    """The assistant hedges: it does not know."""
    return Line("assistant", text, key, "hedge")


@dataclass(frozen=True)
class Session:
    start: str  # "YYYY-MM-DD HH:MM", UTC
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Ask:
    """A question as written in the script (evidence by key)."""

    category: str
    text: str
    evidence: tuple[str, ...] = ()
    answer: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Message:
    index: int
    role: str  # "user" | "assistant"
    text: str
    session: str
    created_at: datetime
    kind: str
    key: str = ""

    @property
    def stored(self) -> str:
        """The text as a chat adapter stores it: ``"user: ..."`` / ``"assistant: ..."``."""
        return f"{self.role}: {self.text}"


@dataclass(frozen=True)
class Question:
    text: str
    category: str
    evidence: tuple[int, ...]  # message indices that must be in the block
    supersedes: tuple[int, ...] = ()  # message indices the evidence replaced
    answer: tuple[str, ...] = ()  # every part (alternatives split by "|") must be in the block's text


@dataclass(frozen=True)
class Persona:
    namespace: str
    name: str
    messages: tuple[Message, ...]
    questions: tuple[Question, ...]
    keys: dict[str, int] = field(default_factory=dict)

    @property
    def end(self) -> datetime:
        return self.messages[-1].created_at

    @property
    def asked_at(self) -> datetime:
        """When the questions are asked: a day after the last message."""
        return self.end + timedelta(days=1)

    def of_kind(self, kind: str) -> frozenset[int]:
        return frozenset(m.index for m in self.messages if m.kind == kind)

    @property
    def trace(self) -> int:
        """The pasted stack trace's index."""
        return self.keys["trace"]

    @property
    def facts(self) -> int:
        return len(self.of_kind("fact"))


def _build(namespace: str, name: str, sessions: Sequence[Session], asks: Sequence[Ask]) -> Persona:
    messages: list[Message] = []
    keys: dict[str, int] = {}
    for n, session in enumerate(sessions, 1):
        start = datetime.strptime(session.start, "%Y-%m-%d %H:%M").replace(tzinfo=timezone.utc)
        sid = f"{namespace}-s{n}"
        for step, line in enumerate(session.lines):
            if line.key:
                if line.key in keys:
                    raise ValueError(f"{namespace}: key {line.key!r} used twice")
                keys[line.key] = len(messages)
            # 20-110 s between messages, fixed by position (no randomness)
            when = start + timedelta(seconds=sum(20 + (7 * j) % 91 for j in range(step + 1)))
            messages.append(Message(len(messages), line.role, line.text, sid, when, line.kind, line.key))
    questions = []
    for a in asks:
        unknown = [k for k in (*a.evidence, *a.supersedes) if k not in keys]
        if unknown:
            raise ValueError(f"{namespace}: question {a.text!r} names unknown keys {unknown}")
        if a.category not in CATEGORIES:
            raise ValueError(f"{namespace}: unknown category {a.category!r}")
        questions.append(
            Question(
                a.text,
                a.category,
                tuple(keys[k] for k in a.evidence),
                tuple(keys[k] for k in a.supersedes),
                a.answer,
            )
        )
    return Persona(namespace, name, tuple(messages), tuple(questions), keys)


# ====================================================================== Maya: Lisbon -> Berlin, backend dev

MAYA = (
    Session(
        "2024-01-09 20:14",
        (
            U("heyy"),
            A("Hey! How's it going?"),
            U("ok ok. long day lol"),
            U("so im trying this thing where i tell u stuff and u remember it"),
            A("Sounds good — tell me whatever you'd like me to keep in mind."),
            F("home_lisbon", "so I live in Lisbon, Alfama, tiny flat but the view of the Tejo is 😍"),
            A("Alfama sounds lovely. Noted!"),
            F("job", "I'm a backend dev at Pagamento (fintech), mostly python + postgres"),
            F("vim", "and I use vim for literally everything, 8 yrs now lol"),
            A("A vim veteran! Got it."),
            F("wedding_14", "oh and my sister Inês's wedding is June 14, I'm the maid of honour 😅"),
            A("Congrats to Inês! June 14 — I'll remember."),
            F("cat", "my cat is called Bolacha, grey tabby, 4 yrs old, very judgmental"),
            A("Bolacha sounds like a character 😄"),
            U("she is lmao"),
            ASK(
                "tart_q",
                "do you remember the name of that custard tart place? the one near the monastery w/ the huge line",
            ),
            H("tart_hedge", "I don't think you've told me its name. Was it in Belém, near the Jerónimos Monastery?"),
            U("yeah somewhere there. ugh its on the tip of my tongue"),
            U("ill look it up later"),
            A("No rush!"),
            F("team_5", "work's fine, my team is 5 people rn"),
            U("anyway whats a good name for a sourdough starter"),
            A("How about 'Clint Yeastwood' or 'Bread Pitt'?"),
            U("LMAO clint yeastwood"),
            U("ok gn"),
            A("Good night, Maya!"),
        ),
    ),
    Session(
        "2024-02-03 10:42",
        (
            U("morning ☕"),
            A("Good morning! What's up?"),
            U("prod is on fire 🔥🔥 celery worker keeps dying, pasting the trace"),
            PASTE("trace", maya_trace()),
            A("Thanks — that's a long one, give me a sec."),
            AF(
                "trace_fix",
                "The root cause is at the bottom: a UniqueViolation on ledger_entries_idempotency_key_key, re-raised "
                "as an IntegrityError. Two workers are settling the same batch. Make the insert idempotent with "
                "ON CONFLICT DO NOTHING and turn on acks_late with a visibility timeout longer than the task.",
            ),
            U("omg yes we have acks_late off"),
            U("ty ty"),
            A("You're welcome! Hope prod calms down."),
            F("rent_1150", "btw rent here just went up to 1,150€ a month which is insane for alfama"),
            A("Ouch, that's a big jump."),
            F("mgr_tom", "and my manager Tom wants a postmortem by monday 🙄 he's chill but micromanages deploys"),
            F("veg", "also im vegetarian since 2019 so team lunch at the churrasqueira was fun lol"),
            F("sushi", "I ❤️ sushi 🍣 tho, the veggie rolls, could eat it every day"),
            A("Noted: sushi is a favourite!"),
            F("proj_falcon", "the new payments service is called Falcon internally, it's my baby"),
            F("run_5k", "also started running! 5k three times a week"),
            A("Nice! Sounds like a good routine."),
            U("k back to the fire 🧯"),
        ),
    ),
    Session(
        "2024-03-12 19:05",
        (
            U("hiii long time"),
            A("Hi Maya! Long time indeed. How have you been?"),
            F(
                "move_berlin",
                "actually I moved from Lisbon to Berlin last month!! transferred to Pagamento's Berlin office",
            ),
            A("Wow, big move! How are you settling in?"),
            U("cold. so cold. 🥶"),
            F("neovim", "oh and I switched from vim to Neovim, my lazy.nvim config is 🔥"),
            A("Welcome to the Neovim side!"),
            F("wedding_21", "ugh and the wedding got moved to June 21, the venue double-booked"),
            A("Oh no — June 21 it is then. Is everything else still on track?"),
            U("more or less"),
            F("avo", "A minha avó Lurdes mora em Coimbra e faz o melhor arroz doce do mundo"),
            F("irmao", "O meu irmão Duarte é professor de matemática no Porto"),
            A("Que bom! Obrigado por partilhares."),
            U("haha ur portuguese is decent"),
            U("can u book a table for friday? 4 ppl, somewhere fancy, sofia's visiting"),
            A("Any preference for cuisine or area?"),
            U("idk something german but nice. 8pm"),
            AF(
                "booking",
                "Done! I've booked a table for 4 at Restaurant Lindenhof on Friday 15 March at 20:00 — confirmation "
                "number TR-48213. They ask you to arrive 10 minutes early.",
            ),
            U("omg ur the best"),
            A("You're welcome! Enjoy the dinner."),
            F("rent_1320", "rent in berlin is 1,320€ warm for 2 rooms, so worse than lisbon lol"),
            F("partner", "sofia (my gf) is gonna move here too once she finds a job"),
            U("anyway gtg"),
        ),
    ),
    Session(
        "2024-04-20 16:30",
        (
            U("yo"),
            A("Hey! What's new?"),
            F("flat_pberg", "our new flat is in Prenzlauer Berg!! 3rd floor no elevator 💀"),
            A("Congrats on the new place!"),
            F("tart_found", "found it! it was Pastéis de Belém"),
            A("Ah, a classic! Did you get some?"),
            U("no 😭 im in berlin remember"),
            F("mgr_priya", "oh also Tom is not my manager anymore, reorg moved me under Priya"),
            A("Got it — Priya's your manager now."),
            F("team_8", "team grew to 8 people after the reorg"),
            F("proj_kestrel", "and lol Falcon got renamed to Kestrel bc legal said falcon is trademarked"),
            A("Kestrel it is!"),
            U("can u look at this, my retry thing is weird"),
            PASTE("code", MAYA_CODE),
            AF(
                "code_advice",
                "Two things: on the last attempt your decorator swallows the exception and returns None — re-raise "
                "after the loop. And use time.monotonic() rather than time.time() for the backoff, so clock changes "
                "don't break it.",
            ),
            U("ahh that's why we got silent Nones. ty!"),
            F("run_10k", "did my first 10k yesterday!! 58 min 🏃‍♀️"),
            A("Amazing, congrats!"),
            ASK("rent_reask", "wait what did I say my rent in lisbon was?"),
            H("rent_hedge", "I'd have to check — I don't want to give you a wrong number."),
            U("lol ok nvm"),
            F("otter", "my fave emoji is 🦦 btw, I use it as a reaction for everything in the team slack"),
        ),
    ),
    Session(
        "2024-05-28 21:10",
        (
            U("heyy"),
            A("Hi! How's Berlin treating you?"),
            U("better now that its warm ☀️"),
            U("can u check this compose file, postgres keeps restarting"),
            PASTE("config", MAYA_COMPOSE),
            AF(
                "config_fix",
                "Your healthcheck runs pg_isready without a user, so it connects as root, fails, and the restart "
                "policy loops. Use pg_isready -U kestrel -d kestrel and give the healthcheck a start_period of 30s.",
            ),
            U("that was it!!"),
            F("pesc", "oh and I'm no longer vegetarian tbh, pescatarian now — the sushi won 🍣"),
            A("Noted: pescatarian now."),
            F("venue", "the wedding is at Quinta da Regaleira in Sintra btw, so pretty"),
            F("wedding_3pm", "ceremony at 3pm"),
            A("Is the venue confirmed for the 21st then?"),
            R("party", "🎉🎉🎉"),
            A("Wonderful!"),
            U("can u remind me to call Inês on sunday"),
            A("Shall I set the reminder for 10am on Sunday?"),
            R("thumbs", "👍"),
            A("Done, reminder set for Sunday 10:00."),
            U("also what should i read to get better at distributed systems"),
            AF(
                "book_rec",
                "I'd recommend 'Designing Data-Intensive Applications' by Martin Kleppmann — start with chapters 5 "
                "and 9 (replication and consistency).",
            ),
            U("ooh ok ordering it"),
            F("boulder", "joined a bouldering gym near the flat, Berta Block, going tuesdays"),
            U("lol anyway the neighbours are having a party AGAIN"),
            A("Sounds loud! Earplugs might help."),
        ),
    ),
    Session(
        "2024-06-10 12:20",
        (
            U("hi"),
            A("Hi Maya!"),
            F("wedding_4pm", "correction: the ceremony is at 4pm not 3pm, Inês just texted"),
            A("Updated: 4pm ceremony."),
            F("vet", "Bolacha's vet in Berlin is Dr. Hartmann on Kastanienallee, she had her shots today"),
            A("Poor Bolacha! Good to know."),
            F("duarte_braga", "Ah, e o Duarte mudou-se para Braga, já não está no Porto"),
            A("Obrigado, anotado!"),
            ASK("flight_reask", "remind me, which flight did I say I'd take to lisbon for the wedding?"),
            H("flight_hedge", "I don't think you've told me about a flight yet."),
            U("right lol, havent booked it"),
            F("flight", "ok booked it: TAP TP 535 on June 19, BER → LIS, 6:10am 😴"),
            A("Noted: TP 535, June 19 at 6:10."),
            U("ok ttyl"),
            A("Talk soon!"),
        ),
    ),
)

MAYA_QUESTIONS = (
    Ask("current_fact", "what's my cat's name again?", ("cat",), ("Bolacha",)),
    Ask("current_fact", "who's Bolacha's vet in Berlin?", ("vet",), ("Hartmann",)),
    Ask(
        "current_fact",
        "what was the exception at the bottom of the celery trace I pasted?",
        ("trace",),
        ("IntegrityError",),
    ),
    Ask("current_fact", "where is Inês's wedding?", ("venue",), ("Regaleira",)),
    Ask("current_fact", "which bouldering gym did I join?", ("boulder",), ("Berta Block",)),
    Ask("current_fact", "what flight am I taking to Lisbon?", ("flight",), ("TP 535",)),
    Ask("correction", "where do I live now?", ("move_berlin", "flat_pberg"), ("Berlin|Prenzlauer",), ("home_lisbon",)),
    Ask("correction", "when is my sister's wedding?", ("wedding_21",), ("June 21",), ("wedding_14",)),
    Ask("correction", "which editor do I use these days?", ("neovim",), ("Neovim",), ("vim",)),
    Ask("correction", "who's my manager?", ("mgr_priya",), ("Priya",), ("mgr_tom",)),
    Ask("correction", "how much is my rent?", ("rent_1320",), ("1,320",), ("rent_1150",)),
    Ask("correction", "how many people are on my team?", ("team_8",), ("8 people",), ("team_5",)),
    Ask("correction", "what's the new payments service called?", ("proj_kestrel",), ("Kestrel",), ("proj_falcon",)),
    Ask("correction", "am I still vegetarian?", ("pesc",), ("pescatarian",), ("veg",)),
    Ask("correction", "what time does the wedding ceremony start?", ("wedding_4pm",), ("4pm",), ("wedding_3pm",)),
    Ask("correction", "how far can I run now?", ("run_10k",), ("10k",), ("run_5k",)),
    Ask("answer_after_question", "what was the custard tart place called?", ("tart_found",), ("Pastéis de Belém",)),
    Ask("emoji", "which food do I ❤️?", ("sushi",), ("sushi",)),
    Ask("emoji", "what emoji did I send when the wedding venue was confirmed?", ("party",), ("🎉",)),
    Ask("emoji", "what's my favourite emoji?", ("otter",), ("🦦",)),
    Ask("second_language", "Onde mora a minha avó?", ("avo",), ("Coimbra",)),
    Ask("second_language", "Onde vive o meu irmão agora?", ("duarte_braga",), ("Braga",), ("irmao",)),
    Ask("assistant_said", "what's the confirmation number of the restaurant you booked?", ("booking",), ("TR-48213",)),
    Ask(
        "assistant_said",
        "which book did you recommend for distributed systems?",
        ("book_rec",),
        ("Designing Data-Intensive",),
    ),
    Ask("assistant_said", "what did you say was wrong with my retry decorator?", ("code_advice",), ("re-raise",)),
    Ask("assistant_said", "how did you say to fix the postgres healthcheck?", ("config_fix",), ("-U kestrel",)),
    Ask(
        "multi_hop",
        "what does my brother teach, and where does he live now?",
        ("irmao", "duarte_braga"),
        ("matemática", "Braga"),
    ),
    Ask(
        "multi_hop",
        "which office did I transfer to, and who's my manager there?",
        ("move_berlin", "mgr_priya"),
        ("Berlin", "Priya"),
    ),
    Ask(
        "multi_hop",
        "in which town is my sister's wedding venue, and on what date?",
        ("venue", "wedding_21"),
        ("Sintra", "June 21"),
    ),
    Ask("off_topic", "What's the capital of Mongolia?"),
    Ask("off_topic", "How does TCP congestion control work?"),
    Ask("off_topic", "What is the boiling point of ethanol?"),
)


# ====================================================================== Lena: ICU nurse in Toronto, runner

LENA = (
    Session(
        "2024-02-11 21:30",
        (
            U("hi! my friend said u can remember stuff now?"),
            A("Hi! Yes — tell me what you'd like me to keep in mind."),
            U("ok cool"),
            F("job", "I'm an ICU nurse at Toronto General, mostly nights rn 🌙"),
            A("That's demanding work. Noted!"),
            F("dog", "my dog is a beagle named Pretzel 🥨 he's the love of my life"),
            A("Pretzel is a great name 😄"),
            F("car_civic", "I drive a 2015 Honda Civic, it's held together by duct tape lol"),
            F("marathon_13", "training for the Chicago marathon, it's Oct 13"),
            F("pr_152", "my half marathon PR is 1:52"),
            A("Great goal! How's training going?"),
            U("slow lol. knees hate me"),
            ASK(
                "stretch_q",
                "whats that stretch called where u lie on ur back and cross one ankle over the other knee? my physio showed me",
            ),
            H(
                "stretch_hedge",
                "I don't think you've mentioned that one before. It might be a supine glute stretch — does that sound right?",
            ),
            U("no it had a funny name"),
            U("whatever"),
            F("mgr_okafor", "my manager is Dr. Okafor btw, she's great"),
            F("allergy", "oh and I'm allergic to penicillin, like hives allergic"),
            A("Important to know — noted."),
            F("coffee_oat", "coffee order: oat flat white, always"),
            F("km_40", "running about 40 km a week rn"),
            F("partner", "my bf Dev is a chef at a ramen place on Queen St, so dinner is either amazing or cereal"),
            U("ok gotta go, shift starts at 7"),
            A("Have a good shift!"),
        ),
    ),
    Session(
        "2024-03-02 14:05",
        (
            U("hey so im doing this data analytics course and python hates me"),
            F("course", "it's the Data Analytics certificate at George Brown, module 3 is pandas"),
            A("Happy to help. What's going wrong?"),
            PASTE("trace", lena_trace()),
            U("???"),
            AF(
                "trace_fix",
                "The KeyError is the column name: after read_csv your header is ' Weekly KM' with a leading space. "
                "Normalise once with df.columns = df.columns.str.strip().str.lower().str.replace(' ', '_') and then "
                "use df['weekly_km'].",
            ),
            U("OMG a space. a SPACE"),
            A("Classic pandas gotcha 😅"),
            F("days", "big news: switching to day shifts from April!! no more nights 🙌"),
            A("That's great news!"),
            F("oma", "Meine Oma Hildegard wohnt in Freiburg und backt jeden Sonntag Zwetschgenkuchen"),
            F("sis_dog", "Der Hund meiner Schwester heißt Bruno, ein riesiger Berner Sennenhund"),
            A("Wie schön! Danke für die Infos."),
            U("also what shoes should i get, my old ones r dead"),
            AF(
                "shoe_rec",
                "For 40 km a week on roads I'd recommend the Brooks Ghost 15 — neutral and well cushioned; go half a "
                "size up for long runs.",
            ),
            U("ok ty"),
            A("You're welcome!"),
            U("lol pretzel just stole a sock"),
        ),
    ),
    Session(
        "2024-04-14 09:15",
        (
            U("morning!!"),
            A("Good morning, Lena!"),
            F("car_sold", "sold the Civic!! biking to work now 🚲"),
            A("Nice — good for the knees too, hopefully."),
            F(
                "marathon_20",
                "also change of plans: not doing Chicago anymore, I switched to the Toronto Waterfront marathon on Oct 20",
            ),
            A("Got it — Toronto Waterfront, Oct 20."),
            F("pr_147", "and new half PR: 1:47:30 🎉"),
            A("Huge improvement!"),
            U("can u put my physio appt in my calendar? Marco at Kinetic Physio, thursday 7:30am"),
            AF(
                "physio_booking",
                "Done — physio with Marco at Kinetic Physio on Thursday 18 April at 7:30am is in your calendar, with "
                "a reminder the evening before.",
            ),
            U("ty!!"),
            F("stretch_found", "found it! the physio calls it the figure-four stretch"),
            A("Ah, the figure-four — great for the glutes and hips."),
            U("analyzing my runs now, why does this give NaN"),
            PASTE("code", LENA_CODE),
            AF(
                "code_advice",
                "resample('W') needs a DatetimeIndex: call runs = runs.set_index('date') after pd.to_datetime, "
                "otherwise pandas can't bucket the weeks and you get NaN.",
            ),
            U("ahhh"),
        ),
    ),
    Session(
        "2024-05-20 20:45",
        (
            U("hiii"),
            A("Hi! How are things?"),
            F(
                "mgr_brandt",
                "work stuff: Dr. Okafor isn't my manager anymore, she moved to cardiology. it's Dr. Brandt now",
            ),
            A("Noted — Dr. Brandt is your manager now."),
            F("dog_age", "Pretzel turned 5 last week 🎂🐶"),
            F("home_leslie", "I live in Leslieville btw, near Jimmie Simpson park"),
            U("my smart plug thing keeps disconnecting, here's the log"),
            PASTE("log", LENA_LOG),
            AF(
                "log_fix",
                "The log shows the Kasa plug getting a new address at every DHCP renewal (lease 3600s), so Home "
                "Assistant loses it. Give it a static DHCP lease on your router and it'll stop flapping.",
            ),
            F("oma_age", "Oma ist letzte Woche 91 geworden!"),
            A("Alles Gute an Oma Hildegard!"),
            F("coffee_black", "also I'm off oat milk, black coffee now, doctor's orders lol"),
            A("Black coffee it is."),
            F("km_55", "mileage is up to 55 km a week 💪"),
            U("lol tired"),
        ),
    ),
    Session(
        "2024-06-30 18:00",
        (
            U("heyy"),
            A("Hey Lena!"),
            F("home_junction", "correction: we're not staying in Leslieville, we're moving to the Junction on July 1"),
            A("Exciting! The Junction on July 1 — noted."),
            A("Did the Junction lease get signed?"),
            R("party", "🎉🎉🎉"),
            F("sister", "my sister Katrin is visiting from Hamburg in August"),
            A("That'll be fun!"),
            U("she's bringing her dog 😬 pretzel will lose his mind"),
            A("Want me to remind you to book the movers?"),
            R("thumbs", "👍"),
            F("plant", "the neighbour's 🐈 knocked over my monstera AGAIN, third time"),
            A("Oh no, poor monstera!"),
            ASK("mileage_reask", "wait how much was I running in feb?"),
            H("mileage_hedge", "I'm not sure I have that — I don't want to guess."),
            U("lol fine"),
            U("got the ghost 15s btw, they're 🔥"),
            A("Glad they work for you!"),
        ),
    ),
)

LENA_QUESTIONS = (
    Ask("current_fact", "what's my dog's name?", ("dog",), ("Pretzel",)),
    Ask("current_fact", "what am I allergic to?", ("allergy",), ("penicillin",)),
    Ask("current_fact", "which course am I taking?", ("course",), ("George Brown",)),
    Ask("current_fact", "how old is Pretzel?", ("dog_age",), ("turned 5",)),
    Ask("current_fact", "what was the KeyError in my pandas trace about?", ("trace",), ("weekly_km",)),
    Ask("current_fact", "what does my boyfriend do?", ("partner",), ("chef",)),
    Ask("correction", "what shifts do I work?", ("days",), ("day shifts",), ("job",)),
    Ask(
        "correction",
        "which marathon am I running, and when?",
        ("marathon_20",),
        ("Waterfront", "Oct 20"),
        ("marathon_13",),
    ),
    Ask("correction", "what car do I drive?", ("car_sold",), ("biking",), ("car_civic",)),
    Ask("correction", "what's my half marathon PR?", ("pr_147",), ("1:47",), ("pr_152",)),
    Ask("correction", "who's my manager?", ("mgr_brandt",), ("Brandt",), ("mgr_okafor",)),
    Ask("correction", "what's my coffee order?", ("coffee_black",), ("black coffee",), ("coffee_oat",)),
    Ask("correction", "how many km a week am I running?", ("km_55",), ("55 km",), ("km_40",)),
    Ask("correction", "where do I live?", ("home_junction",), ("Junction",), ("home_leslie",)),
    Ask(
        "answer_after_question",
        "what's the name of that stretch my physio showed me?",
        ("stretch_found",),
        ("figure-four",),
    ),
    Ask("emoji", "what keeps knocking over my monstera?", ("plant",), ("🐈",)),
    Ask("emoji", "what emoji did I send when the Junction lease got signed?", ("party",), ("🎉",)),
    Ask("second_language", "Wo wohnt meine Oma?", ("oma",), ("Freiburg",)),
    Ask("second_language", "Wie alt ist Oma geworden?", ("oma_age",), ("91",)),
    Ask("second_language", "Was backt Oma Hildegard jeden Sonntag?", ("oma",), ("Zwetschgenkuchen",)),
    Ask("assistant_said", "which running shoes did you recommend?", ("shoe_rec",), ("Ghost 15",)),
    Ask("assistant_said", "when is the physio appointment you put in my calendar?", ("physio_booking",), ("7:30",)),
    Ask("assistant_said", "why did you say my smart plug keeps disconnecting?", ("log_fix",), ("DHCP",)),
    Ask("multi_hop", "what breed is my sister Katrin's dog?", ("sister", "sis_dog"), ("Berner Sennenhund",)),
    Ask("multi_hop", "what breed is my dog and how old did he just turn?", ("dog", "dog_age"), ("beagle", "turned 5")),
    Ask("off_topic", "Which planet has the longest day?"),
    Ask("off_topic", "How do I rebase a git branch onto main?"),
    Ask("off_topic", "What is the pH of sea water?"),
)


# ====================================================================== Wei: Singapore -> Sydney, product manager

WEI = (
    Session(
        "2024-01-20 10:05",
        (
            U("hello"),
            A("Hi! How can I help?"),
            U("can you remember things about me from now on"),
            A("Yes — anything you tell me I can keep in mind for later."),
            F("job", "I'm a PM at Grab in Singapore, payments team"),
            F("home_tb", "we live in Tiong Bahru, 2-room HDB near the market"),
            F("daughter", "my daughter Xiaoyu is 6, starts P1 next year"),
            F("wife", "wife Hui Min is a pharmacist at NUH"),
            A("Thanks for sharing, Wei."),
            F("jira", "at work we use Jira for everything and I hate it 🙃"),
            F("keto", "also I'm on keto since Nov"),
            F("pixel", "my phone is a Pixel 7"),
            A("Got it!"),
            ASK("crab_q", "what was that chilli crab place my colleague mentioned... the one in East Coast?"),
            H(
                "crab_hedge",
                "I don't think you've told me which one — Jumbo and Long Beach are both around East Coast, was it one of those?",
            ),
            U("no, smaller. will ask him"),
            F("badminton", "I play badminton every Thursday at the Toa Payoh sports hall"),
            U("lol ok the weather is insane today"),
            A("Stay dry!"),
        ),
    ),
    Session(
        "2024-02-18 22:40",
        (
            U("bro my side project is broken"),
            U("hawker-bot, it scrapes hawker stall prices. trace below"),
            PASTE("trace", wei_trace()),
            AF(
                "trace_fix",
                "It's an httpx.ReadTimeout from the stall API: the default 5s timeout is too short and you create a "
                "new AsyncClient per page. Reuse one AsyncClient and set timeout=httpx.Timeout(30.0, connect=5.0).",
            ),
            U("ok that makes sense"),
            F("nainai", "我奶奶最喜欢的菜是红烧肉，每次回福州都要吃"),
            F("mom_15", "我妈妈三月十五号从福州来新加坡"),
            A("好的，记下了！"),
            F("budget_6k", "planning Japan in April, budget is 6k SGD for the 3 of us"),
            U("can u book a ryokan in kyoto? 3 nights from 12 april"),
            AF(
                "ryokan",
                "Booked: Hoshinoya Kyoto, 3 nights from 12 April, one room for 2 adults and 1 child — confirmation "
                "HK-77120.",
            ),
            U("🙏🙏"),
            A("You're welcome!"),
            F("bday", "btw my birthday is 3 Sept, Hui Min always forgets lol"),
        ),
    ),
    Session(
        "2024-03-25 08:30",
        (
            U("morning"),
            F("move_sydney", "big news — I got an offer from Atlassian in Sydney, we're moving in May!"),
            A("Congratulations! That's a big step."),
            F("linear", "also we switched from Jira to Linear last sprint, night and day"),
            F("keto_off", "no longer doing keto, it made me so cranky lol"),
            F("mom_20", "妈妈的航班改了，改到三月二十号"),
            A("好的，三月二十号。"),
            F("budget_8500", "Japan budget bumped to 8,500 SGD, we're adding Hokkaido"),
            U("can u sanity check this query, funnel numbers look off"),
            PASTE("code", WEI_SQL),
            AF(
                "code_advice",
                "You LEFT JOIN payments but then filter on p.status in the WHERE clause, which drops sessions without "
                "a payment and turns it into an inner join — move the status condition into the ON clause.",
            ),
            U("🤦 ty"),
            U("what should xiaoyu use to learn to read chinese"),
            AF(
                "sagebooks",
                "I'd recommend the Sagebooks Basic Chinese readers — 500 characters over 5 sets, short stories she "
                "can read on her own.",
            ),
            F("inlaws", "Hui Min's parents live in Ipoh, we'll visit them before the move"),
        ),
    ),
    Session(
        "2024-05-26 19:20",
        (
            U("hello from sydney 🦘"),
            A("Welcome to Sydney!"),
            F("home_chatswood", "we rented a place in Chatswood, lots of good Chinese food lol"),
            F("iphone", "switched to an iPhone 15 since Atlassian gives them out"),
            F("school", "Xiaoyu starts at Chatswood Public School in July"),
            F("mgr_jess", "my manager is Jess, she's from Perth"),
            F("rent_900", "rent is 900 AUD a week 😭"),
            A("Sydney rents are brutal."),
            U("nginx on the bot box is being weird, conf below"),
            PASTE("config", WEI_NGINX),
            AF(
                "config_fix",
                "location /api has no trailing slash but proxy_pass has one, so /api/stalls reaches the app as "
                "//stalls. Make it location /api/ with proxy_pass http://127.0.0.1:8000/ — both with the slash.",
            ),
            F("koala", "🐨🐨 saw a koala in Lane Cove park today!!"),
            A("So lucky!"),
        ),
    ),
    Session(
        "2024-06-15 21:05",
        (
            U("hey"),
            A("Hi Wei!"),
            F("mgr_daniel", "correction: I actually report to Daniel Okoye now, Jess went on leave"),
            F("rent_950", "landlord bumped rent to 950 a week 😤"),
            F("crab_found", "found it! the chilli crab place was Roland Restaurant on Marine Parade"),
            A("Ah, Roland — the one that claims to have invented chilli crab!"),
            A("Did the movers deliver the last boxes?"),
            R("party", "🎉🎉🎉"),
            A("Want me to remind you about the rent on Friday?"),
            R("thumbs", "👍"),
            F("laksa", "I ❤️ laksa 🍜 the one at the Chatswood food court is legit"),
            U("ok sleep"),
            A("Good night!"),
        ),
    ),
)

WEI_QUESTIONS = (
    Ask("current_fact", "what does my wife do?", ("wife",), ("pharmacist",)),
    Ask("current_fact", "which school is Xiaoyu starting at?", ("school",), ("Chatswood Public",)),
    Ask("current_fact", "what exception did the hawker-bot trace end with?", ("trace",), ("ScrapeFailed|ReadTimeout",)),
    Ask("current_fact", "when is my birthday?", ("bday",), ("3 Sept",)),
    Ask("current_fact", "where do my in-laws live?", ("inlaws",), ("Ipoh",)),
    Ask("correction", "where do we live now?", ("home_chatswood",), ("Chatswood",), ("home_tb",)),
    Ask("correction", "what phone do I have?", ("iphone",), ("iPhone 15",), ("pixel",)),
    Ask("correction", "what tool does my team use for tickets?", ("linear",), ("Linear",), ("jira",)),
    Ask("correction", "am I still on keto?", ("keto_off",), ("no longer",), ("keto",)),
    Ask("correction", "who's my manager?", ("mgr_daniel",), ("Daniel",), ("mgr_jess",)),
    Ask("correction", "how much is our rent?", ("rent_950",), ("950",), ("rent_900",)),
    Ask("correction", "what's our Japan budget?", ("budget_8500",), ("8,500",), ("budget_6k",)),
    Ask("correction", "where do I work?", ("move_sydney",), ("Atlassian",), ("job",)),
    Ask(
        "answer_after_question", "what was the chilli crab place my colleague mentioned?", ("crab_found",), ("Roland",)
    ),
    Ask("emoji", "what food do I ❤️?", ("laksa",), ("laksa",)),
    Ask("emoji", "what animal did I see in Lane Cove?", ("koala",), ("🐨|koala",)),
    Ask("emoji", "how did I react when the movers delivered the last boxes?", ("party",), ("🎉",)),
    Ask("second_language", "我奶奶最喜欢吃什么菜？", ("nainai",), ("红烧肉",)),
    Ask("second_language", "我妈妈哪天到新加坡？", ("mom_20",), ("二十号",), ("mom_15",)),
    Ask("assistant_said", "what's the confirmation code for the Kyoto ryokan?", ("ryokan",), ("HK-77120",)),
    Ask("assistant_said", "which reading books did you recommend for Xiaoyu?", ("sagebooks",), ("Sagebooks",)),
    Ask("assistant_said", "what did you say was wrong with my funnel SQL?", ("code_advice",), ("ON clause",)),
    Ask("assistant_said", "how did you say to fix the hawker-bot timeouts?", ("trace_fix",), ("AsyncClient",)),
    Ask(
        "multi_hop",
        "which company did I move to Sydney for, and who do I report to there?",
        ("move_sydney", "mgr_daniel"),
        ("Atlassian", "Daniel"),
    ),
    Ask(
        "multi_hop",
        "what's my daughter's name and which school is she starting?",
        ("daughter", "school"),
        ("Xiaoyu", "Chatswood Public"),
    ),
    Ask("off_topic", "What is the melting point of gallium?"),
    Ask("off_topic", "Who invented the printing press?"),
    Ask("off_topic", "How is a hash table resized?"),
)


PERSONAS: tuple[Persona, ...] = (
    _build("maya", "Maya", MAYA, MAYA_QUESTIONS),
    _build("lena", "Lena", LENA, LENA_QUESTIONS),
    _build("wei", "Wei", WEI, WEI_QUESTIONS),
)


def problems(personas: Sequence[Persona] = PERSONAS) -> list[str]:
    """What is wrong with the script (empty when it is well formed); the unit test asserts it is empty."""
    out = []
    for p in personas:
        n = len(p.messages)
        texts: dict[str, list[int]] = {}
        for m in p.messages:
            texts.setdefault(" ".join(m.stored.split()).casefold(), []).append(m.index)
            if m.kind not in KINDS or m.role not in ("user", "assistant") or m.index >= n:
                out.append(f"{p.namespace}#{m.index}: bad message")
        times = [m.created_at for m in p.messages]
        if times != sorted(times):
            out.append(f"{p.namespace}: messages out of time order")
        for q in p.questions:
            where = f"{p.namespace}: {q.text!r}"
            if any(i < 0 or i >= n for i in (*q.evidence, *q.supersedes)):
                out.append(f"{where}: an index out of range")
                continue
            if (q.category == "off_topic") != (not q.evidence):
                out.append(f"{where}: off-topic questions, and only they, have no evidence")
            if q.category != "off_topic" and not q.answer:
                out.append(f"{where}: no answer")
            if q.category == "correction" and not q.supersedes:
                out.append(f"{where}: a correction supersedes nothing")
            for old in q.supersedes:
                if old >= min(q.evidence, default=-1):
                    out.append(f"{where}: superseded #{old} does not precede the evidence {q.evidence}")
            for e in q.evidence:
                if len(texts[" ".join(p.messages[e].stored.split()).casefold()]) > 1:
                    out.append(f"{where}: evidence #{e} has the same text as another message")
            for part in q.answer:
                alternatives = [a.casefold() for a in part.split("|")]
                if not any(a in p.messages[e].text.casefold() for a in alternatives for e in q.evidence):
                    out.append(f"{where}: answer part {part!r} is in none of its evidence messages")
    return out
