"""The house's order (issue 41): every module under src/tokenmill imports only from its own room and the rooms
below it, no two modules import each other (directly or round a circle), and no private name (``_x``) is taken
from another module. Imports are read with ``ast``, function-level ones included, so a lazy import counts too.

Bottom to top (each room's ``__init__`` docstring says the same):

    root        errors, progress, config, the package's versions, the _kernels extension
    files/      atomic outputs, file identity, objects by URL, restricted pickles
    inputs/     JSONL, Parquet, the raw index, text selection
    tokenization/  tokenizers, engines, the proof
    formats/    pbin, sidecar, merge, .bin/.idx, datatrove, OLMo, provenance
    megatron/   index caches, blends, the job's tokenizer, hand-off, preprocess-data
    packing/    (to come) best-fit packing
    training/   torch-facing datasets, SFT readers, the loader
    pack/       the tokenize-and-write verbs
    verify/     every check `tokenmill verify` makes
    plan/       what the Snakemake side calls
    views/      inspect, report
    top         cli, __main__, and the deprecated old import paths

A private *module* (``tokenmill._kernels``, the C extension) may be imported; a private name inside a module
may not, from any other module.
"""

from __future__ import annotations

import ast
import functools
import shutil
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

BOTTOM = ("tokenmill", "tokenmill.errors", "tokenmill.progress", "tokenmill.config", "tokenmill._kernels")
ROOMS = ("files", "inputs", "tokenization", "formats", "megatron", "packing", "training", "pack", "verify", "plan",
         "views")
# The old import paths of the documented API: shims that alias the moved modules (tests/test_deprecated_paths.py).
DEPRECATED_ALIASES = ("tokenmill.datasets", "tokenmill.loader", "tokenmill.sft", "tokenmill.megatron_tokenizer")
TOP = ("tokenmill.cli", "tokenmill.__main__", *DEPRECATED_ALIASES)
EXTENSIONS = ("tokenmill._kernels",)


def rank(module: str) -> int:
    """The module's place in the order: 0 for the root's bottom, 1.. for the rooms, the highest for the top."""
    if module in BOTTOM:
        return 0
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ROOMS:
        return 1 + ROOMS.index(parts[1])
    if module in TOP:
        return 1 + len(ROOMS)
    raise AssertionError(f"{module}: in no room: add it to a room (or to the root's list in tests/test_layers.py)")


def modules_under(src: Path) -> dict[str, Path]:
    """Every module of the package under ``src``, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((src / "tokenmill").rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(module: str, path: Path, known: set[str]) -> list[tuple[int, str, str | None]]:
    """``(line, target module, name)`` for every import of a tokenmill module in ``path``, at any depth: ``name`` is
    the name taken from the target (None for a module imported as a whole)."""
    is_package = path.name == "__init__.py"
    found = []
    for node in _import_nodes(path.read_text(encoding="utf-8")):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names
                      if alias.name.split(".")[0] == "tokenmill"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] != "tokenmill":
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.append((node.lineno, submodule, None) if submodule in known
                             else (node.lineno, source, alias.name))
    return found


@functools.lru_cache(maxsize=None)
def _import_nodes(text: str) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """The import statements of a module's text, at any depth: parsed once per text (the planted checks below
    copy the whole package and parse it again)."""
    return tuple(node for node in ast.walk(ast.parse(text)) if isinstance(node, (ast.Import, ast.ImportFrom)))


def owner(target: str, known: set[str]) -> str:
    """The module that ``target`` names, or the package holding it."""
    while target not in known and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def problems_in(src: Path) -> list[str]:
    """Every upward import, import cycle and private name taken across modules in the package under ``src``."""
    modules = modules_under(src)
    known = set(modules) | set(EXTENSIONS)
    problems, graph = [], {module: set() for module in modules}
    for module, path in modules.items():
        where = path.relative_to(src)
        for line, target, name in imports_of(module, path, known):
            target = owner(target, known)
            if target == module:
                continue
            graph[module].add(target)
            if rank(target) > rank(module):
                problems.append(f"{where}:{line}: {module} imports {target}, a room above its own")
            if name and name.startswith("_") and not name.startswith("__"):
                problems.append(f"{where}:{line}: {module} takes the private name {name} from {target}")
    problems += [f"an import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (``a -> b -> a``) per strongly connected group of modules (Tarjan's algorithm)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_a_cycle_through(group, graph) for group in groups]


def _a_cycle_through(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A path from the group's first module back to itself, within the group."""
    start, members = group[0], set(group)
    paths, seen = {start: [start]}, {start}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        for other in sorted(graph[node] & members):
            if other == start:
                return paths[node] + [start]
            if other not in seen:
                seen.add(other)
                paths[other] = paths[node] + [other]
                frontier.append(other)
    return group


def test_every_module_imports_only_downward_without_cycles_or_private_names():
    assert problems_in(SRC) == []


def test_every_room_says_what_it_holds_and_may_import():
    for room in ROOMS:
        init = SRC / "tokenmill" / room / "__init__.py"
        if room == "packing" and not init.parent.exists():
            continue  # to come
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert docstring and "May import:" in docstring, f"{init}: no docstring saying what the room may import"


def test_at_most_eight_modules_sit_at_the_root():
    root = {path.stem for path in (SRC / "tokenmill").glob("*.py")}
    assert len(root - {name.split(".")[1] for name in DEPRECATED_ALIASES}) <= 8, sorted(root)


def test_the_readme_s_map_has_a_line_per_room_and_module():
    readme = (SRC.parent / "README.md").read_text(encoding="utf-8")
    tree = readme[readme.index("    src/tokenmill/ "):readme.index("    src/snakemake_logger_plugin_tokenmill/")]
    listed, room = set(), ""
    for line in tree.splitlines()[3:]:
        words = line.split()
        if line.startswith("      ") and not line.startswith("        ") and words and words[0].endswith("/"):
            room = words[0]
        elif line.startswith("        ") and words and words[0].endswith(".py") and room:
            listed.add(room + words[0])
        elif line.startswith("      ") and words and not line[6:7].isspace():
            room = ""
            for word in words:  # "cli.py, __main__.py  the tokenmill command": the names, then the comment
                listed.add(word.rstrip(","))
                if not word.endswith(","):
                    break
    modules = {str(path.relative_to(SRC / "tokenmill")) for path in (SRC / "tokenmill").rglob("*.py")
               if path.name != "__init__.py"} | {"_kernels.c"}
    assert modules - listed == set(), "modules missing from README.md's map"
    assert listed - modules == set(), "README.md's map names modules that are not there"


@pytest.fixture
def copy_of_src(tmp_path) -> Path:
    shutil.copytree(SRC / "tokenmill", tmp_path / "tokenmill", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _plant(src: Path, module: str, code: str) -> None:
    path = src / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + code + "\n", encoding="utf-8")


@pytest.mark.parametrize("module, code, expected", [
    # an upward import at function level (a lazy import counts)
    ("tokenmill.files.atomic", "def planted():\n    from tokenmill.views.report import dataset_page\n",
     "tokenmill.files.atomic imports tokenmill.views.report, a room above its own"),
    ("tokenmill.errors", "import tokenmill.cli\n", "tokenmill.errors imports tokenmill.cli, a room above its own"),
    # a private name taken from a module of the same room
    ("tokenmill.formats.merge", "from tokenmill.formats.pbin import _planted_name\n",
     "tokenmill.formats.merge takes the private name _planted_name from tokenmill.formats.pbin"),
    # two modules of one room that import each other
    ("tokenmill.formats.sidecar", "def planted():\n    from tokenmill.formats.pbin import PbinFile\n",
     "an import cycle: tokenmill.formats.pbin -> tokenmill.formats.sidecar -> tokenmill.formats.pbin"),
])
def test_a_planted_upward_import_private_name_or_cycle_fails_the_check(copy_of_src, module, code, expected):
    assert problems_in(copy_of_src) == []
    path = copy_of_src / (module.replace(".", "/") + ".py")
    planted_line = len(path.read_text(encoding="utf-8").splitlines()) + 2 + code.count("\n")
    _plant(copy_of_src, module, code)
    problems = problems_in(copy_of_src)
    assert problems and problems[0].endswith(expected), problems  # (an upward import is a cycle too)
    if not expected.startswith("an import cycle"):
        assert problems[0].startswith(f"{path.relative_to(copy_of_src)}:{planted_line}: "), problems


# Where a path's scheme may be asked (issue 53): tokenmill.files alone, where an input is resolved once into a
# Source whose attributes every other layer reads. cli.py is being split into a package (its calls move after).
SCHEME_ASKERS = ("files/",)
SCHEME_NOT_YET = ("cli.py",)
SCHEME_FUNCTIONS = {"is_url", "scheme_of"}
NOT_A_PATH = ('xmlns="http://www.w3.org/',)  # an XML namespace, not an input


def scheme_questions(src: Path) -> list[str]:
    """``file:line: what`` for each place outside tokenmill.files that asks a path for its scheme: a call of
    ``is_url`` or ``scheme_of`` (or an import of them), or a string holding ``://`` (``startswith("s3://")``,
    ``"://" in path``, a scheme list in a message or in a docstring's prose: the table says it once)."""
    found = []
    for path in sorted((src / "tokenmill").rglob("*.py")):
        relative = path.relative_to(src / "tokenmill").as_posix()
        if relative.startswith(SCHEME_ASKERS) or relative in SCHEME_NOT_YET:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            what = None
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                what = f"calls {name}()" if name in SCHEME_FUNCTIONS else None
            elif isinstance(node, ast.ImportFrom):
                imported = SCHEME_FUNCTIONS & {alias.name for alias in node.names}
                what = f"imports {', '.join(sorted(imported))}" if imported else None
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "://" in node.value \
                    and not any(spelling in node.value for spelling in NOT_A_PATH):
                what = f"spells a scheme: {node.value.strip()[:40]!r}"
            if what:
                found.append(f"src/tokenmill/{relative}:{node.lineno}: {what}")
    return found


def test_no_module_outside_files_asks_a_path_for_its_scheme():
    assert scheme_questions(SRC) == []


@pytest.mark.parametrize("code, expected", [
    ("from tokenmill.files.urls import is_url\n", "imports is_url"),
    ("def planted(path):\n    return is_url(path)\n", "calls is_url()"),
    ("def planted(path):\n    return path.startswith(('s3://', 'gs://'))\n", "spells a scheme: 's3://'"),
    ("def planted(path):\n    return '://' in path\n", "spells a scheme: '://'"),
    ('def planted(path):\n    """Reads s3:// and gs:// objects."""\n',
     "spells a scheme: 'Reads s3:// and gs:// objects.'"),
])
def test_a_planted_scheme_question_fails_the_check(copy_of_src, code, expected):
    _plant(copy_of_src, "tokenmill.verify.reencode", code)
    problems = scheme_questions(copy_of_src)
    assert problems and all(problem.startswith("src/tokenmill/verify/reencode.py:") for problem in problems) \
        and problems[0].endswith(expected), problems
