"""The dependency direction of DESIGN.md, read from the code: cli -> pipeline -> stages -> everything
shared below them. Nothing lower imports anything higher, stages do not import each other, and no
two modules import each other (directly or round a longer loop). Function-level imports count too:
a lazy import is still a dependency."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("fcbench", "generate", "annotate")
# One stage per entry; a stage may be a package (its modules share the entry).
STAGES = {
    "generate.stage1": "stage1",  # with its kind: conversation variant (generate.stage1.conversation)
    "generate.stage3": "stage3",
    "annotate.stage1": "stage1-review",  # the scenarios of a conversation pipeline reviewed before drafting
    "annotate.stage2": "stage2",
    "annotate.stage3": "stage3-annotators",
    "fcbench.filter": "filter",
    "fcbench.export": "export",
    "fcbench.report": "report",
    "fcbench.evaluate": "evaluate",
}


# a lazily imported target named as text: "generate.stage1.single:run"
_LAZY_TARGET = re.compile(r"^(fcbench|generate|annotate)(\.[a-z_0-9]+)+:[A-Za-z_0-9]+$")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The project module an imported name belongs to (`fcbench.llm.client.X` -> `fcbench.llm.client`)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {_owner(alias.name, modules) for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported |= {_owner(f"{node.module}.{alias.name}", modules) for alias in node.names}
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _LAZY_TARGET.match(node.value):
                # "module:function" (a stage's `run`): imported when the stage runs
                imported.add(_owner(node.value.replace(":", "."), modules))
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "register_lazy":
                # a registry's lazy entry ("fcbench.formats.nestful"): imported at first use; a
                # package listing its own modules is not a loop (they import the package's names)
                target = node.args[-1]
                if (isinstance(target, ast.Constant) and isinstance(target.value, str)
                        and not target.value.startswith(name + ".")):
                    imported.add(_owner(target.value.replace(":", "."), modules))
        graph[name] = {target for target in imported if target and target != name}
    return graph


def stage_of(module: str) -> str | None:
    return next((stage for prefix, stage in STAGES.items() if module == prefix or module.startswith(prefix + ".")), None)


def layer_of(module: str) -> int:
    if module == "fcbench.cli" or module.startswith("fcbench.cli."):
        return 3
    if module == "fcbench.pipeline" or module.startswith("fcbench.pipeline."):
        return 2
    return 1 if stage_of(module) else 0


def test_the_graph_sees_the_real_imports():
    graph = import_graph()
    assert "fcbench.llm.client" in graph["fcbench.evaluate.runner"]  # a module-level import
    assert "generate.stage1.single" in graph["fcbench.pipeline.run"]  # a function-level (lazy) import


def test_nothing_imports_upward_or_sideways_between_stages():
    problems = []
    for module, targets in import_graph().items():
        for target in targets:
            if layer_of(target) > layer_of(module):
                problems.append(f"{module} imports {target}, a higher layer")
            elif stage_of(module) and stage_of(target) and stage_of(module) != stage_of(target):
                problems.append(f"stage {stage_of(module)} ({module}) imports stage {stage_of(target)} ({target})")
    assert problems == []


def test_no_import_cycles():
    graph = import_graph()
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = lowlink[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                lowlink[node] = min(lowlink[node], lowlink[target])
            elif target in on_stack:
                lowlink[node] = min(lowlink[node], index[target])
        if lowlink[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert cycles == []
