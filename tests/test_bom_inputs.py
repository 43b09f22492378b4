"""What `clusterforge bom` takes and where it reports: a unit price is bounded to what money can be (no `inf`
total), and its errors go to stderr, leaving stdout to the bill of materials."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml
from factories import valid_from
from helpers import REPO, run_cli

from clusterforge.model.procurement import MAX_UNIT_PRICE
from clusterforge.pipeline import analyse
from clusterforge.render.context import RenderContext
from clusterforge.render.handoff.bom import bom_rows

L40S = REPO / "blueprints/l40s-inference.yaml"
SERVER = "generic/l40s-4u-8gpu"


def priced(price: float) -> dict[str, Any]:
    data = yaml.safe_load(L40S.read_text(encoding="utf-8"))
    data["procurement"] = {"currency": "EUR", "price_list": {SERVER: price, "MMA4Z00-NS": price}}
    return dict(data)


def test_a_unit_price_past_what_money_can_be_is_a_located_error(tmp_path: Path) -> None:
    blueprint = tmp_path / "priced.yaml"
    blueprint.write_text(yaml.safe_dump(priced(1e308), sort_keys=False), encoding="utf-8")
    line = next(n for n, text in enumerate(blueprint.read_text().splitlines(), 1) if text.strip().startswith(SERVER))
    result = run_cli("bom", str(blueprint))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "inf" not in result.stdout
    assert f"priced.yaml:{line}:" in result.stderr and "error CF-SCHEMA-004: procurement.price_list." in result.stderr
    assert "less than or equal to 1000000000000" in result.stderr


def test_the_dearest_prices_total_to_a_finite_sum() -> None:
    valid = valid_from(priced(MAX_UNIT_PRICE))
    analysis = analyse(valid)
    rows = bom_rows(RenderContext(valid, analysis.topo, analysis.findings))
    total = float(str(rows[-1][9]))
    assert rows[-1][0] == "total" and math.isfinite(total) and total >= 8 * MAX_UNIT_PRICE


def test_bom_errors_go_to_stderr() -> None:
    result = run_cli("bom", str(REPO / "tests/errors/unknown-server-model.yaml"))
    assert result.returncode == 1
    assert result.stdout == ""
    assert "error CF-REF-002: unknown server model 'nvidia/dgx-h10'" in result.stderr
