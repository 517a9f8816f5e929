"""Options shared by several commands, and the recall flags generated from :class:`RecallConfig`.

The recall flags come from the fields of ``RecallConfig`` and of its sections (help text from each
field's docstring; a section's field keeps its own name as a flag, ``--rrf-k``),
so a new config field is a new flag without a second list to keep in step: the reason the command
line is built on Click, whose options are objects a program can make, rather than on Typer, whose
options are read from a function signature.
"""

from __future__ import annotations

import ast
import enum
import inspect
import itertools
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from functools import cache
from typing import Any, TypeVar, get_args, get_origin

import click

from memory_retrievers.cli import exits
from memory_retrievers.cli.runtime import Invocation
from memory_retrievers.cli.settings import Settings, SettingsError, resolve

__all__ = [
    "KINDS",
    "common_options",
    "filter_from",
    "filter_options",
    "namespace_option",
    "parse_when",
    "recall_config_from",
    "recall_config_options",
    "settings_for",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Memory kinds, spelt out so building the command tree imports nothing heavy; a test pins them to MemoryKind.
KINDS = ("fact", "preference", "event", "insight", "raw", "message")


def common_options(func: F) -> F:
    """``--store``, ``--embedder``, ``--no-worker`` and ``--json``: on every command that opens a store."""
    func = click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")(func)
    func = click.option(
        "--no-worker",
        is_flag=True,
        help="Run in this process instead of the persistent worker (also MEMORY_RETRIEVERS_NO_WORKER=1).",
    )(func)
    func = click.option(
        "--embedder",
        metavar="SPEC",
        help="minilm (default, offline), hash[:DIM] (fast test double) or st:<model>; must match the store's. "
        "Env: MEMORY_RETRIEVERS_EMBEDDER.",
    )(func)
    func = click.option(
        "--store",
        metavar="PATH",
        help="Store folder or LanceDB URI. Env: MEMORY_RETRIEVERS_STORE; else the config file; "
        "else the per-user default.",
    )(func)
    return func


def namespace_option(func: F) -> F:
    """``-n/--namespace`` (falls back to ``MEMORY_RETRIEVERS_NAMESPACE`` and the config file)."""
    return click.option("-n", "--namespace", metavar="NAME", help="Whose memories. Env: MEMORY_RETRIEVERS_NAMESPACE.")(
        func
    )


def settings_for(
    inv: Invocation,
    *,
    store: str | None,
    embedder: str | None,
    no_worker: bool = False,
    namespace: str | None = None,
) -> Settings:
    """Resolve the settings of this invocation.

    Raises:
        CliError: The config file or an environment variable is unusable (exit code 6).
    """
    try:
        return resolve(inv.env, inv.cwd, store=store, namespace=namespace, embedder=embedder, no_worker=no_worker)
    except SettingsError as exc:
        raise exits.CliError(str(exc), exits.CONFIG) from None


def require_namespace(settings: Settings) -> str:
    """The namespace, or a usage error saying how to give one."""
    if not settings.namespace:
        raise click.UsageError("no namespace: pass -n NAME or set MEMORY_RETRIEVERS_NAMESPACE")
    return settings.namespace


def parse_when(value: str | None, option: str) -> datetime | None:
    """An ISO 8601 date or date-time; without an offset it is taken as UTC.

    Raises:
        click.BadParameter: Not ISO 8601.
    """
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not an ISO 8601 date or time, e.g. 2024-05-01 or 2024-05-01T12:00:00+02:00",
            param_hint=option,
        ) from None
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def filter_options(func: F) -> F:
    """Metadata filters (applied inside LanceDB before ranking)."""
    specs: list[tuple[tuple[str, ...], dict[str, Any]]] = [
        (("--kind", "kinds"), {"multiple": True, "type": click.Choice(KINDS), "help": "Only these kinds (repeat)."}),
        (("--session", "session_ids"), {"multiple": True, "metavar": "ID", "help": "Only these sessions (repeat)."}),
        (("--in-project", "projects"), {"multiple": True, "metavar": "P", "help": "Only these projects (repeat)."}),
        (("--in-topic", "topics"), {"multiple": True, "metavar": "T", "help": "Only these topics (repeat)."}),
        (("--tag", "tags_any"), {"multiple": True, "metavar": "TAG", "help": "Any of these tags (repeat)."}),
        (("--all-tags", "tags_all"), {"multiple": True, "metavar": "TAG", "help": "All of these tags (repeat)."}),
        (("--entity", "entities_any"), {"multiple": True, "metavar": "E", "help": "Any of these entities (repeat)."}),
        (("--pinned/--unpinned", "pinned"), {"default": None, "help": "Only pinned (or only unpinned) memories."}),
        (
            ("--after", "created_after"),
            {"metavar": "WHEN", "help": "Created at or after (ISO 8601; UTC if no offset)."},
        ),
        (("--before", "created_before"), {"metavar": "WHEN", "help": "Created before (ISO 8601; UTC if no offset)."}),
        (("--include-superseded",), {"is_flag": True, "help": "Also memories replaced by newer ones."}),
    ]
    for decls, kwargs in reversed(specs):
        func = click.option(*decls, **kwargs)(func)
    return func


_FILTER_KEYS = (
    "kinds",
    "session_ids",
    "projects",
    "topics",
    "tags_any",
    "tags_all",
    "entities_any",
    "pinned",
    "created_after",
    "created_before",
    "include_superseded",
)


def filter_from(params: Mapping[str, Any]) -> dict[str, Any]:
    """The filter fields given on the command line (keyword arguments of recall, ``filter=`` of list).

    Pops nothing: callers pass their whole parameter dict; only filter keys are read.
    """
    out: dict[str, Any] = {}
    for key in _FILTER_KEYS:
        value = params.get(key)
        if value is None or value == () or value is False:
            continue
        if key in ("created_after", "created_before"):
            value = parse_when(value, "--after" if key == "created_after" else "--before")
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


# ---------------------------------------------------------------------- recall config flags
_RENAMED = {"k": "--k", "token_budget": "--budget"}


@cache
def _field_docs() -> dict[str, str]:
    """First line of each RecallConfig/ChannelWeights/section field's docstring, read from the source."""
    import memory_retrievers.recall.config as recall_config
    import memory_retrievers.recall.scoring as scoring
    import memory_retrievers.recall.stage_config as stage_config

    docs: dict[str, str] = {}
    for module in (recall_config, stage_config, scoring):
        tree = ast.parse(inspect.getsource(module))
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            body = cls.body
            for node, nxt in itertools.pairwise(body):
                if (
                    isinstance(node, ast.AnnAssign)
                    and isinstance(node.target, ast.Name)
                    and isinstance(nxt, ast.Expr)
                    and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)
                ):
                    first = nxt.value.value.strip().split("\n\n")[0]
                    docs[f"{cls.name}.{node.target.id}"] = " ".join(first.split())
    return docs


def _enum_of(annotation: Any) -> type[enum.Enum] | None:
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        return annotation
    return None


def _make_option(name: str, annotation: Any, default: Any, doc: str, path: str, flag_name: str) -> click.Option:
    flag = _RENAMED.get(name, "--" + flag_name.replace("_", "-"))
    dest = "cfg__" + path.replace(".", "__")  # recall_config_from routes by it: cfg__<section>__<field>
    shown = default.value if isinstance(default, enum.Enum) else default
    help_text = f"{doc} [RecallConfig.{path}, default {shown}]".strip()
    kind = _enum_of(annotation)
    if annotation is bool:
        return click.Option([f"{flag}/--no-{flag[2:]}", dest], default=None, help=help_text)
    if kind is not None:
        return click.Option([flag, dest], type=click.Choice([m.value for m in kind]), default=None, help=help_text)
    if name == "token_budget":
        return click.Option([flag, dest], metavar="TOKENS|none", default=None, help=f"{help_text}; 'none' = no budget")
    if annotation is int:
        return click.Option([flag, dest], type=int, default=None, help=help_text)
    if annotation is float:
        return click.Option([flag, dest], type=float, default=None, help=help_text)
    return click.Option([flag, dest], type=str, default=None, help=help_text)


@cache
def recall_config_params() -> tuple[click.Option, ...]:
    """One option per RecallConfig field (channel weights as ``--weight-<channel>``, kind boosts repeatable)."""
    from memory_retrievers.recall.config import ChannelWeights, RecallConfig

    docs = _field_docs()
    params: list[click.Option] = [
        click.Option(
            ["--preset", "cfg__preset"],
            type=click.Choice(["assistant", "support", "knowledge_base"]),
            default=None,
            help="Start from a named preset; other flags override it.",
        )
    ]
    for name, info in RecallConfig.model_fields.items():
        if name == "weights":
            for channel, winfo in ChannelWeights.model_fields.items():
                doc = docs.get(f"ChannelWeights.{channel}", f"Weight of the {channel} channel in the fusion.")
                params.append(
                    click.Option(
                        [f"--weight-{channel}", f"cfg__weight__{channel}"],
                        type=float,
                        default=None,
                        help=f"{doc} [RecallConfig.weights.{channel}, default {winfo.default}]",
                    )
                )
        elif name in RecallConfig.SECTIONS:  # one flag per field of a section
            section = RecallConfig.SECTIONS[name]
            params.extend(
                _option_of(field, finfo, docs, section.__name__, f"{name}.{field}", _flag_name(name, field))
                for field, finfo in section.model_fields.items()
            )
        else:
            params.append(_option_of(name, info, docs, "RecallConfig", name, name))
    return tuple(params)


def _flag_name(section: str, field: str) -> str:
    """A section field's flag: the field's own name when no other field has it, else ``<section>-<field>``.

    Derived from the sections' fields, so a new option gets its flag with nothing to list here, and
    two sections with a field of the same name get two flags rather than one ambiguous one.
    """
    from memory_retrievers.recall.config import RecallConfig

    owners = [name for name, cls in RecallConfig.SECTIONS.items() if field in cls.model_fields]
    taken = field in RecallConfig.model_fields or field in RecallConfig.SECTIONS
    return field if owners == [section] and not taken else f"{section}_{field}"


def _option_of(name: str, info: Any, docs: Mapping[str, str], owner: str, path: str, flag_name: str) -> click.Option:
    """The flag of one config field (``kind_boosts`` as a repeatable ``--kind-boost KIND=FACTOR``)."""
    if name == "kind_boosts":
        return click.Option(
            ["--kind-boost", "cfg__" + path.replace(".", "__")],
            multiple=True,
            metavar="KIND=FACTOR",
            help=f"Score multiplier of a kind, e.g. insight=1.5 (repeat). [RecallConfig.{path}]",
        )
    annotation = info.annotation
    if get_origin(annotation) is not None and type(None) in get_args(annotation):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    default = info.get_default(call_default_factory=True)
    return _make_option(name, annotation, default, docs.get(f"{owner}.{name}", ""), path, flag_name)


def recall_config_options(func: F) -> F:
    """Add every RecallConfig flag to a command."""
    func.__click_params__ = [*getattr(func, "__click_params__", []), *reversed(recall_config_params())]  # type: ignore[attr-defined]
    return func


def recall_config_from(params: Mapping[str, Any]) -> Any:
    """A RecallConfig from the flags given (defaults for the rest).

    Raises:
        click.BadParameter: A value the config rejects (the message names the field and the fix).
    """
    from memory_retrievers.config import validated
    from memory_retrievers.errors import ConfigError
    from memory_retrievers.recall.config import RecallConfig

    overrides: dict[str, Any] = {}
    weights: dict[str, float] = {}
    preset = None
    for key, value in params.items():
        if not key.startswith("cfg__") or value is None or value == ():
            continue
        name = key[5:]
        if name == "preset":
            preset = value
        elif name.startswith("weight__"):
            weights[name[8:]] = value
        elif name == "token_budget":
            overrides["token_budget"] = _budget(value)
        elif "__" in name:  # a section's field (see _make_option): into its section
            section, field = name.split("__", 1)
            overrides.setdefault(section, {})[field] = _kind_boosts(value) if field == "kind_boosts" else value
        else:
            overrides[name] = value
    try:
        base = RecallConfig.preset(preset) if preset else RecallConfig()
        if weights:
            overrides["weights"] = base.weights.model_copy(update=weights).model_dump()
        return (
            RecallConfig.preset(preset, **overrides) if preset else validated(RecallConfig, overrides, "RecallConfig")
        )
    except ConfigError as exc:
        raise click.BadParameter(str(exc).replace("\n", " "), param_hint="recall flags") from None


def _budget(value: str) -> int | None:
    if value.strip().lower() == "none":
        return None
    try:
        budget = int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a number of tokens or 'none'", param_hint="--budget") from None
    if budget < 0:
        raise click.BadParameter("must be >= 0", param_hint="--budget")
    return budget


def _kind_boosts(values: Sequence[str]) -> dict[str, float]:
    """The default kind boosts with the given ``KIND=FACTOR`` items changed."""
    from memory_retrievers.recall.config import RecallConfig

    boosts = {k.value: v for k, v in RecallConfig().scoring.kind_boosts.items()}
    for item in values:
        kind, _, factor = item.partition("=")
        try:
            value = float(factor)
        except ValueError:
            value = None
        if kind.strip() not in KINDS or value is None:
            raise click.BadParameter(
                f"{item!r}: use KIND=FACTOR with a kind of {', '.join(KINDS)}", param_hint="--kind-boost"
            )
        boosts[kind.strip()] = value
    return boosts
