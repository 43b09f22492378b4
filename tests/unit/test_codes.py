"""The finding-code registry: every code the package reports is registered, used by constant, documented in a
fresh docs/codes.md, and its example is a message the code's own call site (or the error corpus) produces."""

from __future__ import annotations

import ast
import re
from collections import defaultdict

from helpers import ERRORS_DIR, REPO

from clusterforge import codes
from clusterforge.codes_doc import codes_markdown

PACKAGE = REPO / "clusterforge"
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "codes.py")


def _constant_uses() -> dict[str, list[ast.Call]]:
    """Constant name -> the calls that pass `codes.<name>` as an argument."""
    uses: dict[str, list[ast.Call]] = defaultdict(list)
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "codes":
                uses.setdefault(node.attr, [])
            if isinstance(node, ast.Call):
                for arg in node.args:
                    if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id == "codes":
                        uses[arg.attr].append(node)
    return uses


def _pattern(node: ast.expr) -> str | None:
    """A regex for the strings an f-string expression can produce (placeholders match anything)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.escape(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(_pattern(v) or ".*" for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return ".+"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _pattern(node.left), _pattern(node.right)
        return None if left is None and right is None else f"{left or '.*'}{right or '.*'}"
    if isinstance(node, ast.IfExp):
        return ".*"
    return None


def _message_patterns(calls: list[ast.Call]) -> list[str]:
    """The first string argument of each call is its message (the hint, if any, comes later)."""
    patterns = []
    for call in calls:
        for arg in call.args:
            pattern = _pattern(arg)
            if pattern is not None and pattern != ".*":
                patterns.append(pattern)
                break
    return patterns


CONSTANTS = {
    name: value
    for name, value in vars(codes).items()
    if name.isupper() and isinstance(value, str) and value in codes.REGISTRY
}
CORPUS = {
    (match[1], match[2])
    for path in ERRORS_DIR.glob("*.expected")
    for match in re.finditer(r" (CF-[A-Z]+-\d{3}): (.*)", path.read_text(encoding="utf-8"))
}
"""(code, message) of every reviewed message in tests/errors."""


def test_no_code_is_written_as_a_literal() -> None:
    literal = re.compile(r"[\"']CF-[A-Z]+-\d{3}[\"']")
    offenders = [
        f"{p.relative_to(REPO)}:{i}"
        for p in SOURCES
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if literal.search(line)
    ]
    assert offenders == [], "use the constants of clusterforge/codes.py"


def test_every_registered_code_is_used_and_every_used_constant_registered() -> None:
    names = set(CONSTANTS)
    assert len(names) == len(codes.REGISTRY)
    used = set(_constant_uses())
    assert names - used == set(), "registered but never reported"
    assert {u for u in used if u not in vars(codes)} == set()


def test_codes_follow_the_naming_scheme_and_have_a_family() -> None:
    for code, info in codes.REGISTRY.items():
        assert re.fullmatch(r"CF-[A-Z]+-\d{3}", code)
        assert info.family in codes.FAMILIES
        assert info.title and info.action and info.example
        assert not info.example.startswith(("error", "warning", "info")), "the example is the message alone"


def test_every_example_is_a_message_its_code_produces() -> None:
    """Checked against the f-string at the code's call sites; codes whose message is built elsewhere (schema
    errors, "unknown ... did you mean") must show a message from the reviewed error corpus."""
    uses = _constant_uses()
    by_code = {value: name for name, value in CONSTANTS.items()}
    wrong = []
    for code, info in codes.REGISTRY.items():
        patterns = _message_patterns(uses[by_code[code]])
        from_source = any(re.fullmatch(p, info.example, re.DOTALL) for p in patterns)
        if not (from_source or (code, info.example) in CORPUS):
            wrong.append(f"{code}: {info.example!r} matches none of {patterns}")
    assert wrong == []


def test_committed_codes_doc_is_fresh() -> None:
    """docs/codes.md holds the output of `python tests/regen.py codes`; regenerate after adding a code."""
    assert (REPO / "docs" / "codes.md").read_text(encoding="utf-8") == codes_markdown()


def test_every_code_is_in_the_doc() -> None:
    text = (REPO / "docs" / "codes.md").read_text(encoding="utf-8")
    assert all(f"### {code}\n" in text for code in codes.REGISTRY)


def test_unregistered_code_cannot_be_added_twice() -> None:
    first = next(iter(codes.REGISTRY.values()))
    try:
        codes._code(first.code, first.severity, "x", "y", "z")
    except ValueError as exc:
        assert first.code in str(exc)
    else:
        raise AssertionError("a duplicate code was accepted")
