"""The evaluation protocols: each paper's way of running models (`build-dataset evaluate PIPELINE
--protocol P`). One module per paper; `PROTOCOLS` is the only place that knows which exist.

| protocol | paper | pipelines | runs |
|---|---|---|---|
| `complexfuncbench` | ComplexFuncBench | single-turn (default) | ComplexEval: native tools, gold responses, greedy, 2,048 tokens |
| `nestful-icl` | NESTful | single-turn | k fixed in-context examples, a JSON call list in text |
| `nestful-react` | NESTful | single-turn, executable environment | a ReAct agent executing each call |
| `callnavi` | CallNavi | single-turn | N runs a question, stability, per difficulty |
| `confetti` | CONFETTI | `kind: conversation` (default) | teacher-forced per turn, both turn-level sets |
"""

from __future__ import annotations

from fcbench.config import PipelineConfig
from fcbench.errors import UserError
from fcbench.evaluate.protocols.common import Protocol, ProtocolOptions

# name -> "module:class", imported on use (a protocol's dependencies load only when it runs)
PROTOCOLS: dict[str, str] = {
    "complexfuncbench": "fcbench.evaluate.protocols.complexfuncbench:ComplexFuncBench",
    "nestful-icl": "fcbench.evaluate.protocols.nestful:NestfulICL",
    "nestful-react": "fcbench.evaluate.protocols.nestful:NestfulReAct",
    "callnavi": "fcbench.evaluate.protocols.callnavi:CallNavi",
    "confetti": "fcbench.evaluate.protocols.confetti:Confetti",
}
DEFAULT_FOR_KIND = {"single": "complexfuncbench", "conversation": "confetti"}


def default_protocol(pipeline: PipelineConfig) -> str:
    """ComplexFuncBench's for a single-turn pipeline, CONFETTI's for a conversational one."""
    return DEFAULT_FOR_KIND[pipeline.kind]


def protocol_for(name: str | None, pipeline: PipelineConfig, options: ProtocolOptions) -> Protocol:
    """The protocol named (default: the pipeline kind's), set up with this run's options."""
    import importlib

    chosen = name or default_protocol(pipeline)
    if chosen not in PROTOCOLS:
        raise UserError(f"unknown protocol {chosen!r}, available: {', '.join(PROTOCOLS)}")
    module, cls = PROTOCOLS[chosen].split(":")
    return getattr(importlib.import_module(module), cls)(options)


__all__ = ["DEFAULT_FOR_KIND", "PROTOCOLS", "Protocol", "ProtocolOptions", "default_protocol", "protocol_for"]
