"""Long turns: multi-session chats whose assistant answers are 2,000-80,000 characters, seeded.

Why: an assistant's answers are long (travel plans, recipes, code reviews, explanations), the
user's turns short; a question later asks for one detail that sits somewhere inside one answer,
or for something the user said in passing. MiniLM reads only an answer's first 256 word pieces,
BM25 normalises by length, and the store keeps at most ``StoreConfig.max_text_chars`` (32,000)
characters of a message, so where the detail sits matters.

Everything is generated from templates and word lists with a seeded ``random.Random``: the text
varies (no sentence repeats), places, dishes, files and concepts recur across answers and sessions
with other details (so a name alone does not find the answer), and each question's detail is said
exactly once in the conversation (one evidence turn). Questions name the entity but not the detail's
own words ("which way in did you recommend for the Copper Kiln Market?" for "go in by the
north-east entrance"), as a user asking weeks later would. Each question records the depth of its
detail (its character offset in the turn) so recall can be read by depth.

    from _long_turn_script import chats
    for chat in chats():            # 4 conversations, 24 sessions each
        chat.turns, chat.questions
"""

# ruff: noqa: E501 - the word lists are kept a few to a line (fmt: skip), as text reads

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

# ---------------------------------------------------------------------- the data


@dataclass(frozen=True)
class Turn:
    index: int
    role: str  # "user" | "assistant"
    text: str
    session: str
    created_at: datetime

    @property
    def stored(self) -> str:
        return f"{self.role}: {self.text}"


@dataclass(frozen=True)
class Probe:
    """A question whose evidence is one turn."""

    text: str
    evidence: int  # the turn's index in its chat
    session: str
    answer: str
    role: str  # whose turn holds the answer
    depth: int  # the detail's character offset in the turn's text
    domain: str


@dataclass
class LongChat:
    id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Probe] = field(default_factory=list)


# ---------------------------------------------------------------------- word lists

CITIES = (
    "Kyoto", "Porto", "Oaxaca", "Tbilisi", "Ljubljana", "Hanoi", "Valparaíso", "Tallinn", "Marrakesh", "Cusco",
    "Bergen", "Kraków", "Seville", "Hobart", "Luang Prabang", "Cartagena", "Plovdiv", "Matera", "Izmir", "Busan",
    "Chiang Mai", "Ghent", "Bologna", "Quebec City", "Salzburg", "Zanzibar", "Montevideo", "Penang", "Arequipa",
    "Tromsø", "Sarajevo", "Galway",
)  # fmt: skip
ADJ = (
    "Amber", "Copper", "Salt", "Willow", "Iron", "Lantern", "Cedar", "Saffron", "Old", "Blue", "Hidden", "Silver",
    "Juniper", "Harbour", "Granite", "Velvet", "Ochre", "Linden", "Marble", "Crimson", "Quiet", "Tidal", "Golden",
    "Misty", "Painted", "Northern", "Cobalt", "Thistle", "Ember", "Rowan", "Hollow", "Falcon", "Clover", "Indigo",
)  # fmt: skip
NOUN = (
    "Lantern", "Anchor", "Orchard", "Weaver", "Bell", "Compass", "Heron", "Kiln", "Loom", "Mill", "Ferry",
    "Cloister", "Fountain", "Quarry", "Spindle", "Tannery", "Beacon", "Cistern", "Meadow", "Citadel", "Pavilion",
    "Lighthouse", "Granary", "Mint", "Foundry", "Terrace", "Vineyard", "Aqueduct", "Bazaar", "Chapel",
)  # fmt: skip
KIND = ("Market", "Garden", "Museum", "Gallery", "Bridge", "Tower", "Baths", "Steps", "Library", "Quarter", "Hall",
        "Arcade", "Observatory", "Monastery", "Courtyard")  # fmt: skip
ENTRANCES = ("north-east", "river-side", "carpenters'", "south cloister", "lower terrace", "west garden",
             "ticket-hall", "fishmongers'", "upper ramp", "old tram", "bell-tower", "orchard", "east arcade",
             "staff-lane", "harbour", "cistern", "chapel", "stable-yard")  # fmt: skip
LINES = ("Vermilion", "Teal", "Mustard", "Violet", "Emerald", "Rust", "Sky", "Plum", "Jade", "Coral", "Slate",
         "Olive", "Lilac", "Sand")  # fmt: skip
STATION_PARTS = ("Kanal", "Mercado", "Sant", "Ponte", "Hill", "Quay", "Gate", "Park", "Cross", "Ring", "Docks",
                 "Plaza", "Cathedral", "Fields", "Arsenal", "Rotunda")  # fmt: skip
SURNAMES = ("Okafor", "Lindqvist", "Marchetti", "Haddad", "Novak", "Ferreira", "Takeda", "Osei", "Kowalczyk",
            "Brennan", "Achterberg", "Duarte", "Mbeki", "Ruiz", "Varga", "Castellano", "Iversen", "Nakamura",
            "Petrov", "Quispe", "Abernathy", "Sørensen", "Delacroix", "Halloran", "Yilmaz", "Esposito")  # fmt: skip
FIRST = ("Tariq", "Ilse", "Marguerite", "Bao", "Kwame", "Rosalind", "Esteban", "Yuki", "Anneke", "Dmitri",
         "Priyanka", "Florian", "Beatriz", "Oisín", "Leilani", "Tomasz", "Zainab", "Hamish", "Ines", "Rafferty")  # fmt: skip
STYLES = ("smoky", "lemon-thyme", "miso-glazed", "harissa", "brown-butter", "charred", "sesame-ginger",
          "saffron", "tamarind", "garlic-confit", "chipotle", "za'atar", "maple-mustard", "black-pepper",
          "coconut-lime", "fennel-orange", "sumac", "gochujang")  # fmt: skip
MAINS = ("chickpea", "aubergine", "cauliflower", "salmon", "pork shoulder", "lentil", "squash", "mushroom",
         "chicken thigh", "halloumi", "sweet potato", "mackerel", "tofu", "lamb shank", "celeriac", "prawn")  # fmt: skip
FORMS = ("stew", "traybake", "risotto", "flatbread", "gratin", "dumplings", "noodle bowl", "tart", "curry",
         "pilaf", "galette", "skewers", "soup", "ragù", "hash")  # fmt: skip
SPICES = ("cumin seeds", "coriander seeds", "fennel seeds", "mustard seeds", "star anise", "cardamom pods",
          "Sichuan peppercorns", "nigella seeds", "caraway", "fenugreek", "allspice berries", "curry leaves",
          "sesame seeds", "pink peppercorns")  # fmt: skip
INGREDIENTS = ("crème fraîche", "anchovies", "pine nuts", "buttermilk", "tahini", "capers", "pecorino",
               "smoked paprika", "preserved lemon", "miso", "fish sauce", "brown sugar", "double cream",
               "walnuts", "sour cherries", "feta", "honey", "white wine", "coconut milk", "barley")  # fmt: skip
SUBSTITUTES = ("oat cream", "toasted sunflower seeds", "silken tofu", "cashew butter", "green olives",
               "nutritional yeast", "lemon zest and salt", "date syrup", "a splash of verjus", "soaked almonds",
               "white miso", "smoked salt", "pomegranate molasses", "cooked cannellini beans")  # fmt: skip
PACKAGES = ("billing", "ingest", "auth", "search", "payouts", "scheduler", "reports", "notifications", "catalog",
            "ledger", "exports", "webhooks")  # fmt: skip
MODULES = ("sync", "client", "handlers", "models", "retry", "cache", "parser", "batching", "storage", "limits",
           "serializers", "queue", "pagination", "locks")  # fmt: skip
VERBS = ("fetch", "merge", "apply", "flush", "resolve", "reconcile", "enqueue", "normalise", "expire", "render",
         "validate", "hydrate", "compact", "dispatch", "settle", "throttle")  # fmt: skip
OBJECTS = ("invoices", "cursor", "payload", "batch", "tokens", "ledger", "snapshot", "events", "quota", "rows",
           "window", "receipts", "schedule", "manifest", "headers", "accounts")  # fmt: skip
ISSUES = ("holds a lock across a network call", "swallows the timeout and returns an empty list",
          "builds the SQL by string formatting", "reads the whole table into memory", "retries without jitter",
          "mutates its default argument", "compares floats for equality", "leaks a file handle on error",
          "ignores the page token after the first page", "logs the raw API key", "sorts on every call",
          "opens a new HTTP client per item")  # fmt: skip
FIXES = ("pass a deadline through", "use a bounded queue", "parametrise the query", "stream the rows in chunks",
         "add full jitter to the backoff", "default to None and copy", "compare with math.isclose",
         "wrap it in a context manager", "loop until next_page_token is empty", "redact the key before logging",
         "cache the sorted keys", "share one client per worker")  # fmt: skip
SETTINGS = ("max_in_flight", "batch_size", "lease_seconds", "pool_size", "retry_budget", "page_limit",
            "flush_interval_ms", "shard_count", "prefetch", "grace_period_s", "queue_depth", "read_timeout_s")  # fmt: skip
CONCEPT_A = ("Halvorsen", "Marchetti", "Okonkwo", "Lindgren", "Vasquez", "Takahashi", "Albrecht", "Rourke",
             "Kessler", "Adeyemi", "Carvalho", "Szabó", "Whitcombe", "Ferrante")  # fmt: skip
CONCEPT_B = ("effect", "paradox", "lemma", "criterion", "drift", "cascade", "bound", "principle", "index",
             "threshold", "regime", "ratchet")  # fmt: skip
TOPICS = ("tidal erosion", "bee navigation", "bond pricing", "glacier flow", "river deltas", "crowd movement",
          "soil salinity", "bird migration", "queueing networks", "lake stratification", "coral spawning",
          "urban heat islands", "wheat rust", "sand dunes", "market microstructure", "wildfire spread")  # fmt: skip
INSTITUTIONS = ("Uppsala", "the Sorbonne", "Leiden", "Bologna", "Kyoto University", "Edinburgh", "Coimbra",
                "McGill", "Heidelberg", "Trinity College Dublin", "the University of Cape Town", "Monash",
                "ETH Zürich", "Charles University")  # fmt: skip
UNITS = ("metres per second", "parts per million", "kilopascals", "degrees of slope", "hertz",
         "newtons per square metre", "millimetres of rain a day", "percent humidity")  # fmt: skip

OPENERS = ("Honestly,", "In practice,", "If you have time,", "Most days,", "As a rule,", "On a busy day,",
           "Worth knowing:", "In my experience,", "For what it's worth,", "Practically speaking,", "Often,",
           "Ideally,", "Realistically,", "Either way,", "Early on,", "Later in the week,")  # fmt: skip
TAILS = ("which keeps the rest of the plan relaxed", "so nothing feels rushed", "and it rarely disappoints",
         "which most people skip", "though it depends on the weather", "if the queue is short",
         "and the light is better then", "which saves a surprising amount of time", "unless it is a holiday",
         "and locals swear by it", "which is easy to forget", "so plan around it",
         "and it pairs well with a slow lunch", "which tends to be quieter")  # fmt: skip
GENERIC_VERBS = ("wander through", "linger at", "skip", "circle back to", "spend an hour around", "photograph",
                 "walk past", "sit for a coffee near", "detour via", "save energy for", "stroll along", "browse")  # fmt: skip
COOK_VERBS = ("stir", "fold in", "season", "taste", "scrape down", "loosen", "skim", "whisk", "press", "baste",
              "rest", "char")  # fmt: skip
COOK_OBJECTS = ("the onions", "the sauce", "the dough", "the tray", "the stock", "the glaze", "the batter",
                "the filling", "the marinade", "the crumb", "the pickles", "the dressing")  # fmt: skip
COOK_TAILS = ("until it smells nutty", "so it doesn't catch", "with a wooden spoon", "off the heat",
              "while it is still warm", "just before serving", "in two batches", "with a pinch of salt",
              "until glossy", "so the edges crisp", "and let it settle", "until it coats the back of a spoon")  # fmt: skip
CODE_VERBS = ("reads", "writes", "retries", "caches", "validates", "serialises", "logs", "batches", "locks",
              "paginates", "buffers", "schedules")  # fmt: skip
CODE_TAILS = ("which is fine for now", "but the tests don't cover it", "and the naming could be clearer",
              "which we can revisit later", "so I'd leave a comment", "and the happy path looks right",
              "though a docstring would help", "which matches the rest of the module",
              "but watch it under load", "and the error message is helpful")  # fmt: skip
EXPLAIN_VERBS = ("shapes", "limits", "predicts", "explains", "amplifies", "dampens", "constrains", "drives",
                 "complicates", "governs")  # fmt: skip
EXPLAIN_TAILS = ("in most field measurements", "at least in the simple models", "which surprised early observers",
                 "though the data are noisy", "across several independent studies", "when conditions are stable",
                 "in the textbook treatment", "which later work refined", "under idealised assumptions",
                 "and the debate is not settled")  # fmt: skip


def _pick(rng: random.Random, seq: tuple[str, ...] | list[str]) -> str:
    return seq[rng.randrange(len(seq))]


# ---------------------------------------------------------------------- a conversation's world


class World:
    """A conversation's recurring names (so the same place or file shows up in many answers)."""

    def __init__(self, rng: random.Random, taken: set[str]) -> None:
        self.rng = rng

        def fresh(make: callable, n: int) -> list[str]:  # type: ignore[valid-type]
            out: list[str] = []
            while len(out) < n:
                name = make()
                if name not in taken:
                    taken.add(name)
                    out.append(name)
            return out

        self.cities = rng.sample(list(CITIES), 10)
        self.places = fresh(lambda: f"the {_pick(rng, ADJ)} {_pick(rng, NOUN)} {_pick(rng, KIND)}", 30)
        self.stations = fresh(lambda: f"{_pick(rng, SURNAMES)} {_pick(rng, STATION_PARTS)}", 16)
        self.restaurants = fresh(lambda: f"{_pick(rng, SURNAMES)}'s {_pick(rng, NOUN)}", 14)
        self.dishes = fresh(lambda: f"{_pick(rng, STYLES)} {_pick(rng, MAINS)} {_pick(rng, FORMS)}", 14)
        self.files = fresh(lambda: f"{_pick(rng, PACKAGES)}/{_pick(rng, MODULES)}.py", 14)
        self.funcs = fresh(lambda: f"{_pick(rng, VERBS)}_{_pick(rng, OBJECTS)}", 30)
        self.concepts = fresh(lambda: f"the {_pick(rng, CONCEPT_A)} {_pick(rng, CONCEPT_B)}", 12)
        self.people = fresh(lambda: f"{_pick(rng, FIRST)} {_pick(rng, SURNAMES)}", 20)
        self.used: set[tuple[str, str]] = set()  # (detail kind, entity): each said once

    def once(self, kind: str, options: list[str]) -> str | None:
        """An entity not yet used for this kind of detail."""
        free = [o for o in options if (kind, o) not in self.used]
        if not free:
            return None
        choice = _pick(self.rng, free)
        self.used.add((kind, choice))
        return choice


# A detail: (sentence, question, answer); the answer is a substring of the sentence.
Detail = tuple[str, str, str]


def _travel_detail(w: World, city: str) -> Detail | None:
    rng = w.rng
    k = rng.randrange(4)
    if k == 0 and (place := w.once("entrance", w.places)):
        entrance = _pick(rng, ENTRANCES)
        return (
            f"At {place}, go in by the {entrance} entrance; "
            f"the main gate queue can run past {rng.randint(25, 90)} minutes.",
            f"In the {city} plan, which way in did you recommend for {place}?",
            entrance,
        )
    if k == 1 and (place := w.once("price", w.places)):
        price = f"{rng.randint(7, 64)}.{rng.choice(['00', '50'])}"
        return (
            f"Tickets for {place} cost {price} at the desk, less if you book the evening slot online.",
            f"What admission price did you quote for {place} in {city}?",
            price,
        )
    if k == 2 and (station := w.once("line", w.stations)):
        line = _pick(rng, LINES)
        return (
            f"From {station}, take the {line} line {rng.randint(3, 11)} stops toward {_pick(rng, w.stations)}.",
            f"From {station}, which train should we catch in {city}?",
            f"{line} line",
        )
    if k == 3 and (restaurant := w.once("dish", w.restaurants)):
        dish = f"{_pick(rng, STYLES)} {_pick(rng, MAINS)}"
        return (
            f"For dinner, book {restaurant} and order the {dish}; ask for a table by the window.",
            f"What did you say to eat at {restaurant}?",
            dish,
        )
    return None


def _travel_filler(w: World, city: str) -> str:
    rng = w.rng
    return (
        f"{_pick(rng, OPENERS)} {_pick(rng, GENERIC_VERBS)} {_pick(rng, w.places)} "
        f"{rng.choice(['before', 'after', 'instead of', 'on the way to'])} {_pick(rng, w.places)}, "
        f"{_pick(rng, TAILS)}; {city} {rng.choice(['rewards', 'punishes', 'changes', 'surprises'])} "
        f"{rng.choice(['early risers', 'late walkers', 'anyone with a plan', 'slow mornings'])} "
        f"around {_pick(rng, w.stations)}."
    )


def _recipe_detail(w: World, dish: str) -> Detail | None:
    rng = w.rng
    k = rng.randrange(3)
    if k == 0 and (spice := w.once(f"toast {dish}", list(SPICES))):
        seconds = f"{rng.randint(2, 12) * 10} seconds"
        return (
            f"Toast the {spice} in a dry pan for {seconds} before the {_pick(rng, INGREDIENTS)} goes in.",
            f"How long do the {spice} need on the heat for the {dish}?",
            seconds,
        )
    if k == 1 and w.once("temperature", [dish]):
        temp = f"{rng.randint(32, 46) * 5}°C"
        return (
            f"Bake the {dish} at {temp} for {rng.randint(12, 70)} minutes, turning the tray once.",
            f"How hot should the oven be for the {dish}?",
            temp,
        )
    if k == 2 and (ingredient := w.once(f"swap {dish}", list(INGREDIENTS))):
        sub = _pick(rng, SUBSTITUTES)
        return (
            f"If you need to, swap the {ingredient} in the {dish} for {sub}; nobody will notice.",
            f"What can replace the {ingredient} in the {dish}?",
            sub,
        )
    return None


def _recipe_filler(w: World, dish: str) -> str:
    rng = w.rng
    return (
        f"{_pick(rng, OPENERS)} {_pick(rng, COOK_VERBS)} {_pick(rng, COOK_OBJECTS)} {_pick(rng, COOK_TAILS)}, "
        f"then {_pick(rng, COOK_VERBS)} {_pick(rng, COOK_OBJECTS)} with the {_pick(rng, INGREDIENTS)}; "
        f"the {_pick(rng, w.dishes)} {rng.choice(['uses', 'skips', 'doubles', 'halves'])} this step."
    )


def _code_detail(w: World, file: str) -> Detail | None:
    rng = w.rng
    k = rng.randrange(3)
    if k == 0 and (func := w.once("rename", w.funcs)):
        old = f"{_pick(rng, OBJECTS)[:-1]}_{rng.choice(['tmp', 'obj', 'data', 'val', 'res', 'buf'])}"
        new = f"{_pick(rng, OBJECTS)}_{rng.choice(['pending', 'by_id', 'seen', 'to_flush', 'remaining', 'cutoff'])}"
        return (
            f"In `{file}`, `{func}` {_pick(rng, ISSUES)}; also rename `{old}` there to `{new}`.",
            f"What new name did you propose for `{old}` in {file}?",
            new,
        )
    if k == 1 and (func := w.once("fix", w.funcs)):
        fix = _pick(rng, FIXES)
        return (
            f"`{func}` in `{file}` {_pick(rng, ISSUES)}; the fix is to {fix}.",
            f"How did you say to repair `{func}`?",
            fix,
        )
    if k == 2 and (setting := w.once(f"setting {file}", list(SETTINGS))):
        value = str(rng.choice([2, 4, 8, 16, 24, 32, 48, 64, 100, 250, 500, 1000]) * rng.choice([1, 3]))
        return (
            f"Set `{setting}` to {value} in `{file}`; the current default is too aggressive.",
            f"What should `{setting}` be in {file}, per your review?",
            f"`{setting}` to {value}",
        )
    return None


def _code_filler(w: World, file: str) -> str:
    rng = w.rng
    return (
        f"`{_pick(rng, w.funcs)}` {_pick(rng, CODE_VERBS)} the {_pick(rng, OBJECTS)} before "
        f"`{_pick(rng, w.funcs)}` {_pick(rng, CODE_VERBS)} them in `{_pick(rng, w.files)}`, {_pick(rng, CODE_TAILS)}."
    )


def _explain_detail(w: World, topic: str) -> Detail | None:
    rng = w.rng
    k = rng.randrange(2)
    if k == 0 and (concept := w.once("described", w.concepts)):
        person = _pick(rng, w.people)
        return (
            f"{concept[0].upper() + concept[1:]} was first described by {person} in {rng.randint(1871, 1998)}, "
            f"while studying {topic} at {_pick(rng, INSTITUTIONS)}.",
            f"Who came up with {concept}, according to you?",
            person,
        )
    if k == 1 and (concept := w.once("breaks", w.concepts)):
        unit = _pick(rng, UNITS)
        n = str(rng.randint(3, 900))
        return (
            f"A common rule of thumb is that {concept} breaks down above {n} {unit}.",
            f"Past what point does {concept} stop holding?",
            f"{n} {unit}",
        )
    return None


def _explain_filler(w: World, topic: str) -> str:
    rng = w.rng
    return (
        f"{_pick(rng, OPENERS)} {_pick(rng, w.concepts)} {_pick(rng, EXPLAIN_VERBS)} {topic} "
        f"{rng.choice(['more than', 'less than', 'about as much as', 'differently from'])} "
        f"{_pick(rng, w.concepts)}, {_pick(rng, EXPLAIN_TAILS)}."
    )


DOMAINS = ("travel", "recipe", "code", "explain")


def _answer(w: World, domain: str, subject: str, length: int) -> tuple[str, list[tuple[int, Detail]]]:
    """An assistant answer of about ``length`` characters, in sections; with the details it says and where."""
    rng = w.rng
    detail_fn, filler_fn = {
        "travel": (_travel_detail, _travel_filler),
        "recipe": (_recipe_detail, _recipe_filler),
        "code": (_code_detail, _code_filler),
        "explain": (_explain_detail, _explain_filler),
    }[domain]
    heading = {
        "travel": lambda n: f"## Day {n} in {subject}",
        "recipe": lambda n: f"### Step {n}",
        "code": lambda n: f"#### Review note {n}",
        "explain": lambda n: f"### Part {n}",
    }[domain]
    intro = {
        "travel": f"Here's a plan for {subject}, built around what you told me.",
        "recipe": f"Here's how I'd make the {subject}, step by step.",
        "code": f"I went through `{subject}` and the modules around it; notes below, most important first.",
        "explain": f"Here's an explanation of {subject}, from the basics to the open questions.",
    }[domain]
    parts = [intro + " " + " ".join(filler_fn(w, subject) for _ in range(2))]
    details: list[tuple[int, Detail]] = []
    size = len(parts[0])
    n = 0
    while size < length:
        n += 1
        sentences = [filler_fn(w, subject) for _ in range(rng.randint(3, 8))]
        detail = detail_fn(w, subject) if rng.random() < 0.6 else None
        if detail is not None:
            sentences.insert(rng.randrange(len(sentences) + 1), detail[0])
        section = heading(n) + "\n" + " ".join(sentences)
        if detail is not None:
            details.append((size + 2 + section.index(detail[0]), detail))  # "\n\n" before each section
        parts.append(section)
        size += len(section) + 2
    return "\n\n".join(parts), details


def _length(rng: random.Random) -> int:
    """An answer's length: 2k-8k most often, 8k-32k often, 32k-80k one in eight."""
    r = rng.random()
    if r < 0.55:
        return rng.randint(2_000, 8_000)
    if r < 0.875:
        return rng.randint(8_000, 32_000)
    return rng.randint(32_000, 78_000)


def _request(w: World, domain: str, subject: str) -> str:
    rng = w.rng
    return {
        "travel": rng.choice(
            [
                f"can u plan {rng.randint(3, 7)} days in {subject} for us?",
                f"we're off to {subject} next month, itinerary pls",
                f"ok {subject} now — what should we do there",
            ]
        ),
        "recipe": rng.choice(
            [
                f"how do I make the {subject}?",
                f"recipe for {subject} pls, cooking for {rng.randint(2, 8)}",
                f"can u walk me through {subject}",
            ]
        ),
        "code": rng.choice(
            [f"can u review {subject}? PR is up", f"pls look at {subject}, something's off", f"review {subject} 🙏"]
        ),
        "explain": rng.choice(
            [f"explain {subject} like I'm 12", f"what's the deal with {subject}?", f"eli5 {subject} pls"]
        ),
    }[domain]


def _followup(w: World, domain: str, subject: str) -> str:
    rng = w.rng
    return rng.choice(
        [
            "ok and more detail on the second half?",
            "nice. anything else I should know?",
            "can u go deeper on that",
            "cool, what would u change if we had less time?",
            f"more on {subject} pls",
            "hmm ok, and the edge cases?",
        ]
    )


def _user_fact(w: World, domain: str, subject: str) -> Detail | None:
    """A short user turn that says something the user is asked about later."""
    rng = w.rng
    person = w.once("user fact person", w.people)
    if person is None:
        return None
    first = person.split()[0]
    return {
        "travel": (
            f"btw {person} is coming to {subject} too, she gets seasick so no boats",
            f"Which of us can't do boats on the {subject} trip?",
            person,
        ),
        "recipe": (
            f"heads up: {person} is coming for dinner and can't eat {_pick(rng, INGREDIENTS)}",
            f"Who's joining for the {subject} dinner?",
            person,
        ),
        "code": (
            f"fyi {person} wrote most of {subject}, so be nice lol",
            f"Whose code is most of {subject}?",
            person,
        ),
        "explain": (
            f"my study partner {first} says {subject} is overrated lol",
            f"Who's my study buddy who doesn't rate {subject}?",
            first,
        ),
    }[domain]


def _chat(cid: str, rng: random.Random, taken: set[str], sessions: int, start: datetime) -> LongChat:
    w = World(rng, taken)
    chat = LongChat(cid)
    candidates: list[Probe] = []
    when = start
    subjects = {
        "travel": list(w.cities),
        "recipe": list(w.dishes),
        "code": list(w.files),
        "explain": rng.sample(list(TOPICS), 10),
    }

    def add(role: str, text: str, session: str) -> int:
        nonlocal when
        when += timedelta(seconds=rng.randint(40, 400))
        chat.turns.append(Turn(len(chat.turns), role, text, session, when))
        return len(chat.turns) - 1

    for s in range(1, sessions + 1):
        session = f"{cid}-s{s}"
        when = start + timedelta(days=2 * (s - 1), hours=rng.randint(8, 21))
        domain = DOMAINS[(s - 1 + rng.randrange(2)) % len(DOMAINS)]
        subject = subjects[domain].pop(rng.randrange(len(subjects[domain])))
        subjects[domain].append(subject)  # a subject can come back in a later session (another answer)
        for exchange in range(rng.choice([2, 2, 3])):
            if exchange == 0:
                user = _request(w, domain, subject)
            elif exchange == 1 and (fact := _user_fact(w, domain, subject)) is not None:
                user, question, answer = fact
                i = add("user", user, session)
                candidates.append(Probe(question, i, session, answer, "user", user.index(answer), domain))
                user = ""
            else:
                user = _followup(w, domain, subject)
            if user:
                add("user", user, session)
            text, details = _answer(w, domain, subject, _length(rng))
            i = add("assistant", text, session)
            for offset, (_, question, answer) in details:
                candidates.append(Probe(question, i, session, answer, "assistant", offset, domain))
    chat.questions = _choose(rng, candidates)
    return chat


#: Questions per conversation by where their detail sits: user turns, then assistant depth buckets.
QUOTA = {"user": 4, "0-2k": 4, "2k-8k": 4, "8k-32k": 4, "32k+": 3}


def depth_bucket(p: Probe) -> str:
    if p.role == "user":
        return "user"
    if p.depth < 2_000:
        return "0-2k"
    if p.depth < 8_000:
        return "2k-8k"
    if p.depth < 32_000:
        return "8k-32k"
    return "32k+"


def _choose(rng: random.Random, candidates: list[Probe]) -> list[Probe]:
    asked: dict[str, int] = {}
    for p in candidates:
        asked[p.text] = asked.get(p.text, 0) + 1
    candidates = [p for p in candidates if asked[p.text] == 1]  # a question two details answer is dropped
    chosen: list[Probe] = []
    for bucket, n in QUOTA.items():
        pool = [p for p in candidates if depth_bucket(p) == bucket]
        chosen += rng.sample(pool, min(n, len(pool)))
    return sorted(chosen, key=lambda p: (p.evidence, p.depth))


def chats(seed: int = 2024, n: int = 4, sessions: int = 24) -> list[LongChat]:
    """``n`` conversations of ``sessions`` sessions each, the same for the same arguments."""
    rng = random.Random(seed)
    taken: set[str] = set()
    start = datetime(2024, 3, 1, tzinfo=timezone.utc)
    return [_chat(f"long{c + 1}", rng, taken, sessions, start + timedelta(days=60 * c)) for c in range(n)]


def problems(data: list[LongChat]) -> list[str]:
    """What is wrong with the data (empty when well formed)."""
    out = []
    openings: dict[str, str] = {}
    for chat in data:
        for t in chat.turns:
            if t.role == "assistant" and not 2_000 <= len(t.text) <= 80_000:
                out.append(f"{chat.id}#{t.index}: assistant turn of {len(t.text)} characters")
            key = " ".join(t.stored.split())[:600].casefold()
            if t.role == "assistant" and key in openings:
                out.append(f"{chat.id}#{t.index}: opens like {openings[key]}")
            openings[key] = f"{chat.id}#{t.index}"
        for q in chat.questions:
            turn = chat.turns[q.evidence]
            if turn.text[q.depth : q.depth + len(q.answer)] != q.answer and q.answer not in turn.text:
                out.append(f"{chat.id}: {q.text!r}: the answer is not in its turn")
            elif q.answer not in turn.text[q.depth : q.depth + 400]:
                out.append(f"{chat.id}: {q.text!r}: the answer is not at its depth")
            if turn.session != q.session:
                out.append(f"{chat.id}: {q.text!r}: wrong session")
    return out
