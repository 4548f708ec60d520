"""Writing the stages' output files: atomic, and fast for samples that share a tool catalog.

Gold samples pulled from one project share their tools (the catalog's `Tool` objects, restored by
hash), which are most of each line (tens of KB of JSON Schema). `sample_lines` serialises each
distinct tool list once and splices the text into every line that uses it; the lines are what
`fcbench.sample.sample_to_dict` + `fcbench.jsonl.dumps_line` give, with `tools` as the last key.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from fcbench.jsonl import dumps_line, write_text_lines as write_lines  # noqa: F401 - the stages' writer
from fcbench.sample import Sample, path_shape


def sample_lines(samples: Iterable[Sample]) -> Iterator[str]:
    tools_text: dict[tuple[int, ...], tuple[list[object], str]] = {}
    for sample in samples:
        key = tuple(id(tool) for tool in sample.tools)
        cached = tools_text.get(key)
        if cached is None:
            # the entry holds the tools, so the ids in its key stay theirs while the cache lives
            cached = (list(sample.tools), dumps_line([tool.model_dump(mode="json", exclude_unset=True)
                                                      for tool in sample.tools]))
            tools_text[key] = cached
        body = sample.model_dump(mode="json", exclude_unset=True, exclude={"tools"})
        body["difficulty"] = path_shape(sample).difficulty.value
        yield dumps_line(body)[:-1] + ', "tools": ' + cached[1] + "}"
