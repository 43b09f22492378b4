"""The built-in catalog is read by libyaml (start-up time); it must give what the strict reader gives."""

from __future__ import annotations

import pytest

from clusterforge.catalog.loader import BUILTIN_FILES, DATA_DIR
from clusterforge.yamlsafe import YamlError, read_shipped_yaml, read_yaml


@pytest.mark.parametrize("name", BUILTIN_FILES)
def test_a_shipped_file_reads_the_same_data_and_lines_with_libyaml(name: str) -> None:
    text = (DATA_DIR / name).read_text(encoding="utf-8")
    data, sources = read_shipped_yaml(text, name)
    assert (data, sources) == read_yaml(text, name)
    assert sources.values, "the source map has the lines"


def test_yaml_1_2_scalars_and_the_strict_readers_errors() -> None:
    assert read_shipped_yaml("a: 010\nb: 1:1\nc: no\nd: 0o17\ne: 0x1f\n", "x")[0] == {
        "a": 10,
        "b": "1:1",
        "c": "no",
        "d": 15,
        "e": 31,
    }
    for bad in ("a: [1, 2\n", "a: 1\na: 2\n"):
        with pytest.raises(YamlError) as shipped:
            read_shipped_yaml(bad, "x")
        with pytest.raises(YamlError) as strict:
            read_yaml(bad, "x")
        assert shipped.value.finding == strict.value.finding
