"""Text from the samples in a Markdown document (the dataset card): always shown as literal text.

A domain, a model name, a prompt file, a tag an annotator typed or a format warning naming a tool
comes from the data, and a hostile or careless value must not become Markdown: a heading (`# x`
on a line of its own), a link or an image (`[x](u)`, `![x](u)`, a bare `www.x.com` that GitHub-
flavoured renderers link by themselves), HTML (`<script>`, `<img onerror>`), an entity (`&lt;`),
or a broken table (a `|` or a line break inside a cell). Such text goes into an inline code span:
inside one, CommonMark and GFM render every character as itself (no emphasis, links, autolinks,
images, entities or HTML). Line breaks become spaces (a code span cannot end a table row or start
a block), and a `|` is escaped by the table writer (GFM splits cells before it reads code spans).
"""

from __future__ import annotations

import re

# A value made only of letters, digits and inner `_ . -` (a domain, a model, a reason code) cannot
# start any Markdown construct, and reads better as it is; `www.`-led text is autolinked by GFM.
_PLAIN_WORD = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_ .\-]*[A-Za-z0-9])?\Z")
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\u2028\u2029\x0b\x0c\x85]")
_BACKTICKS = re.compile(r"`+")
EMPTY = "(empty)"


def literal(value: object) -> str:
    """`value` as an inline code span that renders as exactly its text (line breaks as spaces)."""
    text = _LINE_BREAKS.sub(" ", str(value)).replace("\x00", "\ufffd")
    if not text:
        return EMPTY
    # the fence is one backtick longer than the longest run inside, so no run inside closes it
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    # a span starting or ending with a backtick needs a space inside the fence; CommonMark strips
    # one space at each end when both ends have one, so a padded text keeps its own spaces
    padded = text[0] in "` " or text[-1] in "` "
    return f"{fence} {text} {fence}" if padded else f"{fence}{text}{fence}"


def table_cell(value: object) -> str:
    """A cell of a GFM table: its `|` escaped (what splits cells is read before code spans)."""
    return str(value).replace("|", "\\|")


def data_text(value: object) -> str:
    """A value from the data as the card shows it: a plain word (`hotels`, `gpt-4o-mini`,
    `format.unknown_tool`) as it is, anything else as a `literal` code span."""
    text = str(value)
    if _PLAIN_WORD.match(text) and not text.lower().startswith("www."):
        return text
    return literal(text)
