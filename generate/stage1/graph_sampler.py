"""Stage1 without an LLM: propose call paths by chaining tools whose outputs feed later inputs.

1. The feed graph (`build_feed_graph`, pure): a required parameter that no value pool fills is fed
   by an earlier tool's output field when their names match (`fromId` <- `data[].id`,
   `pick_up_place_id` <- `googlePlaceId`, `slug` <- `productSlug`) and their types agree. A
   parameter description that names tools ("from Search_Flight_Location") or an output path
   ("data.destinations[].id") narrows identifiers to those: an id only means something to the API
   that issued it. Parameters that share the words before the matched name ("pick up" latitude and
   longitude, a `dest_id` and its `search_type`) read the same entry of the same earlier call.
   Real APIs add two readings (OpenAPI imports): an output field whose name the parameter's
   description spells ("city/airport IATA code" <- `iataCode`), and a list parameter fed one id at
   a time (`hotelIds` <- `data[].hotelId`, written `["$var_1.data[0].hotelId$"]`). Output fields come
   from the `returns` schema and from the published example responses it carries (`examples`),
   nested objects and lists included, since a real answer may not follow its schema.
2. A plan (`plan_draft`): from a goal tool, backwards, a source call for each fed group, down to
   lookups whose arguments come from the value pools; the other arguments are drawn from the pools
   too (the same stay, party size... across the draft; places of one city, the trip city, except
   for the first leg of a journey, which may start elsewhere).
3. Execution (`execute_plan`): step by step against the environment, each fed argument written as
   a `$label.path$` reference. A lookup's first entry is the match for the name the user gave; an
   entry of a result list is picked by the seeded generator and named in the query ("the second
   flight"). Every response is kept on its call.
4. The query (`render_query`): one clause per call, lookups left implicit (their name appears
   where their result is used); the words are the query writer's (`generate.stage1.query_writer`:
   phrase templates, openers and joins), drawn from a generator of their own so the plan does not
   depend on them. A query the text lint (`fcbench.checks.query_text`) finds fault with, or that a
   phrase file says cannot be asked for ("-"), is no draft.

Tools whose outputs share names but not meanings (every MCP filesystem tool answers `content`) are
chained by what the dataset declares instead (`feeds.json` beside the tools, `load_declared_feeds`):
then only the declared feeds link tools. A declared feed may target a value inside a list argument
(`create_entities.entities[0].observations[0]`, `fcbench.argument_paths`): the list is then built
with one entry, whose required fields are filled like parameters. A parameter both a pool and a
declared feed can fill is fed in the goal call and in half of the others. The phrase file's
reference phrases (`write_file.content<read_text_file = the text of {path}`, the query writer's
`PhraseBook.references`) say what an argument reads in words, from the source's own arguments; a
source every reader names that way needs no clause of its own ("Save the text of docs/brief.md to
notes/copy.md" is two calls).
Everything random takes a `random.Random` seeded by the caller: the same seed gives the same drafts.
"""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from fcbench.argument_paths import argument_schema, is_argument_path, nest_arguments
from fcbench.checks.constraints import PickSpec, choose_pick, parse_path as parse_field_path
from fcbench.environments import Environment
from fcbench.checks.gold_audit import CARRIED_PARAMETERS, gold_audit
from fcbench.checks.grounding import ungrounded_values
from fcbench.checks.provenance import infer_provenance
from fcbench.checks.query_text import query_text_problems
from fcbench.references import format_reference
from fcbench.resolve import walk_path
from fcbench.sample import Call, Sample, Tool
from generate.slots import UNSAID_FIELD, WORDS_FIELD, Slot, SlotUse, ValuePools
from generate.stage1.query_writer import (ClauseRequest, PhraseBook, Unsayable, fill_phrase, placeholders, result_noun,
                                          say_literal, write_clause, write_query)

DEFAULT_PHRASES = Path(__file__).resolve().parents[1] / "prompts" / "graph_sampler_phrases.txt"
ORDINALS = ["first", "second", "third"]
NEAR_KINDS = frozenset({"landmark", "airport"})  # places one is near, not in
# nouns too vague for "that ...": "return it at that place" could be any place the query names
GENERIC_NOUNS = frozenset({"place", "result", "entry", "location"})
PICK_AMONG = len(ORDINALS)  # entries of a result list a draft may pick
OPTIONAL_CHANCE = 0.4  # an optional argument the pools can fill is set this often (a constraint)
FEED_OPTIONAL_CHANCE = 0.5  # a parameter a pool and a declared feed can fill is fed this often (below the goal)
MAX_OPTIONAL = 2  # constraints per call, so a clause stays readable
GENERAL_DOMAIN = "general"
# output names too generic to feed a parameter unless the source says what they identify
# One-word answer fields that name nothing by themselves: such a field feeds a longer parameter
# name only when its source says what it identifies (`_says_what_it_is`): an `account_sid` is not
# any `sid`, a `tx_hash` not any `hash`, an `offerId` not any `id`.
BARE_NAMES = frozenset({"id", "code", "sid", "uid", "uuid", "guid", "key", "hash", "ref", "slug", "number", "token",
                        "handle", "identifier"})
_BARE_WORDS = frozenset((name,) for name in BARE_NAMES)
_MENTIONED_PATH = re.compile(r"[A-Za-z_]\w*(?:\[\])?(?:\.[A-Za-z_]\w*(?:\[\])?)+")


class PlanFailed(Exception):
    """This attempt at a draft cannot be completed (no source, empty result, a call failed)."""


# ----------------------------------------------------------------------------- the feed graph
@dataclass(frozen=True)
class OutputField:
    path: tuple[str | None, ...]  # None: every entry of a list
    type: str | None

    @property
    def name(self) -> str:
        return next((part for part in reversed(self.path) if part is not None), "")

    def text(self) -> str:
        out = ""
        for part in self.path:
            out += "[]" if part is None else (f".{part}" if out else part)
        return out


def response_fields(returns: Any) -> list[OutputField]:
    """The leaves of a tool's answer: from its `returns` schema and from the example answers the
    schema carries (a leaf the schema does not know, or places differently, is added). Where the
    two disagree the examples' leaves come first: a real answer looks like its examples (`data` a
    list where the schema says an object), and a feed reads the first field that fits."""
    fields = output_fields(returns)
    examples = returns.get("examples") if isinstance(returns, dict) else None
    if not isinstance(examples, list) or not examples:
        return fields
    leaves: dict[tuple[str | None, ...], OutputField] = {}
    for example in examples:
        for leaf in example_fields(example):
            leaves.setdefault(leaf.path, leaf)
    in_both = [f if f.type is not None else leaves[f.path] for f in fields if f.path in leaves]  # an example knows the type
    known = {f.path for f in fields}
    return in_both + [leaf for path, leaf in leaves.items() if path not in known] + \
        [f for f in fields if f.path not in leaves]


def example_fields(value: Any, prefix: tuple[str | None, ...] = ()) -> list[OutputField]:
    """Every leaf of an example JSON value, with its path (list entries merged under `[]`)."""
    if isinstance(value, dict):
        return [leaf for key, sub in value.items() for leaf in example_fields(sub, prefix + (key,))]
    if isinstance(value, list):
        seen: dict[tuple[str | None, ...], OutputField] = {}
        for item in value:
            for leaf in example_fields(item, prefix + (None,)):
                seen.setdefault(leaf.path, leaf)
        return list(seen.values())
    if not prefix or value is None:
        return []
    kind = ("boolean" if isinstance(value, bool) else "integer" if isinstance(value, int)
            else "number" if isinstance(value, float) else "string")
    return [OutputField(prefix, kind)]


def output_fields(schema: Any, prefix: tuple[str | None, ...] = (), root: Any = None,
                  followed: frozenset[str] = frozenset()) -> list[OutputField]:
    """Every leaf of a `returns` JSON Schema, with its path. Local `$ref`s (`#/$defs/TimeResult`,
    as MCP servers write output schemas) are followed, each once per branch."""
    if not isinstance(schema, dict):
        return []
    root = schema if root is None else root
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/") and ref not in followed:
        target = _schema_pointer(root, ref)
        if target is not None:
            return output_fields(target, prefix, root, followed | {ref})
    kind = _first_type(schema.get("type"))
    if kind == "object" or "properties" in schema:
        return [leaf for name, sub in (schema.get("properties") or {}).items()
                for leaf in output_fields(sub, prefix + (name,), root, followed)]
    if kind == "array":
        return output_fields(schema.get("items"), prefix + (None,), root, followed)
    return [OutputField(prefix, kind)] if prefix else []


def _schema_pointer(root: Any, ref: str) -> Any:
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _first_type(kind: Any) -> str | None:
    if isinstance(kind, list):
        return next((k for k in kind if k != "null"), None)
    return kind


def name_words(name: str) -> list[str]:
    """'pick_up_place_id' and 'pickUpPlaceId' -> ['pick', 'up', 'place', 'id']."""
    return list(_name_words(name))


@functools.lru_cache(maxsize=65536)
def _name_words(name: str) -> tuple[str, ...]:
    # cached: the feed graph asks for the words of the same few thousand names millions of times
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ")
    return tuple(word.lower() for word in spaced.split())


def matched_prefix(parameter: str, output: str) -> tuple[str, ...] | None:
    """The words the parameter has before the part it shares with the output name, or None when
    they do not match. One name ending the other matches (`fromId`/`id`, `slug`/`productSlug`);
    otherwise they must share their last two words (`pick_up_place_id`/`googlePlaceId`)."""
    param_words, out_words = _name_words(parameter), _name_words(output)
    if not param_words or not out_words:
        return None
    common = 0
    while common < min(len(param_words), len(out_words)) and param_words[-1 - common] == out_words[-1 - common]:
        common += 1
    if common == len(out_words) or common == len(param_words) or common >= 2:
        return tuple(param_words[:-common])
    return None


def described_prefix(parameter: str, description: str, output: str) -> tuple[str, ...] | None:
    """When the parameter's description spells the output field's name (two words or more: "IATA
    code" for `iataCode`), the parameter's own words but its last (`originLocationCode` ->
    origin location, so an origin and a destination read two calls); else None. Markdown link
    targets are not read."""
    out_words = _name_words(output)
    if len(out_words) < 2:
        return None
    if out_words not in _description_spans(description, len(out_words)):
        return None
    return tuple(_name_words(parameter)[:-1])


@functools.lru_cache(maxsize=4096)
def _description_spans(description: str, span: int) -> frozenset[tuple[str, ...]]:
    """Every run of `span` words of a description (markdown link targets not read), computed once
    per description rather than once per output field it is compared with."""
    text = re.sub(r"\]\([^)]*\)", "]", description)
    words = tuple(word.lower() for word in re.findall(r"[A-Za-z0-9]+", text))
    return frozenset(words[i:i + span] for i in range(len(words) - span + 1))


def is_list_parameter(schema: Mapping[str, Any]) -> bool:
    """A list of scalars (ids): fed one value at a time by an output field of the item's type."""
    items = schema.get("items")
    return _first_type(schema.get("type")) == "array" and isinstance(items, dict) and \
        _first_type(items.get("type")) in ("string", "integer", "number")


def singular(name: str) -> str:
    """`hotelIds` -> `hotelId`, `offer_ids` -> `offer_id`: the name of one entry of a list parameter."""
    return name[:-1] if len(name) > 2 and name.endswith("s") and not name.endswith("ss") else name


def _stem(word: str) -> str:
    word = word.lower()
    if word.endswith("ies"):
        return word[:-3]
    if word.endswith("y"):
        return word[:-1]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def _says_what_it_is(words: tuple[str, ...], source: Tool, output: OutputField) -> bool:
    """Whether the words a parameter has beyond the output's name (`offer` in `offerId` <- `id`)
    appear in the output's path, the source tool's name or its endpoint (`/shopping/hotel-offers`),
    so a bare `id` feeds only the parameter that names what it identifies."""
    endpoint = source.meta.get("endpoint") or ((source.meta.get("openai") or {}).get("extra") or {}).get("http", {}).get("endpoint", "")
    seen = {_stem(w) for part in output.path if part for w in name_words(part)}
    seen |= {_stem(w) for w in name_words(source.name)}
    seen |= {_stem(w) for w in re.findall(r"[A-Za-z]+", str(endpoint))}
    return all(_stem(word) in seen for word in words)


def _reader_says_what_it_is(reader: Tool, parameter: str, output: OutputField) -> bool:
    """When the answer field's name is longer than the parameter's (`datum_hash` for `hash`), the
    words it has beyond the parameter's must appear in the reader's name or endpoint (`tx_hash`
    for the `hash` of `/txs/{hash}`): a bare parameter reads only the kind it names."""
    param_words, out_words = _name_words(parameter), _name_words(output.name)
    if len(out_words) <= len(param_words) or out_words[len(out_words) - len(param_words):] != param_words:
        return True
    seen = {_stem(w) for w in name_words(reader.name)} | {_stem(w) for w in re.findall(r"[A-Za-z]+", _endpoint(reader))}
    return all(_stem(word) in seen for word in out_words[:len(out_words) - len(param_words)])


def _endpoint(tool: Tool) -> str:
    return str(tool.meta.get("endpoint") or ((tool.meta.get("openai") or {}).get("extra") or {}).get("http", {}).get("endpoint", ""))


def _links_agree(reader: Tool, parameter: str, source: Tool, output: OutputField) -> bool:
    """For a path parameter (`/shopping/hotel-offers/{offerId}`): whether the source's entries are
    that resource. REST answers often link each entry to itself (`self`, `href`): a link must
    match the reader's endpoint, the identifier one path segment (a point of interest at
    `/locations/pois/ID` is not a location at `/locations/{locationId}`). Entries without links:
    the source's endpoint must name the resource's collection (`hotel-offers`, not
    `flight-offers`). Without an endpoint on either side nothing contradicts the feed."""
    endpoint = _endpoint(reader)
    placeholder = "{" + parameter + "}"
    if placeholder not in endpoint:
        return True
    template = re.escape(endpoint).replace(re.escape(placeholder), "[^/?#]+")
    links = _entry_links(source, output)
    if links:
        return any(re.search(template + r"(?:[?#].*)?$", link) for link in links)
    collection = [part for part in endpoint.split(placeholder)[0].split("/") if part]
    source_endpoint = _endpoint(source)
    if not collection or not source_endpoint or collection[-1] in source_endpoint.split("/"):
        return True
    # the field's own name says which resource it identifies: a `tx_hash` is a transaction's
    # (`/txs/{hash}`), a `stake_address` is what `/accounts/{stake_address}` reads
    out_words = _name_words(output.name)
    if (len(out_words) >= 2 and out_words == _name_words(parameter)) or \
            _stem(collection[-1]) in {_stem(word) for word in out_words[:-1]}:
        return True
    # the parameter itself may name the resource (`/weather/{cityId}` is keyed by a city): then
    # the source's own collection must be that resource (`/cities`), a whole segment, so an offer
    # id is still not fed by `/flight-offers` for `/hotel-offers/{offerId}`
    named = re.sub(r"_?(?:id|Id|ID|code|Code)$", "", parameter)
    source_collections = [part for part in source_endpoint.split("/") if part and "{" not in part]
    return bool(named) and bool(source_collections) and _stem(source_collections[-1]) == _stem(named)


def _entry_links(source: Tool, output: OutputField) -> list[str]:
    """The self links of the entries holding `output` in the source's example answers."""
    examples = source.returns.get("examples") if isinstance(source.returns, dict) else None
    entry_path = output.path[:-1]
    links: list[str] = []
    for example in examples if isinstance(examples, list) else []:
        for entry in _walk_all(example, entry_path):
            if isinstance(entry, dict):
                link = entry.get("self", entry.get("href"))
                link = link.get("href") if isinstance(link, dict) else link
                if isinstance(link, str):
                    links.append(link)
    return links


def _walk_all(value: Any, path: tuple[str | None, ...]) -> list[Any]:
    """Every value at `path` (None: each entry of a list; a list met where a key is expected is
    walked through, as example answers may not follow their schema)."""
    values = [value]
    for part in path:
        found = []
        for item in values:
            items = item if isinstance(item, list) and part is not None else [item]
            for sub in items:
                if part is None and isinstance(sub, list):
                    found.extend(sub)
                elif isinstance(sub, dict) and part in sub:
                    found.append(sub[part])
        values = found
    return values


def _types_agree(param_schema: Mapping[str, Any], field_type: str | None) -> bool:
    if is_list_parameter(param_schema):
        param_schema = param_schema["items"]
    kinds = param_schema.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    if None in kinds:
        return True
    if field_type is None:  # an answer field of no known type may be an object: it feeds no typed parameter
        return False
    if field_type in kinds:
        return True
    return field_type == "integer" and "number" in kinds


@dataclass(frozen=True)
class Feed:
    source: str
    output: OutputField
    preferred: bool  # the parameter's description names the source tool


@dataclass(frozen=True)
class FedGroup:
    """Parameters of one call read from the same entry of the same earlier call."""

    words: tuple[str, ...]
    parameters: tuple[str, ...]
    feeds: Mapping[str, list[Feed]]  # parameter -> its possible feeds
    optional: bool = False  # a value pool can fill it too (declared feeds): fed in goals, else now and then

    def sources(self) -> list[str]:
        """Tools that can feed every parameter of the group, in catalog order."""
        per_parameter = [[feed.source for feed in self.feeds[p]] for p in self.parameters]
        return [tool for tool in dict.fromkeys(per_parameter[0]) if all(tool in other for other in per_parameter[1:])]

    def preferred(self, source: str) -> bool:
        return any(feed.preferred for p in self.parameters for feed in self.feeds[p] if feed.source == source)

    def fields_from(self, source: str) -> dict[str, OutputField]:
        return {p: next(feed.output for feed in self.feeds[p] if feed.source == source) for p in self.parameters}


@dataclass(frozen=True)
class Leaf:
    """One value a call needs: a required parameter, or a required field of the one entry a list
    argument gets when the dataset names a path into it (`entities[0].name`)."""

    name: str
    schema: Mapping[str, Any]


def parameter_leaves(tool: Tool, named: set[str] | frozenset[str] = frozenset()) -> list[Leaf]:
    """The values a call of `tool` needs, in the order its schema requires them. A required list
    is opened into its first entry only where `named` (paths the pools or declared feeds give)
    reaches into it; otherwise it is one value, as before."""
    properties = tool.parameters.get("properties") or {}
    return [leaf for name in tool.parameters.get("required") or []
            for leaf in _leaves(name, properties.get(name) or {}, named)]


def _leaves(path: str, schema: Mapping[str, Any], named: set[str] | frozenset[str]) -> list[Leaf]:
    entry = f"{path}[0]"
    items = schema.get("items")
    if _first_type(schema.get("type")) == "array" and isinstance(items, dict) and \
            any(name == entry or name.startswith((entry + ".", entry + "[")) for name in named):
        if _first_type(items.get("type")) == "object" or "properties" in items:
            fields = items.get("properties") or {}
            return [leaf for field_name in items.get("required") or []
                    for leaf in _leaves(f"{entry}.{field_name}", fields.get(field_name) or {}, named)]
        return [Leaf(entry, items)]
    return [Leaf(path, schema)]


def leaf_schema(tool: Tool, name: str) -> Mapping[str, Any]:
    """The schema of a parameter, or of the value at an argument path."""
    return argument_schema(tool.parameters, name)


@dataclass(frozen=True)
class FeedGraph:
    tools: dict[str, Tool]
    groups: dict[str, list[FedGroup]]  # tool -> the groups of its fed parameters
    unfillable: dict[str, list[str]]  # tool -> required parameters nothing fills
    leaves: dict[str, list[Leaf]] = field(default_factory=dict)  # tool -> the values a call needs
    chains: dict[str, int] = field(default_factory=dict, compare=False, repr=False)  # `chain_lengths`, once

    def leaves_of(self, tool: str) -> list[Leaf]:
        return self.leaves.get(tool) or parameter_leaves(self.tools[tool])

    def plannable(self, tool: str) -> bool:
        return not self.unfillable.get(tool)

    def goals(self, plannable_only: bool = True) -> list[str]:
        """Tools worth ending a path with: they read an earlier output (and, for the offline
        sampler, every argument of their chain can be filled)."""
        return [name for name in self.tools if self.groups.get(name) and (self.plannable(name) or not plannable_only)]


def tool_domain(tool: Tool) -> str:
    """The domain a catalog gives a tool (OpenAI-style extra key `domain`), else "general"."""
    extra = tool.meta.get("openai", {}).get("extra", {}) if isinstance(tool.meta.get("openai"), dict) else {}
    domain = extra.get("domain") if isinstance(extra, dict) else None
    return str(domain or tool.meta.get("domain") or GENERAL_DOMAIN)


@dataclass(frozen=True)
class _Candidate:
    position: tuple[int, int]  # (the source's place in the catalog, the field's place in its answer)
    source: str
    output: OutputField


@dataclass(frozen=True)
class OutputIndex:
    """Every output field of a catalog, found by the words of its name: a parameter is compared only
    with the fields that can match it (same last word, or a name its description spells), not with
    every field of every tool (which took minutes on a few hundred tools)."""

    by_last_word: Mapping[str, list[_Candidate]]
    by_words: Mapping[tuple[str, ...], list[_Candidate]]
    spans: frozenset[int]  # the word counts of names in `by_words`
    known_paths: frozenset[str]
    tool_names: tuple[str, ...]

    @classmethod
    def of(cls, catalog: Sequence[Tool], fields_of: Mapping[str, list[OutputField]]) -> "OutputIndex":
        by_last_word: dict[str, list[_Candidate]] = {}
        by_words: dict[tuple[str, ...], list[_Candidate]] = {}
        for tool_position, tool in enumerate(catalog):
            for field_position, output in enumerate(fields_of[tool.name]):
                words = _name_words(output.name)
                if not words:
                    continue
                candidate = _Candidate((tool_position, field_position), tool.name, output)
                by_last_word.setdefault(words[-1], []).append(candidate)
                if len(words) >= 2:
                    by_words.setdefault(words, []).append(candidate)
        known = frozenset(f.text() for fields in fields_of.values() for f in fields)
        return cls(by_last_word, by_words, frozenset(len(w) for w in by_words), known, tuple(t.name for t in catalog))

    def candidates(self, parameter: str, description: str) -> list[_Candidate]:
        """The fields that may feed `parameter`, in catalog order."""
        words = _name_words(parameter)
        found = {c.position: c for c in self.by_last_word.get(words[-1], [])} if words else {}
        if description:
            for span in self.spans:
                for run in _description_spans(description, span):
                    for candidate in self.by_words.get(run, []):
                        found.setdefault(candidate.position, candidate)
        return [found[position] for position in sorted(found)]


def _feeds_for(tool: Tool, parameter: str, schema: Mapping[str, Any], catalog: Sequence[Tool],
               fields_of: Mapping[str, list[OutputField]], index: OutputIndex | None = None) -> dict[tuple[str, ...], list[Feed]]:
    """Possible feeds of one parameter, keyed by the words before the matched name."""
    index = index or OutputIndex.of(catalog, fields_of)
    tools = {other.name: other for other in catalog}
    description = str(schema.get("description", ""))
    named = {name for name in index.tool_names if name != tool.name and name in description
             and re.search(rf"\b{re.escape(name)}\b", description)}
    mentioned = set(_MENTIONED_PATH.findall(description)) & index.known_paths
    identifier = _first_type(schema.get("type")) in ("string", "integer")
    fed_name = singular(parameter) if is_list_parameter(schema) else parameter
    found: dict[tuple[str, ...], list[Feed]] = {}
    for candidate in index.candidates(fed_name, description):
        other, output = tools[candidate.source], candidate.output
        if other.name == tool.name or (identifier and named and other.name not in named):
            continue
        if _echoes_input(other, output):
            continue
        if mentioned and output.text() not in mentioned:
            continue
        words = matched_prefix(fed_name, output.name)
        if words and not named and _name_words(output.name) in _BARE_WORDS and not _says_what_it_is(words, other, output):
            words = None  # an `offerId` is not any bare `id`, a `startLocationCode` not a vehicle's `code`
        if words is not None and not _reader_says_what_it_is(tool, fed_name, output):
            words = None  # a bare `hash` parameter of /txs/{hash} reads a `tx_hash`, not a `datum_hash`
        if words is None:
            words = described_prefix(parameter, description, output.name)
        if words is None or not _types_agree(schema, output.type) or not _links_agree(tool, parameter, other, output):
            continue
        found.setdefault(words, []).append(Feed(other.name, output, other.name in named))
    return found


def _echoes_input(source: Tool, output: OutputField) -> bool:
    """A field outside any list whose last path parts spell one of the source's own parameters
    restates what the source was given (Search_Hotels_By_Coordinates' `search_center.latitude`,
    Search_Car_Rentals' `route_info.pick_up.latitude` for `pick_up_latitude`, which the mock even
    moves to the city centre): a call reading it takes the value the long way round, where a model
    takes it from the value's own source."""
    if None in output.path or len(output.path) < 2:
        return False
    properties = source.parameters.get("properties") if isinstance(source.parameters, dict) else None
    if not isinstance(properties, dict):
        return False
    parts = [str(part) for part in output.path]
    # the last path parts together spell a parameter: `latitude`, `pick_up` + `latitude`; never a
    # part's own tail (`booking_token` is its own value, not the `token` it was asked with)
    tails = {tuple(word for part in parts[-size:] for word in _name_words(part)) for size in range(1, len(parts))}
    return any(_name_words(name) in tails for name in properties)


def build_feed_graph(catalog: Sequence[Tool], pools: ValuePools, declared: "DeclaredFeeds | None" = None,
                     progress: Callable[[], None] | None = None) -> FeedGraph:
    """`progress` is called once per tool linked (stage1 shows it on a large catalog)."""
    fields_of = {tool.name: response_fields(tool.returns) for tool in catalog}
    index = OutputIndex.of(catalog, fields_of)
    groups: dict[str, list[FedGroup]] = {}
    unfillable: dict[str, list[str]] = {}
    leaves: dict[str, list[Leaf]] = {}
    for tool in catalog:
        if progress is not None:
            progress()
        covered = pools.covered_arguments(tool.name)
        named = covered | (declared.targets(tool.name) if declared is not None else set())
        leaves[tool.name] = parameter_leaves(tool, named)
        if declared is not None:  # only what the dataset declares links tools
            groups[tool.name] = []
            for leaf in leaves[tool.name]:
                feeds = declared.feeds_to(tool.name, leaf.name)
                if feeds:
                    group = FedGroup((leaf.name,), (leaf.name,), {leaf.name: feeds}, optional=leaf.name in covered)
                    groups[tool.name].append(group)
                elif leaf.name not in covered and _fallback_literal(leaf.schema, random.Random(0)) is None:
                    unfillable.setdefault(tool.name, []).append(leaf.name)
            continue
        by_words: dict[tuple[str, ...], dict[str, list[Feed]]] = {}
        for leaf in leaves[tool.name]:
            parameter, schema = leaf.name, leaf.schema
            if parameter in covered:
                continue
            options = _feeds_for(tool, parameter, schema, catalog, fields_of, index)
            if not options:
                if _fallback_literal(schema, random.Random(0)) is None:
                    unfillable.setdefault(tool.name, []).append(parameter)
                continue
            words = max(options, key=lambda key: (len(options[key]), key))  # the reading most sources agree on
            by_words.setdefault(words, {})[parameter] = options[words]
        groups[tool.name] = [FedGroup(words, tuple(feeds), feeds) for words, feeds in by_words.items()]
        groups[tool.name] = [group for group in groups[tool.name] if group.sources()]
    return FeedGraph({tool.name: tool for tool in catalog}, groups, unfillable, leaves)


class DeclaredFeedsError(ValueError):
    """A feeds file that names a tool, parameter or output field the catalog does not have."""


@dataclass(frozen=True)
class DeclaredFeeds:
    """`feeds.json`: which output field may feed which parameter (or value inside a list
    argument). `{"feeds": [{"to": "write_file.content", "from": ["read_text_file.content",
    "convert_time.target.datetime"]}]}`; an output path writes `[]` for an entry of a list."""

    feeds: Mapping[tuple[str, str], list[Feed]]  # (tool, parameter or path) -> its feeds

    def targets(self, tool: str) -> set[str]:
        return {name for owner, name in self.feeds if owner == tool}

    def feeds_to(self, tool: str, name: str) -> list[Feed]:
        return list(self.feeds.get((tool, name), []))


def declared_feeds_from_dict(data: Any, catalog: Sequence[Tool], source: str = "feeds") -> DeclaredFeeds:
    tools = {tool.name: tool for tool in catalog}
    if not isinstance(data, dict) or not isinstance(data.get("feeds"), list):
        raise DeclaredFeedsError(f"{source}: expected an object with a 'feeds' list")
    fields_of: dict[str, dict[str, OutputField]] = {}
    feeds: dict[tuple[str, str], list[Feed]] = {}
    for index, entry in enumerate(data["feeds"]):
        where = f"{source}: feeds[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("to"), str) or \
                not isinstance(entry.get("from"), list) or not entry["from"]:
            raise DeclaredFeedsError(f"{where}: expected {{\"to\": \"TOOL.parameter\", \"from\": [\"TOOL.output.path\", ...]}}")
        tool_name, _, target = entry["to"].partition(".")
        if tool_name not in tools or not target:
            raise DeclaredFeedsError(f"{where}: {entry['to']!r} names no tool of the catalog")
        schema = leaf_schema(tools[tool_name], target)
        if not schema:
            raise DeclaredFeedsError(f"{where}: {tool_name} has no parameter {target!r}")
        for text in entry["from"]:
            source_name, _, path = str(text).partition(".")
            if source_name not in tools or source_name == tool_name:
                raise DeclaredFeedsError(f"{where}: {text!r} names no other tool of the catalog")
            known = fields_of.setdefault(source_name, {f.text(): f for f in response_fields(tools[source_name].returns)})
            output = known.get(path)
            if output is None:
                raise DeclaredFeedsError(f"{where}: {source_name} declares no output {path!r} "
                                         f"(its outputs: {', '.join(sorted(known)) or 'none'})")
            if not _types_agree(schema, output.type):
                raise DeclaredFeedsError(f"{where}: {text} is {output.type}, {entry['to']} takes {schema.get('type')}")
            feeds.setdefault((tool_name, target), []).append(Feed(source_name, output, False))
    return DeclaredFeeds(feeds)


def load_declared_feeds(path: Path, catalog: Sequence[Tool]) -> DeclaredFeeds | None:
    """The dataset's feeds file, or None when it has none (tools are then linked by name)."""
    import json

    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DeclaredFeedsError(f"{path}: not valid JSON ({exc})") from None
    return declared_feeds_from_dict(data, catalog, str(path))


def _fallback_literal(schema: Mapping[str, Any], rng: random.Random) -> Any:
    """A value for a required parameter no pool and no output fills: only enums and numbers can be
    invented safely (a made-up string would be an unknown id)."""
    if schema.get("enum"):
        return rng.choice(schema["enum"])
    kind = _first_type(schema.get("type"))
    if kind == "integer":
        return rng.randint(2, 20)
    if kind == "number":
        return float(rng.randint(2, 20))
    return None


# ---------------------------------------------------------------------------------- the plan
@dataclass
class FedArguments:
    source: int  # index of the source node
    fields: dict[str, OutputField]


@dataclass
class PlanNode:
    tool: str
    goal: int
    literals: dict[str, Any] = field(default_factory=dict)
    optional: list[str] = field(default_factory=list)  # literal arguments that are constraints
    fed: list[FedArguments] = field(default_factory=list)
    depth: int = 0
    subject: str | None = None  # a lookup: the name the user gave
    label: str = ""
    # per source node: the entry of its result list this call read (for "the second flight"), or the
    # constraint that picks it ("the cheapest flight leaving before 10 am"); a call reading two
    # lists (a car from one hotel to another) says each its own way
    picked: dict[int, int] = field(default_factory=dict)
    pick_text: dict[int, str] = field(default_factory=dict)
    journey: bool | None = None  # a call of two places: whether the first one is in the home city
    subject_kind: str | None = None  # a lookup: the value pool slot its name came from (city, landmark...)
    kinds: dict[str, str] = field(default_factory=dict)  # literal place argument -> its slot (for phrasings)
    words: dict[str, str] = field(default_factory=dict)  # literal argument -> the pool's words for its value
    said_as: str | None = None  # how the query named what this call is about ("the second attraction")
    said_kind: str | None = None  # the kind of place that was, when it is one (a landmark...)
    position: int | None = None  # where its clause is in the query (None: a lookup, left implicit)
    # the source nodes of which it reads the first entry of a nested list that has several (a
    # room's first rate): the query must say so ("the first rate of the second room")
    first_of_several: set[int] = field(default_factory=set)


@dataclass
class DraftContext:
    """What one draft attempt shares across its calls."""

    graph: FeedGraph
    pools: ValuePools
    phrases: PhraseBook
    rng: random.Random
    allowed: set[str]  # tools the draft may call
    preferred_domains: set[str]  # sources from these domains go first
    trip_city: str | None
    home_city: str | None
    # tool -> whether its first place is in the home city (a flight) or not (a taxi ride); learnt
    # from earlier drafts that executed, drawn at random for a tool not seen yet
    journeys: Mapping[str, bool] = field(default_factory=dict)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)  # slot -> the draft's value
    # tool -> how an entry of its results may be picked by a constraint (fcbench.checks.constraints)
    picks: Mapping[str, PickSpec] = field(default_factory=dict)
    pick_records: list[dict[str, Any]] = field(default_factory=list)  # the draft's picks (meta.picks)
    used_places: set[str] = field(default_factory=set)
    nodes: list[PlanNode] = field(default_factory=list)
    describing: set[int] = field(default_factory=set)  # lists whose @where phrase is being written


def place_groups(pools: ValuePools) -> list[str]:
    return sorted({g for slot in pools.slots.values() for value in slot.values if (g := slot.group_of(value))})


def _slot_value(ctx: DraftContext, slot: Slot, city: str | None, goal: int = 0) -> dict[str, Any]:
    if not slot.is_place and not slot.distinct:
        if slot.per_goal:  # one value per request of the draft, another than the other requests' when it can
            key = f"{slot.name}#{goal}"
            if key not in ctx.values:
                used = [value for name, value in ctx.values.items() if name.split("#")[0] == slot.name]
                options = [value for value in slot.values if value not in used] or slot.values
                ctx.values[key] = options[ctx.rng.randrange(len(options))]
            return ctx.values[key]
        if slot.name not in ctx.values:
            ctx.values[slot.name] = slot.values[ctx.rng.randrange(len(slot.values))]
        return ctx.values[slot.name]
    fresh = [v for v in slot.values if _place_key(slot, v) not in ctx.used_places]
    local = [v for v in fresh if slot.group_of(v) == city]
    options = local or fresh or slot.values
    value = options[ctx.rng.randrange(len(options))]
    ctx.used_places.add(_place_key(slot, value))
    return value


def _place_key(slot: Slot, value: Mapping[str, Any]) -> str:
    return f"{slot.name}:{sorted(value.items())}"


def _allowed_sources(ctx: DraftContext, group: FedGroup, ancestors: set[str]) -> list[str]:
    return [s for s in group.sources() if s in ctx.allowed and s not in ancestors and ctx.graph.plannable(s)]


def _choose_source(ctx: DraftContext, tool: str, group: FedGroup, ancestors: set[str]) -> str:
    sources = _allowed_sources(ctx, group, ancestors)
    if not sources:
        raise PlanFailed(f"no allowed tool feeds {tool}.{'/'.join(group.parameters)}")
    own_domain = tool_domain(ctx.graph.tools[tool])
    preferred = [s for s in sources if group.preferred(s)]
    across = [s for s in sources if tool_domain(ctx.graph.tools[s]) in ctx.preferred_domains - {own_domain}]
    in_domain = [s for s in sources if tool_domain(ctx.graph.tools[s]) == own_domain]
    # named sources first; a cross-domain draft also lets another of its domains feed the call
    options = sorted(set(preferred) | set(across), key=sources.index) if preferred or across else (in_domain or sources)
    # when a look-up of the reader's own domain can feed it, no other look-up does (a cross-domain
    # draft's other domains included): a model makes the natural call, and is not scored on another
    # that happens to give the same coordinates (Location_to_Lat_Long or Search_Hotel_Destination
    # for hotels near a place, not the car look-up; Search_Car_Location for a rental car, not the
    # taxis' look-up). A search's own results (a hotel's coordinates for a car picked up there)
    # stay free to feed it. Options with no such look-up are left as they were (the same draws).
    natural = [s for s in sources if _is_lookup(s) and tool_domain(ctx.graph.tools[s]) == own_domain
               and not _of_another_family(ctx.graph.tools, s, tool)]
    if natural:
        # nor does one thing's details (an attraction's location for a car dropped off there: the
        # user names the place, and the car's look-up is the call its description asks for); an
        # entry of a search's results (the cheapest hotel) has no name to look up, and stays
        kept = [s for s in options if s in natural or (not _is_lookup(s) and _reads_an_entry(group, s))]
        if len(kept) < len(options):
            options = kept if any(_is_lookup(s) for s in kept) else sorted(set(kept) | set(natural), key=sources.index)
    # of two look-ups left, the one of the reader's own family (Search_Hotel_Destination for hotels)
    if all(_is_lookup(s) for s in options):
        options = [s for s in options if _family_words(s) & _family_words(tool)] or options
    return options[ctx.rng.randrange(len(options))]


def _reads_an_entry(group: FedGroup, source: str) -> bool:
    """The group reads an entry of a list in the source's answer (not a field of one object)."""
    return all(None in field.path for field in group.fields_from(source).values())


def _is_lookup(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in ("location", "destination", "lat_long"))


def _of_another_family(tools: Mapping[str, Tool], lookup: str, reader: str) -> bool:
    """The look-up serves another family of tools than the reader's: its words are another
    tool's and not the reader's (Taxi_Search_Location, like Search_Taxi, for Search_Car_Rentals)."""
    family = _family_words(lookup)
    return not family & _family_words(reader) and any(
        family & _family_words(name) for name in tools if name not in (lookup, reader) and not _is_lookup(name))


_NOT_FAMILY = {"search", "get", "list", "find", "location", "details", "by", "coordinates", "destination"}


def _family_words(name: str) -> set[str]:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ").lower().split()
    return {word.rstrip("s") for word in words if word not in _NOT_FAMILY and len(word) > 2}


def plan_call(ctx: DraftContext, tool: str, city: str | None, goal: int, ancestors: frozenset[str] = frozenset()) -> int:
    """Plan a call of `tool` and, first, the calls feeding it; returns its node index."""
    groups = ctx.graph.groups.get(tool, [])
    fed: list[FedArguments] = []
    journey = None
    if len(groups) > 1:
        journey = ctx.journeys[tool] if tool in ctx.journeys else ctx.rng.random() < 0.5
    for position, group in enumerate(groups):
        if group.optional:
            # a goal reads what it was chosen to read (when the draft offers a source); a source may
            # take a pool's value instead
            if not _allowed_sources(ctx, group, set(ancestors) | {tool}) or \
                    (ancestors and ctx.rng.random() >= FEED_OPTIONAL_CHANCE):
                continue
        source = _choose_source(ctx, tool, group, set(ancestors) | {tool})
        source_city = ctx.home_city if journey and position == 0 else city
        index = plan_call(ctx, source, source_city, goal, ancestors | {tool})
        fed.append(FedArguments(index, group.fields_from(source)))
    node = PlanNode(tool, goal, fed=fed, journey=journey)
    node.depth = 1 + max((ctx.nodes[f.source].depth for f in fed), default=-1)
    _choose_literals(ctx, node, city)
    twin = next((index for index, other in enumerate(ctx.nodes) if not fed and not other.fed
                 and other.tool == tool and other.literals == node.literals), None)
    if twin is not None:
        return twin  # the same search asked twice is one call: both readers read it
    ctx.nodes.append(node)
    return len(ctx.nodes) - 1


def _choose_literals(ctx: DraftContext, node: PlanNode, city: str | None) -> None:
    fed = {p for f in node.fed for p in f.fields}
    uses = [(slot, use) for slot, use in ctx.pools.uses_for(node.tool) if not set(use.arguments) & fed]
    place_values: list[tuple[Slot, SlotUse, dict[str, Any]]] = []
    leaves = ctx.graph.leaves_of(node.tool)
    schema_of = {leaf.name: leaf.schema for leaf in leaves}
    required = [leaf.name for leaf in leaves]
    for parameter in required:
        if parameter in fed or parameter in node.literals:
            continue
        options = [(s, u) for s, u in uses if parameter in u.arguments and not set(u.arguments) & set(node.literals)]
        if not options:
            value = _fallback_literal(schema_of.get(parameter) or {}, ctx.rng)
            if value is None:
                raise PlanFailed(f"nothing fills {node.tool}.{parameter}")
            node.literals[parameter] = value
            continue
        # a slot the draft already uses goes first: the flight leaves on the first day of the hotel stay
        options = [(s, u) for s, u in options if s.name in ctx.values] or options
        slot, use = options[ctx.rng.randrange(len(options))]
        value = _slot_value(ctx, slot, city, node.goal)
        if value.get(UNSAID_FIELD):
            raise PlanFailed(f"{node.tool}.{parameter} would hold {slot.name} value no query says")
        node.literals.update({arg: value[f] for arg, f in use.arguments.items()})
        _remember_how_said(node, slot, use, value)
        # an optional argument set along with a required one (a stay's return date) is said too
        node.optional.extend(arg for arg in use.arguments if arg not in required)
        if slot.is_place:
            place_values.append((slot, use, value))
    if not node.fed and len(place_values) == 1 and len(node.literals) == len(place_values[0][1].arguments):
        slot, use, value = place_values[0]
        node.subject = str(value[next(iter(use.arguments.values()))])  # a lookup of a name the user gives
        node.subject_kind = slot.name
        return
    for slot, use in uses:
        if len(node.optional) >= MAX_OPTIONAL or set(use.arguments) & set(node.literals):
            continue
        if ctx.rng.random() >= OPTIONAL_CHANCE:
            continue
        value = _slot_value(ctx, slot, city, node.goal)
        if value.get(UNSAID_FIELD):
            continue  # an API code no query says: not a constraint a user states
        candidate = {arg: value[f] for arg, f in use.arguments.items()}
        words = {arg: str(value[WORDS_FIELD]) for arg in candidate if WORDS_FIELD in value and len(candidate) == 1}
        if ctx.phrases.states_constraint(ctx.graph.tools[node.tool], candidate, words):
            node.literals.update(candidate)
            node.optional.extend(candidate)
            _remember_how_said(node, slot, use, value)
    _carry_what_was_asked(ctx, node, uses)


def _carry_what_was_asked(ctx: DraftContext, node: PlanNode, uses: list[tuple[Slot, SlotUse]]) -> None:
    """A constraint the user stated for the things a call reads (hotels "with prices in Singapore
    dollars") holds for what is asked of them next (their rooms): when the reader takes the same
    argument and sets none of its own, it takes the value and says it again, as it says the stay and
    the party again. Left to the API's default, the rooms' prices would be in another currency than
    the user asked for, and a model carrying the currency over would be scored wrong."""
    for fed in node.fed:
        source = ctx.nodes[fed.source]
        for slot, use in uses:
            arguments = set(use.arguments)
            if arguments & set(node.literals) or not arguments <= set(source.optional):
                continue
            wanted = {argument: source.literals[argument] for argument in use.arguments}
            value = next((v for v in slot.values if {a: v.get(f) for a, f in use.arguments.items()} == wanted), None)
            if value is None or value.get(UNSAID_FIELD):
                continue
            words = {a: str(value[WORDS_FIELD]) for a in wanted if WORDS_FIELD in value and len(wanted) == 1}
            if ctx.phrases.states_constraint(ctx.graph.tools[node.tool], wanted, words):
                node.literals.update(wanted)
                node.optional.extend(wanted)
                _remember_how_said(node, slot, use, value)


def _remember_how_said(node: PlanNode, slot: Slot, use: SlotUse, value: Mapping[str, Any]) -> None:
    """What the query writer needs of a pool value: the kind of place it is (a phrasing may depend
    on it: hotels *near* a landmark, *in* a city) and the words for an enum value ("business class")."""
    for argument in use.arguments:
        if slot.is_place:
            node.kinds[argument] = slot.name
        if WORDS_FIELD in value and len(use.arguments) == 1:
            node.words[argument] = str(value[WORDS_FIELD])


# ---------------------------------------------------------------------------------- execution
def _first_list(path: tuple[str | None, ...]) -> int | None:
    return next((i for i, part in enumerate(path) if part is None), None)


def _concrete(path: tuple[str | None, ...], index: int) -> tuple[str | int, ...]:
    """The field path with its first list marker at `index` and any deeper one at 0."""
    out: list[str | int] = []
    first = True
    for part in path:
        if part is None:
            out.append(index if first else 0)
            first = False
        else:
            out.append(part)
    return tuple(out)


def _resolve_group(ctx: DraftContext, node: PlanNode, group: FedArguments,
                   outputs: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    source = ctx.nodes[group.source]
    response = outputs[source.label]
    first_path = next(iter(group.fields.values())).path
    cut = _first_list(first_path)
    index = 0
    if cut is not None:
        try:
            entries = walk_path(response, tuple(p for p in first_path[:cut] if p is not None))
        except (LookupError, TypeError):
            raise PlanFailed(f"{source.tool} gave no {'.'.join(str(p) for p in first_path[:cut])}") from None
        if not isinstance(entries, list) or not entries:
            raise PlanFailed(f"{source.tool} gave an empty list for {node.tool}")
        # a lookup's first entry is the match for the name the user gave; otherwise an entry a
        # constraint singles out ("the cheapest hotel rated above 8", when the dataset has pick
        # rules for the tool), or one of the first few
        index = 0 if source.subject is not None else ctx.rng.randrange(min(PICK_AMONG, len(entries)))
        spec = ctx.picks.get(source.tool) if source.subject is None else None
        pick = None
        if spec is not None and parse_field_path(spec.list_path) == tuple(p for p in first_path[:cut] if p is not None):
            pick = choose_pick(entries, spec, ctx.rng)
        if pick is not None:
            index = pick.index
            node.pick_text[group.source] = pick.text
            ctx.pick_records.append({"reader": node.label, "source": source.label, **pick.record})
        if source.subject is None:
            node.picked[group.source] = index
    references, values = {}, {}
    if _first_of_several(response, _concrete(first_path, index)):
        node.first_of_several.add(group.source)
    for parameter, output in group.fields.items():
        path = _concrete(output.path, index)
        try:
            values[parameter] = walk_path(response, path)
        except (LookupError, TypeError):
            raise PlanFailed(f"{source.tool} response has no {output.text()}") from None
        references[parameter] = format_reference(source.label, path)
        schema = leaf_schema(ctx.graph.tools[node.tool], parameter)
        if is_list_parameter(schema):  # one id for a list of ids
            references[parameter], values[parameter] = [references[parameter]], [values[parameter]]
    return references, values


def _first_of_several(response: Any, path: tuple[str | int, ...]) -> bool:
    """Whether a list below the first one on the path (read at its entry 0) has more entries."""
    seen_list = False
    for depth, part in enumerate(path):
        if isinstance(part, int):
            if seen_list:
                try:
                    entries = walk_path(response, path[:depth])
                except (LookupError, TypeError):
                    return False
                if isinstance(entries, list) and len(entries) > 1:
                    return True
            seen_list = True
    return False


def assign_labels(nodes: list[PlanNode]) -> list[list[PlanNode]]:
    """Steps of the path: calls of equal depth run together; labels var_1, var_2... in path order."""
    order = sorted(range(len(nodes)), key=lambda i: (nodes[i].depth, nodes[i].goal, i))
    for number, index in enumerate(order, start=1):
        nodes[index].label = f"var_{number}"
    steps: dict[int, list[PlanNode]] = {}
    for index in order:
        steps.setdefault(nodes[index].depth, []).append(nodes[index])
    return [steps[depth] for depth in sorted(steps)]


def execute_plan(ctx: DraftContext, environment: Environment) -> list[list[Call]]:
    """Run the plan step by step; the calls with reference arguments and real responses."""
    outputs: dict[str, Any] = {}
    path: list[list[Call]] = []
    for step in assign_labels(ctx.nodes):
        written, sent = [], []
        for node in step:
            arguments, resolved = dict(node.literals), dict(node.literals)
            for group in node.fed:
                references, values = _resolve_group(ctx, node, group, outputs)
                arguments.update(references)
                resolved.update(values)
            written.append(_arguments_of(ctx.graph, node.tool, arguments))
            sent.append((node.tool, _arguments_of(ctx.graph, node.tool, resolved)))
        outcomes = environment.call_step(sent)
        calls = []
        for node, arguments, outcome in zip(step, written, outcomes):
            if not outcome.ok:
                raise PlanFailed(f"{node.tool}: {outcome.reason.value if outcome.reason else 'error'}: {outcome.error}")
            outputs[node.label] = outcome.response
            calls.append(Call(label=node.label, name=node.tool, arguments=arguments, response=outcome.response))
        path.append(calls)
    return path


def _ordered(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments in the order the tool declares them (stable output, readable drafts)."""
    order = list((tool.parameters.get("properties") or {}).keys())
    return dict(sorted(arguments.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order)))


def _arguments_of(graph: FeedGraph, tool: str, values: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments from its values by parameter or path (`entities[0].name`): paths are
    nested into the list arguments they fill, in the order the schema requires them."""
    if not any(is_argument_path(name) for name in values):
        return _ordered(graph.tools[tool], values)
    order = [leaf.name for leaf in graph.leaves_of(tool)]
    ranked = sorted(values.items(), key=lambda item: order.index(item[0]) if item[0] in order else len(order))
    return _ordered(graph.tools[tool], nest_arguments(dict(ranked)))


# ------------------------------------------------------------------------------------ the query
def render_query(ctx: DraftContext, rng: random.Random) -> str:
    """One clause per call the user asks for (lookups left implicit: their name appears where their
    result is used), chains of one goal joined, the goals' chains as separate wishes; the words
    are the query writer's (`generate.stage1.query_writer`), every choice from `rng`."""
    consumed = {f.source for node in ctx.nodes for f in node.fed}
    spoken = _named_by_readers(ctx)
    chains: dict[int, list[PlanNode]] = {}
    for index in sorted(range(len(ctx.nodes)), key=lambda i: (ctx.nodes[i].depth, i)):
        node = ctx.nodes[index]
        if index in consumed and (node.subject is not None or index in spoken):
            continue  # a lookup: the user names the place where its result is used
        chains.setdefault(node.goal, []).append(node)
    ordered = [chains[goal] for goal in sorted(chains)]  # a call's sources are of its own goal's chain
    for position, node in enumerate(node for chain in ordered for node in chain):
        node.position = position  # the order of the clauses in the text
    return write_query([[write_clause(_clause_request(ctx, node), ctx.phrases, rng) for node in chain]
                        for chain in ordered], rng)


def _named_by_readers(ctx: DraftContext) -> set[int]:
    """Calls whose every reader names them by a reference phrase that states all their arguments
    ("the text of {path}"): their own clause would say the same again."""
    readers: dict[int, list[tuple[PlanNode, str]]] = {}
    for node in ctx.nodes:
        for group in node.fed:
            readers.setdefault(group.source, []).extend((node, parameter) for parameter in group.fields)
    spoken = set()
    for index, uses in readers.items():
        source = ctx.nodes[index]
        arguments = set(source.literals) | {p for group in source.fed for p in group.fields}
        phrases = [ctx.phrases.references.get((reader.tool, parameter, source.tool)) for reader, parameter in uses]
        if all(phrase is not None and arguments <= set(placeholders(phrase)) for phrase in phrases):
            spoken.add(index)
    return spoken


def _clause_request(ctx: DraftContext, node: PlanNode) -> ClauseRequest:
    fed_from = {p: ctx.nodes[f.source] for f in node.fed for p in f.fields}

    def refer(parameter: str, extra: list[str]) -> str | None:
        if parameter not in fed_from:
            return None
        text, kind = _say_reference(ctx, fed_from[parameter], node, extra, parameter)
        if node.said_as is None:  # the first thing it reads is what the call is about
            node.said_as, node.said_kind = text, kind
        return text

    def kind_of(parameter: str, extra: list[str]) -> str | None:
        return _say_reference(ctx, fed_from[parameter], node, extra, parameter)[1] if parameter in fed_from else None

    # the kind of place each argument names, for the phrasings' conditions (a lookup's slot: a
    # reference to a place said by name)
    kinds = dict(node.kinds)
    kinds.update({p: kind for p, source in fed_from.items()
                  if (kind := _say_reference(ctx, source, node, ["place"], p)[1])})
    return ClauseRequest(ctx.graph.tools[node.tool], dict(node.literals), list(node.optional), refer=refer, kinds=kinds,
                         words=dict(node.words), kind_of=kind_of)


def _where(ctx: DraftContext, node: PlanNode) -> str | None:
    template = ctx.phrases.wheres.get(node.tool)
    if not template or id(node) in ctx.describing:
        return None  # (a list described by a list it describes: say its order instead)
    ctx.describing.add(id(node))
    try:
        return fill_phrase(template, _clause_request(ctx, node))
    finally:
        ctx.describing.discard(id(node))


def _say_reference(ctx: DraftContext, source: PlanNode, reader: PlanNode, extra: list[str],
                   parameter: str = "") -> tuple[str, str | None]:
    """How the user names what an argument reads, and what kind of thing it is (a place's value
    pool slot, else the result noun of the tool it comes from: "hotel"; a phrasing may depend on
    it): the place they gave; "the second hotel" or the constraint that
    picks the entry of a result list; for a single result, "that flight" when it is the clause
    just before (never "that place": which place?), else what named it ("the second attraction",
    "Hyde Park"). An ordinal or a
    constraint over a list says which list when the query asks for two of that kind. A dataset's
    reference phrase for the argument (`write_file.content<read_text_file = the text of {path}`)
    comes first: said from the source's own arguments, `{nth}` the entry the reader picked."""
    phrase = ctx.phrases.references.get((reader.tool, parameter, source.tool))
    if phrase is not None:
        request = _clause_request(ctx, source)

        def say_source(name: str, parts: list[str]) -> str:
            if name == "nth":
                return ORDINALS[reader.picked] if reader.picked is not None else ORDINALS[0]
            reference = request.refer(name, parts)
            if reference is not None:
                return reference
            return say_literal(request.tool, name, request.literals.get(name), parts, request.words.get(name))

        return fill_phrase(phrase, request, say_source), ctx.phrases.nouns.get(source.tool)
    if source.subject is not None:
        return source.subject, source.subject_kind
    noun = ctx.phrases.nouns.get(source.tool) or (extra[0] if extra else result_noun(ctx.graph.tools[source.tool]))
    position = ctx.nodes.index(source)
    if position in reader.pick_text or position in reader.picked:
        text = reader.pick_text.get(position) or f"the {ORDINALS[reader.picked[position]]} {noun}"
        text += _which_list(ctx, source, noun)
        if position in reader.first_of_several and extra and extra[0] != noun:
            text = f"the first {extra[0]} of {text}"  # the room's first rate: which rate
        return text, noun
    said = extra[0] if extra else noun
    if said not in GENERIC_NOUNS and source.position is not None and reader.position is not None \
            and source.position == reader.position - 1:
        return f"that {said}", noun  # "that flight": the one just asked about
    if source.said_as is not None:
        return source.said_as, source.said_kind
    named = [ctx.nodes[group.source] for group in source.fed]
    if len(named) == 1 and named[0].subject is not None:
        return named[0].subject, named[0].subject_kind
    return f"that {said}", noun


def _which_list(ctx: DraftContext, source: PlanNode, noun: str) -> str:
    """"" when the query asks for one list of `noun`s; else which one: the tool's `@where` phrase
    ("in MAD"), the place it was searched at ("near Orchard", "from Paris to Rome"), or its order
    among them ("of the second search")."""
    lists = [node for node in ctx.nodes if node.position is not None
             and (ctx.phrases.nouns.get(node.tool) or "") == noun]
    if len(lists) < 2:
        return ""
    wheres = [_where(ctx, node) for node in lists]
    where = wheres[lists.index(source)] if source in lists else None
    if where and wheres.count(where) == 1:
        return f" {where}"
    places = [(ctx.nodes[group.source].subject, ctx.nodes[group.source].subject_kind) for group in source.fed
              if ctx.nodes[group.source].subject is not None]
    if len(places) == 1:
        name, kind = places[0]
        return f" {'near' if kind in NEAR_KINDS else 'in'} {name}"
    if len(places) == 2:
        return f" from {places[0][0]} to {places[1][0]}"
    order = sorted(node.position for node in lists if node.position is not None)
    return f" of the {ORDINALS[min(order.index(source.position), len(ORDINALS) - 1)]} search"


# ------------------------------------------------------------------------------ one draft
@dataclass(frozen=True)
class DraftRequest:
    """What stage1 asks the sampler for: the goals (one per domain of the draft), the tools it
    may call, the seed of this attempt and what earlier drafts taught about two-place calls."""

    goals: tuple[str, ...]
    allowed: frozenset[str]
    domains: frozenset[str]
    seed: str
    max_steps: int
    journeys: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class ProposedDraft:
    query: str
    calls: list[list[Call]]
    slot_values: dict[str, Any]
    journeys: dict[str, bool]  # what this draft's two-place calls did (they executed)
    picks: list[dict[str, Any]] = field(default_factory=list)  # constraints that picked entries (meta.picks)


def propose_draft(request: DraftRequest, graph: FeedGraph, pools: ValuePools, phrases: PhraseBook,
                  environment: Environment, tools: Sequence[Tool],
                  picks: Mapping[str, PickSpec] | None = None, *, one_request: bool = True) -> ProposedDraft:
    """Plan, execute and phrase one draft; `PlanFailed` says why this attempt did not work.
    `one_request`: the draft is one user request (a single-turn sample): the party is carried along
    its chains and it must pass the gold audit. A conversation's plan (the simulator) is said turn by
    turn instead, and checked per turn (fcbench.checks.turns)."""
    rng = random.Random(request.seed)
    cities = place_groups(pools)
    trip, home = (rng.sample(cities, 2) if len(cities) >= 2 else (cities[0], cities[0]) if cities else (None, None))
    ctx = DraftContext(graph, pools, phrases, rng, set(request.allowed), set(request.domains), trip, home,
                       journeys=request.journeys, picks=picks or {})
    for goal_index, goal in enumerate(request.goals):
        plan_call(ctx, goal, trip, goal_index)
    if max(node.depth for node in ctx.nodes) + 1 > request.max_steps:
        raise PlanFailed(f"the path needs more than max_steps={request.max_steps} steps")
    if one_request:
        carry_party(ctx)
    calls = execute_plan(ctx, environment)
    try:  # the words are drawn apart from the plan: the same plan whatever the phrasings
        query = render_query(ctx, random.Random(f"{request.seed}:phrasing"))
    except Unsayable as exc:
        raise PlanFailed(str(exc)) from None
    problems = query_text_problems(query, tools)
    if problems:  # the phrase file wrote a glitch: never a draft
        raise PlanFailed(f"the query reads wrong: {problems[0].describe()}")
    probe = Sample(id="probe", messages=[{"role": "user", "content": query}], tools=list(tools), calls=calls,
                   meta={"picks": ctx.pick_records})
    ungrounded = ungrounded_values(probe)
    if ungrounded:
        raise PlanFailed(f"the query does not state {ungrounded[0].describe()}")
    # a draft must mean what it says: its values tied to the query's words, every entry it reads
    # chosen by the query, the party carried, no call the query does not ask for
    if one_request:
        inferred = infer_provenance(probe)
        if inferred.ungrounded:
            raise PlanFailed(f"the query does not say {inferred.ungrounded[0].describe()}")
        problems = gold_audit(probe, inferred.provenance)
        if problems:
            raise PlanFailed(f"{problems[0].reason}: {problems[0].detail}")
    journeys = {node.tool: node.journey for node in ctx.nodes if node.journey is not None}
    return ProposedDraft(query, calls, dict(sorted(ctx.values.items())), journeys, ctx.pick_records)


def carry_party(ctx: DraftContext) -> None:
    """A party size (adults...) set on one call of a chain is every chained call's that takes it:
    the rooms of a hotel found for four are rooms for four (said once, where it was drawn). Two
    parties in one chain make no draft."""
    neighbours: dict[int, set[int]] = {index: set() for index in range(len(ctx.nodes))}
    for index, node in enumerate(ctx.nodes):
        for group in node.fed:
            neighbours[index].add(group.source)
            neighbours[group.source].add(index)
    seen: set[int] = set()
    for start in range(len(ctx.nodes)):
        if start in seen:
            continue
        chain, todo = set(), [start]
        while todo:
            index = todo.pop()
            if index not in chain:
                chain.add(index)
                todo.extend(neighbours[index] - chain)
        seen |= chain
        for name in CARRIED_PARAMETERS:
            values = {repr(ctx.nodes[i].literals[name]): ctx.nodes[i].literals[name] for i in chain
                      if name in ctx.nodes[i].literals}
            if len(values) > 1:
                raise PlanFailed(f"one chain of calls for two parties ({name}: {sorted(values)})")
            if values:
                value = next(iter(values.values()))
                for index in sorted(chain):
                    node = ctx.nodes[index]
                    if name not in node.literals and name in (ctx.graph.tools[node.tool].parameters.get("properties") or {}):
                        node.literals[name] = value
                        # said in this call's clause too, as its dates are: a party said only for the
                        # rooms would leave the search's party to a guess
                        if node.subject is None:
                            node.optional.append(name)


# --------------------------------------------------------------------------- tool subsets
@dataclass(frozen=True)
class ToolSubset:
    """The tools offered for one draft, and the goals the offline sampler aims at."""

    tools: tuple[str, ...]  # catalog order
    goals: tuple[str, ...]
    domains: tuple[str, ...]
    cross_domain: bool
    difficulty: str | None = None  # CallNavi level the draft must have (generate.stage1.quotas), if any
    needed: tuple[str, ...] = ()  # the goals and the sources they need (the rest are distractors)


def cross_domain_flags(count: int, ratio: float, seed: int) -> list[bool]:
    """Exactly round(count * ratio) cross-domain drafts, at seeded positions."""
    crossing = round(count * ratio)
    flags = [index < crossing for index in range(count)]
    random.Random(f"{seed}:cross-domain").shuffle(flags)
    return flags


def sample_tool_subset(index: int, cross: bool, graph: FeedGraph, sizes: Sequence[int], seed: int,
                       plannable_only: bool = True, chain_bias: float = 2.0) -> ToolSubset:
    """Pick the domain(s) and goal tool(s) of draft `index`, then offer the tools the goals need
    plus others of the same domain(s) up to the sampled size (distractors, as in ComplexFuncBench).
    An LLM drafts from any subset: without `plannable_only`, a catalog whose tools feed nothing
    still gives subsets (random tools of a domain)."""
    rng = random.Random(f"{seed}:subset:{index}")
    domain_of = {name: tool_domain(tool) for name, tool in graph.tools.items()}
    goals_by_domain: dict[str, list[str]] = {}
    for goal in graph.goals(plannable_only):
        goals_by_domain.setdefault(domain_of[goal], []).append(goal)
    if not goals_by_domain:
        if plannable_only:
            raise PlanFailed("no tool of the catalog reads another tool's output: nothing to chain (a value pool "
                             "filling an argument keeps it from being read from an earlier answer: `build-dataset "
                             "stage1 NAME` prints which slots of value_pools.json do)")
        goals_by_domain = {domain: [] for domain in dict.fromkeys(domain_of.values())}
    domains = list(goals_by_domain)
    picked = rng.sample(domains, 2) if cross and len(domains) >= 2 else [rng.choice(domains)]
    # longer chains are what the benchmark is about: a goal weighs its chain length to the power
    # `chain_bias` (stage1.chain_bias, 2 by default: the square)
    goals = tuple(rng.choices(goals_by_domain[domain], [chain_length(graph, g) ** chain_bias for g in goals_by_domain[domain]])[0]
                  for domain in picked if goals_by_domain[domain])
    size = rng.choice(list(sizes))
    allowed = {name for name, domain in domain_of.items() if domain in picked}
    needed: set[str] = set()
    for goal in goals:
        tools_needed(graph, goal, allowed, rng, needed)
    others = sorted(allowed - needed, key=list(graph.tools).index)
    extra = rng.sample(others, max(0, min(len(others), size - len(needed))))
    # a distractor that can stand in for a needed tool would give the query a second right path
    # ("hotels near X" by the destination search or by the coordinates search, each picking its own
    # "cheapest hotel"): it is dropped, not replaced, so the other draws stay what they were
    offered = needed | (set(extra) - _rivals(graph, needed))
    return ToolSubset(tuple(name for name in graph.tools if name in offered), goals, tuple(picked), cross and len(picked) > 1,
                      needed=tuple(name for name in graph.tools if name in needed))


def _rivals(graph: FeedGraph, needed: set[str]) -> set[str]:
    """Tools that are not needed but could stand in for a needed one: another source of a group a
    needed reader takes from a needed tool (Search_Hotels_By_Coordinates beside Search_Hotels for
    Get_Room_List's hotel_id), and another source of an id a needed tool gives to a reader outside
    the draft (the two hotel searches when the draft ends at one of them). Coordinates, which many
    tools give, make no rivals on their own: only one-parameter groups (an id) do."""
    rivals: set[str] = set()
    for reader, groups in graph.groups.items():
        for group in groups:
            sources = set(group.sources())
            if sources & needed and (reader in needed or len(group.parameters) == 1):
                rivals |= sources - needed
    return rivals


def _feedable(graph: FeedGraph, tool: str, allowed: set[str], ancestors: frozenset[str]) -> bool:
    """Every group the tool must read from has a source outside the chain that calls it."""
    return all(group.optional or any(s in allowed and s not in ancestors and s != tool for s in group.sources())
               for group in graph.groups.get(tool, []))


def tools_needed(graph: FeedGraph, tool: str, allowed: set[str], rng: random.Random,
                 needed: set[str] | None = None) -> set[str]:
    """The tools a path ending at `tool` needs (the tool, one source per fed group, recursively),
    added to `needed` (the tools of the draft's other goals) and returned. One route to each thing:
    a group takes a source the draft already needs when it can, and otherwise avoids a rival of
    one (a second hotel search beside the first would let the query be answered two ways)."""
    needed = set() if needed is None else needed
    _add_closure(graph, tool, allowed, rng, frozenset(), needed)
    return needed


def _add_closure(graph: FeedGraph, tool: str, allowed: set[str], rng: random.Random,
                 ancestors: frozenset[str], needed: set[str]) -> None:
    needed.add(tool)
    for group in graph.groups.get(tool, []):
        sources = [s for s in group.sources() if s in allowed and s not in ancestors | {tool}]
        # a source that could only read this call's own chain (getOfferPricing, whose offer comes from
        # getMultiHotelOffers, as the source of getMultiHotelOffers' hotel ids) plans nothing
        sources = [s for s in sources if _feedable(graph, s, allowed, ancestors | {tool})] or sources
        preferred = [s for s in sources if group.preferred(s)] or sources
        if not preferred:
            continue
        already = [s for s in preferred if s in needed]
        if already:
            source = already[0]
        else:
            # rivals of the draft's other tools: this call's own chain does not rival itself
            rivals = _rivals(graph, needed - ancestors - {tool})
            pool = [s for s in preferred if s not in rivals] or preferred
            source = pool[rng.randrange(len(pool))]
        _add_closure(graph, source, allowed, rng, ancestors | {tool}, needed)


EXACT_CHAIN_STEPS = 200_000  # walk steps the exact longest-chain search may take before the linear estimate is used


def chain_length(graph: FeedGraph, tool: str) -> int:
    """Calls on the longest chain of sources ending at `tool` (sources of its own domain), each
    tool at most once on a chain. Computed for the whole graph once (`chain_lengths`)."""
    return chain_lengths(graph)[tool]


def chain_lengths(graph: FeedGraph) -> dict[str, int]:
    """Every tool's chain length, computed once per graph and kept on it. The longest simple path
    is NP-hard: walking every path (as stage1 did per draft) ran 11 minutes on 197 tools without
    finishing. So the exact walk runs under a budget of `EXACT_CHAIN_STEPS` steps for the whole
    graph (the bundled catalogs take a few thousand); past it, one depth-first walk with memory,
    linear in the edges, gives every length (a source met again on the walk's own stack closes a
    cycle and adds nothing, so a figure can be below the longest simple path). Either way the
    result depends only on the graph: the same on every run."""
    if not graph.chains:
        domain = {name: tool_domain(tool) for name, tool in graph.tools.items()}
        sources = {tool: list(dict.fromkeys(source for group in graph.groups.get(tool, []) for source in group.sources()
                                            if source != tool and domain.get(source) == domain[tool]))
                   for tool in graph.tools}
        try:
            graph.chains.update(_exact_chain_lengths(sources))
        except _OverBudget:
            graph.chains.update(_estimated_chain_lengths(sources))
    return graph.chains


class _OverBudget(Exception):
    pass


def _exact_chain_lengths(sources: Mapping[str, list[str]]) -> dict[str, int]:
    steps = 0

    def longest(tool: str, seen: frozenset[str]) -> int:
        nonlocal steps
        steps += 1
        if steps > EXACT_CHAIN_STEPS:
            raise _OverBudget
        best = 0
        for source in sources[tool]:
            if source not in seen:
                best = max(best, longest(source, seen | {tool}))
        return 1 + best

    return {tool: longest(tool, frozenset()) for tool in sources}


def _estimated_chain_lengths(sources: Mapping[str, list[str]]) -> dict[str, int]:
    lengths: dict[str, int] = {}
    for root in sources:
        if root in lengths:
            continue
        # iterative: a deep catalog must not hit Python's recursion limit
        stack: list[tuple[str, list[str]]] = [(root, list(sources[root]))]
        on_stack, best = {root}, {root: 0}
        while stack:
            tool, pending = stack[-1]
            if pending:
                source = pending.pop(0)
                if source in lengths:
                    best[tool] = max(best[tool], lengths[source])
                elif source not in on_stack:
                    on_stack.add(source)
                    best[source] = 0
                    stack.append((source, list(sources[source])))
                continue
            stack.pop()
            on_stack.discard(tool)
            lengths[tool] = 1 + best[tool]
            if stack:
                best[stack[-1][0]] = max(best[stack[-1][0]], lengths[tool])
    return lengths


_IDENTIFIER_NAME = re.compile(r"(?:^|_|[a-z0-9])(?:id|Id|ID|ids|Ids|IDs|sid|Sid|hash|Hash|key|Key|code|Code)$")
ADVICE_SHOWN = 5  # tools named per piece of advice (the count says how many more)


def pool_advice(graph: FeedGraph, pools: ValuePools, pools_file: str) -> list[str]:
    """What keeps the offline sampler from chaining, said in terms of the value pools a user edits:
    an identifier a slot fills from the description's examples is never read from an earlier answer
    (the chain stops there), and a required argument no slot fills and no answer holds keeps its
    tool off every path."""
    advice: list[str] = []
    catalog = list(graph.tools.values())
    fields_of = {tool.name: response_fields(tool.returns) for tool in catalog}
    index = OutputIndex.of(catalog, fields_of)
    blocked: dict[str, list[str]] = {}  # slot -> "tool.parameter (answered by ...)"
    for tool in catalog:
        properties = tool.parameters.get("properties") or {}
        for parameter in sorted(pools.covered_arguments(tool.name) & set(tool.parameters.get("required") or [])):
            if not _IDENTIFIER_NAME.search(parameter):
                continue
            options = _feeds_for(tool, parameter, properties.get(parameter) or {}, catalog, fields_of, index)
            producers = sorted({feed.source for feeds in options.values() for feed in feeds})
            if producers:
                slot = next((slot.name for slot, use in pools.uses_for(tool.name) if parameter in use.arguments), parameter)
                blocked.setdefault(slot, []).append(f"{tool.name}.{parameter} (answered by {', '.join(producers[:2])}"
                                                    f"{' and others' if len(producers) > 2 else ''})")
    for slot, uses in sorted(blocked.items()):
        advice.append(f"slot {slot!r} of {pools_file} fills {len(uses)} identifier argument(s) from the description's "
                      f"examples, so they never read an earlier answer and the chain stops there: "
                      f"{'; '.join(uses[:ADVICE_SHOWN])}{' ...' if len(uses) > ADVICE_SHOWN else ''}. "
                      f"Remove those tools from the slot's `used_by` to chain them")
    unfillable = sorted(graph.unfillable.items())
    if unfillable:
        named = "; ".join(f"{tool} needs {', '.join(parameters)}" for tool, parameters in unfillable[:ADVICE_SHOWN])
        advice.append(f"{len(unfillable)} tool(s) can be on no path: an argument they require has no slot in "
                      f"{pools_file} and no tool answers it ({named}{' ...' if len(unfillable) > ADVICE_SHOWN else ''}). "
                      f"Add a slot with values for it (`slots: {{NAME: {{values: [...], used_by: [{{tool: ..., "
                      f"arguments: {{NAME: value}}}}]}}}}`)")
    return advice
