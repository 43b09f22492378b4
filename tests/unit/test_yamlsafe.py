from __future__ import annotations

import pytest

from clusterforge.errors import SourceLocation
from clusterforge.yamlsafe import YamlError, read_yaml


def test_yaml12_scalars_keep_ratios_and_words_as_strings() -> None:
    data, _ = read_yaml(
        "ratio: 1:1\nanswer: no\nflag: true\nn: 0x10\nf: 1.5e3\nnothing: ~\nday: 2024-01-01\n", "t.yaml"
    )
    assert data == {
        "ratio": "1:1",
        "answer": "no",
        "flag": True,
        "n": 16,
        "f": 1500.0,
        "nothing": None,
        "day": "2024-01-01",
    }


def test_source_map_has_line_and_column_of_every_value() -> None:
    _, sources = read_yaml("a:\n  - x: 1\n    y: [2, 3]\n", "t.yaml")
    assert sources.values[("a", 0, "y", 1)] == SourceLocation("t.yaml", 3, 12)
    assert sources.keys[("a", 0, "y")] == SourceLocation("t.yaml", 3, 5)
    assert sources.locate(("a", 0, "z", 4)) == SourceLocation("t.yaml", 2, 5)


def test_merge_keys_and_anchors() -> None:
    data, _ = read_yaml("base: &b {x: 1, y: 2}\nitem: {<<: *b, y: 3}\n", "t.yaml")
    assert data["item"] == {"x": 1, "y": 3}


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("a: 1\na: 2\n", "CF-YAML-002"),
        ("a: [1, 2\n", "CF-YAML-001"),
        ("? [1, 2]\n: x\n", "CF-YAML-001"),
        ("a: 1\n---\nb: 2\n", "CF-YAML-001"),
        ("a: !!python/object:os.system x\n", "CF-YAML-001"),
    ],
)
def test_bad_documents(text: str, code: str) -> None:
    with pytest.raises(YamlError) as info:
        read_yaml(text, "t.yaml")
    assert info.value.finding.code == code
    assert info.value.finding.location is not None


def test_alias_expansion_is_bounded() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    with pytest.raises(YamlError) as info:
        read_yaml("\n".join(lines), "bomb.yaml")
    assert info.value.finding.code == "CF-YAML-004"


def test_oversized_file_is_refused() -> None:
    with pytest.raises(YamlError) as info:
        read_yaml("a: '" + "x" * (9 * 1024 * 1024) + "'\n", "big.yaml")
    assert info.value.finding.code == "CF-YAML-004"
