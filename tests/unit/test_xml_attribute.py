"""nccl's topology.xml attributes are quoted as the standard library's xml.sax.saxutils.quoteattr quotes them."""

from __future__ import annotations

import itertools
from xml.sax.saxutils import quoteattr as standard

from clusterforge.render.nccl.nccl import quoteattr


def test_every_short_mix_of_special_characters_is_quoted_as_the_standard_library_does() -> None:
    for length in range(4):
        for chars in itertools.product("a&<>\"'\n\r\t ", repeat=length):
            text = "".join(chars)
            assert quoteattr(text) == standard(text), text
    assert quoteattr("0000:1b:00.0") == '"0000:1b:00.0"'
