"""The handoff report: `report.md` for pull requests and `report.html` (with the elevations) for people.

The figures come from `clusterforge.plan.build_plan`; this module only arranges them into titled
tables (a plain model of strings), which `escaped` makes safe for Markdown or HTML before the
templates print them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ...catalog import Server, Sourced
from ...catalog.models import Device as CatalogDevice
from ...errors import Finding
from ...expand.topology import Topology
from ...plan import FabricPlan, OobPlan, Plan
from ...validate import ValidBlueprint
from ..context import RenderContext
from ..escape import Escaped, md_cell
from .elevation import escaped, finding_where, legend_model, page_drawings, rows_model, xml_text
from .rack_drawing import num, xml_escape
from .report_bom import bom_sections, rack_cable_sections
from .report_failures import failures_section
from .report_imex import imex_section
from .report_table import table
from .report_workloads import workloads_section

REPORT_MD = "handoff/report.md"
REPORT_HTML = "handoff/report.html"

_MD_INLINE = re.compile(r"([*_\[\]~$])")


def md_text(text: str) -> str:
    """`text` as literal Markdown (GitHub flavour) on one line, safe in a table cell: the shared `md_cell`
    (HTML characters as entities, pipes, backslashes and backticks escaped, one line), plus backslashes
    before what would start emphasis, a link, strikethrough or math."""
    return _MD_INLINE.sub(r"\\\1", md_cell(text))


def _summary(plan: Plan) -> dict[str, Any]:
    power = plan.power
    domains = ", ".join(f"{n} × {size} GPUs" for size, n in plan.nvlink_domains.items()) or "none"
    roles = ", ".join(f"{n} {role}" for role, n in plan.nodes_by_role.items())
    rows = [
        ["Nodes", f"{plan.nodes} ({roles})"],
        ["GPUs", str(plan.gpus)],
        ["Racks", str(plan.racks)],
        [plan.domains_label, domains],
        ["Cables", str(plan.cables_total)],
        ["IT power", f"{num(power.power_kw)} kW"],
        ["Heat", f"{num(power.heat_kw)} kW ({power.heat_btu_h:,} BTU/h)"],
    ]
    if power.facility_kw:
        rows.append(["Facility power at the site's PUE", f"{num(power.facility_kw)} kW"])
    return table("Summary", ["", "value"], rows)


def _ratio_text(fabric: FabricPlan | OobPlan, tier: str, count: int) -> str:
    if isinstance(fabric, OobPlan):
        return ""
    ratio = fabric.oversubscription.get(tier)
    if ratio is not None:
        return f"{num(ratio)}:1"
    return "single switch" if count == 1 and fabric.tiers == 1 else "top tier, no uplinks"


def _fabrics(plan: Plan, topo: Topology) -> list[dict[str, Any]]:
    networks, tiers = [], []
    for name, fabric in plan.fabrics.items():
        links = ", ".join(f"{n} {tier}" for tier, n in fabric.links.items())
        target = ""
        if isinstance(fabric, OobPlan):
            networks.append([name, "oob", "", "", "", "", "", "", links])
        else:
            target = f"{num(fabric.oversubscription_target)}:1"
            networks.append(
                [
                    name,
                    fabric.kind,
                    fabric.technology,
                    fabric.topology,
                    str(fabric.tiers),
                    str(fabric.nodes),
                    str(fabric.endpoints),
                    num(fabric.bisection_tbps),
                    links,
                ]
            )
        for tier, count in fabric.switches.items():
            wanted = target if tier == "leaf" else ""
            models = ", ".join(sorted({d.model for d in topo.switches(name, tier)}))
            tiers.append([name, tier, str(count), models, _ratio_text(fabric, tier, count), wanted])
    return [
        table(
            "Fabrics",
            ["network", "kind", "technology", "topology", "tiers", "nodes", "ports", "bisection Tb/s", "links"],
            networks,
            numeric=(4, 5, 6, 7),
        ),
        table(
            "Switches per tier",
            ["network", "tier", "switches", "model", "oversubscription (down:up)", "target"],
            tiers,
            numeric=(2,),
            intro="Oversubscription is the highest ratio of downlink to uplink bandwidth among the tier's switches.",
        ),
    ]


def _racks(plan: Plan, valid: ValidBlueprint, topo: Topology) -> list[dict[str, Any]]:
    rows, classes = [], []
    for name, r in plan.power.racks.items():
        rack_type = topo.racks[name].rack_type
        share = r.power_kw / r.usable_power_kw if r.usable_power_kw else 0.0
        rows.append(
            [
                name,
                r.row,
                num(r.power_kw),
                num(r.usable_power_kw),
                f"{share:.0%}",
                num(r.heat_kw),
                f"{r.heat_btu_h:,}",
                f"{num(r.air_kw)} / {num(rack_type.cooling.air_kw)}",
                f"{num(r.liquid_kw)} / {num(rack_type.cooling.liquid_kw)}",
                f"{num(r.weight_kg)} / {num(rack_type.max_load_kg)}",
                f"{r.u_used}/{r.u_total}",
            ]
        )
        classes.append("over" if share > 1 else "high" if share >= 0.9 else "")
    cdu = {row.name: num(row.cdu_kw) if row.cdu_kw else "" for row in valid.blueprint.floor.rows}
    per_row = [
        [name, num(r.power_kw), num(r.heat_kw), num(r.liquid_kw), cdu.get(name, ""), num(r.weight_kg)]
        for name, r in plan.power.rows.items()
    ]
    return [
        table(
            "Power and heat per rack",
            [
                "rack",
                "row",
                "power kW",
                "usable kW",
                "load",
                "heat kW",
                "heat BTU/h",
                "air kW / capacity",
                "liquid kW / capacity",
                "weight kg / max load",
                "U used",
            ],
            rows,
            numeric=range(2, 11),
            classes=classes,
            intro="Planned draw (catalog maximum × load factor) against the feed power usable with the "
            "rack's redundancy, derated to 80%; heat equals power. Weight is the devices' load.",
        ),
        table(
            "Power and heat per row",
            ["row", "power kW", "heat kW", "liquid kW", "CDU kW", "weight kg"],
            per_row,
            numeric=range(1, 6),
            intro="Row weight includes the empty racks.",
        ),
    ]


def _finding_row(ctx: RenderContext, f: Finding) -> list[str]:
    return [f.severity.value, f.code, f.subject or "", finding_where(ctx, f), f.message, f.hint or ""]


def _findings(ctx: RenderContext, findings: list[Finding]) -> list[dict[str, Any]]:
    active = [f for f in findings if not f.suppressed_by]
    silenced = [f for f in findings if f.suppressed_by]
    rules = ctx.valid.blueprint.suppress
    matched = [sum(1 for f in silenced if f.suppressed_by == rule.reason and f.code == rule.code) for rule in rules]
    return [
        table(
            "Findings",
            ["severity", "code", "subject", "where", "message", "hint"],
            [_finding_row(ctx, f) for f in active],
            intro="" if active else "No open findings.",
        ),
        table(
            "Suppressed findings",
            ["severity", "code", "subject", "where", "message", "reason"],
            [[*_finding_row(ctx, f)[:5], f.suppressed_by or ""] for f in silenced],
            intro="" if silenced else "No finding is suppressed.",
        ),
        table(
            "Suppressions",
            ["code", "target", "reason", "findings matched"],
            [[r.code, r.target or "(every finding)", r.reason, str(n)] for r, n in zip(rules, matched, strict=True)],
            numeric=(3,),
            intro="" if rules else "The blueprint suppresses nothing.",
        ),
    ]


def used_catalog_keys(valid: ValidBlueprint, topo: Topology) -> list[str]:
    """Catalog entries the expanded cluster uses: devices, their GPUs and NICs, rack types, the cable products
    and transceivers of its cables."""
    catalog = valid.catalog
    keys = {d.model for d in topo.devices.values()} | {r.type_key for r in topo.racks.values()}
    for key in list(keys):
        entry = catalog.entries.get(key)
        if isinstance(entry, Server) and entry.gpus:
            keys.add(entry.gpus.model)
        if isinstance(entry, CatalogDevice):
            keys |= {g.nic for g in entry.ports if g.nic}
    keys |= {cable.product for cable in topo.cables} | set(topo.modules.values())
    return sorted(k for k in keys if k in catalog.entries)


def _estimates(valid: ValidBlueprint, topo: Topology) -> dict[str, Any]:
    rows = []
    for key in used_catalog_keys(valid, topo):
        entry: Sourced = valid.catalog.entries[key]
        for i, field_name in enumerate(entry.estimated_fields()):
            first = i == 0
            rows.append(
                [
                    key if first else "",
                    f"{entry.vendor} {entry.name}" if first else "",
                    field_name,
                    entry.sources[field_name],
                ]
            )
    return table(
        "Estimated catalog values",
        ["entry", "product", "field", "source"],
        rows,
        intro="Catalog figures this blueprint relies on whose source is an estimate: confirm them with "
        "the vendor or the site before ordering."
        if rows
        else "Every catalog figure this blueprint uses has a source.",
    )


def _workloads(plan: Plan) -> list[dict[str, Any]]:
    section = workloads_section(plan)
    return [section] if section else []


def report_model(ctx: RenderContext) -> dict[str, Any]:
    """The report as plain data: a header and titled tables, unescaped."""
    valid, topo = ctx.valid, ctx.topo
    bp = valid.blueprint
    plan = ctx.plan
    overridden = sorted(valid.catalog.overridden)
    site = bp.site.name + (f", {bp.site.location}" if bp.site.location else "")
    return {
        "title": f"{bp.name}: handoff report",
        "name": bp.name,
        "description": bp.description,
        "site": site,
        "blueprint": bp.name,
        "overridden": ", ".join(overridden),
        "sections": [
            _summary(plan),
            table(
                "Nodes by role",
                ["role", "nodes"],
                [[role, str(n)] for role, n in plan.nodes_by_role.items()],
                numeric=(1,),
            ),
            *_fabrics(plan, topo),
            *_racks(plan, valid, topo),
            failures_section(ctx),
            *bom_sections(ctx),
            *_workloads(plan),
            *imex_section(valid, topo),
            *_findings(ctx, ctx.findings),
            _estimates(valid, topo),
        ],
    }


def _escaped_section(section: dict[str, Any], escape: Callable[[str], str]) -> dict[str, Any]:
    """A section's title, intro, columns and classes escaped; its rows (and a chart, SVG built from escaped
    text) left to the caller."""
    return escaped({k: v for k, v in section.items() if k not in ("rows", "chart")}, escape)


def markdown_sections(sections: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sections for report.md, escaped, each table row one line of text: the tables can have thousands
    of rows, and a cell text repeats often, so it is escaped once."""
    cell = Escaped(md_text)
    return [
        {
            **_escaped_section(section, md_text),
            "rows": ["| " + " | ".join(map(cell.__getitem__, row)) + " |" for row in section["rows"]],
        }
        for section in sections
    ]


def html_sections(sections: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sections for report.html, escaped, each table row one <tr> element (see markdown_sections)."""
    cell = Escaped(xml_escape)
    out = []
    for section in sections:
        escaped_section = _escaped_section(section, xml_text)
        classes = escaped_section["cell_class"]
        rows = [
            f'<tr class="{row_class}">'
            + "".join(f'<td class="{classes[i]}">{cell[value]}</td>' for i, value in enumerate(row))
            + "</tr>"
            for row, row_class in zip(section["rows"], escaped_section["classes"], strict=True)
        ]
        out.append({**escaped_section, "rows": rows, "chart": section.get("chart", "")})
    return out


def render_report(ctx: RenderContext) -> dict[str, str]:
    model = report_model(ctx)
    header = {k: v for k, v in model.items() if k != "sections"}
    markdown = ctx.render(
        "handoff/report.md.j2", {**escaped(header, md_text), "sections": markdown_sections(model["sections"])}
    )
    page = {
        **escaped({**header, "legend": legend_model()}, xml_text),
        "sections": html_sections(model["sections"]),
        "rows": rows_model(ctx, page_drawings(ctx, "elevations/")),
        "rack_cables": html_sections(rack_cable_sections(ctx)),
    }
    return {REPORT_MD: markdown, REPORT_HTML: ctx.render("handoff/report.html.j2", page)}
