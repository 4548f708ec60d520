"""Reference resolution: replace `$label.path$` arguments by values from earlier call outputs (pure).

Parsing lives in `fcbench.references`; this module walks the parsed path into the outputs that are
known so far. Every failure is an `UnresolvedReference` naming the call that holds the reference,
the reference text and a machine-readable `problem`, because a filter stage rejects samples on it
and a user must see at once which call of which path is wrong.

The path walk accepts what gold paths in the published files write: dict keys (`.skyId`), list
indexes (`[0]`, negative allowed), and a numeric key on a list (`.0`) as an index, since the NESTful
v1 spellings (`$var1.skyId$`) and the canonical ones (`$var_2.hotels[0].id$`) are both in use.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from fcbench.references import Reference, iter_references, parse_reference


class ReferenceProblem(str, Enum):
    UNKNOWN_LABEL = "unknown_label"  # no call of the path has this label
    LATER_CALL = "later_call"  # the label belongs to a call that runs later
    SAME_STEP = "same_step"  # parallel calls of one step cannot read each other
    SELF = "self"  # a call cannot read its own output
    NOT_EXECUTED = "not_executed"  # the label is earlier but has no output (it failed)
    MISSING_KEY = "missing_key"  # a dict along the path lacks the key
    BAD_INDEX = "bad_index"  # a list along the path is too short
    NOT_A_CONTAINER = "not_a_container"  # the path walks into a number, string or null


@dataclass(eq=False)  # not frozen: Python sets __traceback__ etc. on exceptions it raises
class UnresolvedReference(Exception):
    """A reference that cannot be resolved, with everything needed to say why."""

    call_label: str
    call_name: str
    reference: str
    problem: ReferenceProblem
    detail: str = ""

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"call {self.call_label!r} ({self.call_name}): reference {self.reference} {self.problem.value}"
        return f"{text}: {self.detail}" if self.detail else text


class CallSite(NamedTuple):
    """The call whose arguments are resolved (named in errors), and the step it runs in."""

    label: str
    name: str
    step_index: int = 0


class PathIndex:
    """Step index of every label of a gold path, to tell a later call from an unknown label.

    Built lazily: only an error message needs it, so resolving a healthy path never pays for it.
    """

    def __init__(self, labelled_steps: Iterable[Iterable[str]]) -> None:
        self._labelled_steps = labelled_steps
        self._step_of: dict[str, int] | None = None

    @property
    def step_of(self) -> dict[str, int]:
        if self._step_of is None:
            self._step_of = {}
            for step_index, labels in enumerate(self._labelled_steps):
                for label in labels:
                    self._step_of.setdefault(label, step_index)
        return self._step_of

    @classmethod
    def of_steps(cls, steps: Sequence[Sequence[Any]]) -> "PathIndex":
        """Index steps of objects with a `label` attribute (canonical `Call`s)."""
        return cls([call.label for call in step] for step in steps)


def walk_path(value: Any, path: Sequence[str | int]) -> Any:
    """Follow dict keys and list indexes; raises LookupError/TypeError with a short reason."""
    current = value
    for depth, part in enumerate(path):
        if type(current) is dict and part in current:  # the common case, without the checks below
            current = current[part]
        else:
            current = _step_into(current, part, path[:depth])
    return current


def _step_into(current: Any, part: str | int, walked: Sequence[str | int]) -> Any:
    where = _Where(walked)  # spelled only when an error message needs it (list steps succeed often)
    if isinstance(current, Mapping):
        if part in current:
            return current[part]
        if isinstance(part, int) and str(part) in current:
            return current[str(part)]  # JSON objects only have string keys
        raise KeyError(f"{where} has no key {part!r} (keys: {_short_keys(current)})")
    if isinstance(current, (list, tuple)):
        index = part if isinstance(part, int) else _as_index(part)
        if index is None:
            raise TypeError(f"{where} is a list; cannot take key {part!r}")
        if -len(current) <= index < len(current):
            return current[index]
        raise IndexError(f"{where} has {len(current)} items; no index {index}")
    raise TypeError(f"{where} is {type(current).__name__}, not a dict or list; cannot take {part!r}")


class _Where:
    def __init__(self, walked: Sequence[str | int]) -> None:
        self.walked = walked

    def __str__(self) -> str:
        return _spell_path(self.walked) or "the output"


def _as_index(part: str) -> int | None:
    text = part[1:] if part.startswith("-") else part
    return int(part) if text.isdigit() else None


def _spell_path(path: Sequence[str | int]) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path).lstrip(".")


def _short_keys(mapping: Mapping[Any, Any], limit: int = 8) -> str:
    keys = [str(key) for key in list(mapping)[: limit + 1]]
    return ", ".join(keys[:limit]) + (", ..." if len(keys) > limit else "")


def resolve_reference(
    reference: Reference,
    outputs: Mapping[str, Any],
    site: CallSite,
    index: PathIndex | None = None,
) -> Any:
    """The value a reference points at, or `UnresolvedReference` explaining why there is none."""
    label = reference.label
    if label not in outputs:
        raise _missing_label_error(reference, site, index)
    try:
        return walk_path(outputs[label], reference.path)
    except KeyError as exc:
        raise _error(site, reference, ReferenceProblem.MISSING_KEY, exc.args[0]) from None
    except IndexError as exc:
        raise _error(site, reference, ReferenceProblem.BAD_INDEX, exc.args[0]) from None
    except TypeError as exc:
        raise _error(site, reference, ReferenceProblem.NOT_A_CONTAINER, exc.args[0]) from None


def _missing_label_error(reference: Reference, site: CallSite, index: PathIndex | None) -> UnresolvedReference:
    label = reference.label
    if label == site.label:
        return _error(site, reference, ReferenceProblem.SELF)
    if index is None or label not in index.step_of:
        return _error(site, reference, ReferenceProblem.UNKNOWN_LABEL, f"no call is labelled {label!r}")
    label_step = index.step_of[label]
    if label_step > site.step_index:
        return _error(site, reference, ReferenceProblem.LATER_CALL, f"{label!r} runs in step {label_step + 1}")
    if label_step == site.step_index:
        return _error(site, reference, ReferenceProblem.SAME_STEP, f"{label!r} runs in the same step")
    return _error(site, reference, ReferenceProblem.NOT_EXECUTED, f"{label!r} has no output")


def _error(site: CallSite, reference: Reference, problem: ReferenceProblem, detail: str = "") -> UnresolvedReference:
    return UnresolvedReference(site.label, site.name, reference.text, problem, detail)


_PARSED: dict[str, Reference | None] = {}  # gold paths repeat the same few reference strings
_PARSED_LIMIT = 65_536


def _parse_cached(value: str) -> Reference | None:
    try:
        return _PARSED[value]
    except KeyError:
        reference = parse_reference(value)
        if len(_PARSED) < _PARSED_LIMIT:
            _PARSED[value] = reference
        return reference


def resolve_value(value: Any, outputs: Mapping[str, Any], site: CallSite, index: PathIndex | None = None) -> Any:
    """Resolve every reference inside an argument value, however deeply it sits in lists and dicts.

    A value holding no reference is returned as the same object (no copy), which keeps resolution
    of literal-heavy paths cheap.
    """
    if type(value) is str:
        if not value.startswith("$"):
            return value
        reference = _parse_cached(value)
    else:
        reference = None
    if reference is not None:
        return resolve_reference(reference, outputs, site, index)
    if isinstance(value, dict):
        resolved = {key: resolve_value(item, outputs, site, index) for key, item in value.items()}
        return value if all(resolved[key] is value[key] for key in value) else resolved
    if isinstance(value, list):
        items = [resolve_value(item, outputs, site, index) for item in value]
        return value if all(new is old for new, old in zip(items, value)) else items
    return value


def resolve_arguments(
    arguments: Mapping[str, Any],
    outputs: Mapping[str, Any],
    site: CallSite,
    index: PathIndex | None = None,
) -> Mapping[str, Any]:
    """The arguments with every reference replaced by the value it points at: a new dict when
    anything was resolved, the same mapping when it holds no reference (callers must not mutate)."""
    resolved: dict[str, Any] | None = None
    for name, value in arguments.items():
        kind = type(value)
        if kind is str:
            if not value.startswith("$"):
                continue
        elif kind is not dict and kind is not list:
            continue  # numbers, booleans, null: nothing to resolve (the common case, kept cheap)
        new = resolve_value(value, outputs, site, index)
        if new is not value:
            if resolved is None:
                resolved = dict(arguments)
            resolved[name] = new
    return arguments if resolved is None else resolved


def check_references(steps: Sequence[Sequence[Any]]) -> list[UnresolvedReference]:
    """Static check of a gold path (no execution): every reference must name a call of an
    earlier step. Returns one error per bad reference, in path order."""
    index = PathIndex.of_steps(steps)
    problems: list[UnresolvedReference] = []
    for step_index, step in enumerate(steps):
        for call in step:
            site = CallSite(call.label, call.name, step_index)
            for reference in iter_references(call.arguments):
                step_of_label = index.step_of.get(reference.label)
                if step_of_label is None or step_of_label >= step_index:
                    problems.append(_missing_label_error(reference, site, index))
    return problems
