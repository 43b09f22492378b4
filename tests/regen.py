"""Regenerate reviewed expectations; run it, then review the diff before committing.

python tests/regen.py errors      # tests/errors/*.expected from `clusterforge validate`
python tests/regen.py schema      # docs/blueprint.schema.json and docs/reference.md
python tests/regen.py codes       # docs/codes.md from clusterforge/codes.py
python tests/regen.py inventories # inventories/<name>/ from blueprints/*.yaml
python tests/regen.py readme      # command output shown in README.md and docs/*.md
python tests/regen.py workloads   # the table of published measurements in docs/workloads.md
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from helpers import ERRORS_DIR, REPO, error_cases, run_cli


def regen_errors() -> None:
    for case, target in error_cases():
        result = run_cli("validate", target, cwd=ERRORS_DIR)
        (ERRORS_DIR / f"{case}.expected").write_text(result.stdout, encoding="utf-8")
        print(f"wrote tests/errors/{case}.expected")


def regen_schema() -> None:
    for fmt, name in (("json", "blueprint.schema.json"), ("markdown", "reference.md")):
        result = run_cli("schema", "--format", fmt, cwd=REPO)
        (REPO / "docs" / name).write_text(result.stdout, encoding="utf-8")
        print(f"wrote docs/{name}")


def regen_codes() -> None:
    from clusterforge.codes_doc import codes_markdown

    (REPO / "docs" / "codes.md").write_text(codes_markdown(), encoding="utf-8")
    print("wrote docs/codes.md")


DIFF_EXAMPLE = "clusterforge diff blueprints/h200-training-pod.yaml docs/examples/h200-training-pod-grown.yaml"
RENUMBER_EXAMPLE = "clusterforge plan docs/examples/h200-training-pod-renumbered.yaml"
"""The example pod with another in-band pool beside the lock file of the example: refused (CF-IDENT-001)."""
MISCABLED = "docs/examples/h200-training-pod-ibnetdiscover-miscabled.txt"
"""Real `ibnetdiscover -p` output of the h200 example's fabric simulated by ibsim with four cabling faults."""
FAILURES_GB200 = (
    "clusterforge failures blueprints/gb200-nvl72.yaml --element power-shelf --element switch-tray "
    "--element cdu --element subnet-manager"
)
VERIFY_EXAMPLE = f"clusterforge verify blueprints/h200-training-pod.yaml --ibnetdiscover {MISCABLED}"


def readme_blocks() -> dict[str, str]:
    """Commands whose output the README or a page of docs/ shows, with that output (the README test compares
    them wherever the text holds them: `showing`)."""
    commands = {
        "clusterforge validate tests/errors/unknown-server-model.yaml": (
            "validate",
            "tests/errors/unknown-server-model.yaml",
        ),
        "clusterforge validate tests/errors/catalog-nvswitch-unsaid/blueprint.yaml": (
            "validate",
            "tests/errors/catalog-nvswitch-unsaid/blueprint.yaml",
        ),
        "clusterforge plan blueprints/h200-training-pod.yaml": ("plan", "blueprints/h200-training-pod.yaml"),
        "clusterforge plan blueprints/l40s-inference.yaml": ("plan", "blueprints/l40s-inference.yaml"),
        "clusterforge bom blueprints/h200-training-pod.yaml": ("bom", "blueprints/h200-training-pod.yaml"),
        "clusterforge check blueprints/*.yaml": (
            "check",
            *sorted(
                str(p.relative_to(REPO))
                for p in (REPO / "blueprints").glob("*.yaml")
                if not p.name.endswith(".lock.yaml")
            ),
        ),
        "clusterforge failures blueprints/h200-training-pod.yaml": ("failures", "blueprints/h200-training-pod.yaml"),
        "clusterforge check tests/failures/h200-resilience.yaml": ("check", "tests/failures/h200-resilience.yaml"),
        FAILURES_GB200: ("failures", "blueprints/gb200-nvl72.yaml", *FAILURES_GB200.split()[3:]),
        DIFF_EXAMPLE: ("diff", "blueprints/h200-training-pod.yaml", "docs/examples/h200-training-pod-grown.yaml"),
        RENUMBER_EXAMPLE: ("plan", "docs/examples/h200-training-pod-renumbered.yaml"),
        **{
            f"clusterforge fit {path}": ("fit", path)
            for path in (
                "blueprints/h200-training-pod.yaml",
                "blueprints/gb200-nvl72.yaml",
                "blueprints/l40s-inference.yaml",
            )
        },
        VERIFY_EXAMPLE: ("verify", "blueprints/h200-training-pod.yaml", "--ibnetdiscover", MISCABLED),
        "clusterforge fit tests/workloads/l40s-oversized.yaml --suggest": (
            "fit",
            "tests/workloads/l40s-oversized.yaml",
            "--suggest",
        ),
    }
    return {shown: run_cli(*args, cwd=REPO).stdout for shown, args in commands.items()}


def markdown_files() -> list[Path]:
    """Where command output is shown: the README and every page of docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def showing(command: str) -> list[Path]:
    """The markdown files holding a block under `$ command` (a section moved to docs/ takes its block along)."""
    return [path for path in markdown_files() if f"$ {command}\n" in path.read_text(encoding="utf-8")]


def replace_block(text: str, command: str, output: str) -> str:
    """Replace the output under `$ command` in a fenced block of `text`."""
    start = text.index(f"$ {command}\n") + len(f"$ {command}\n")
    fence = "````" if command == DIFF_EXAMPLE else "```"  # the diff's output holds ``` fences itself
    end = text.index(fence, start)
    return text[:start] + output + text[end:]


def regen_readme() -> None:
    for command, output in readme_blocks().items():
        paths = showing(command)
        if not paths:
            sys.exit(f"no README.md or docs/*.md shows '$ {command}': drop it from readme_blocks or show it")
        for path in paths:
            text = path.read_text(encoding="utf-8")
            fresh = replace_block(text, command, output)
            if fresh != text:
                path.write_text(fresh, encoding="utf-8")
                print(f"wrote {path.relative_to(REPO)} ({command})")


def regen_inventories() -> None:
    for blueprint in sorted(p for p in (REPO / "blueprints").glob("*.yaml") if not p.name.endswith(".lock.yaml")):
        out = run_cli("render", str(blueprint.relative_to(REPO)), cwd=REPO)
        print(out.stdout.strip() or out.stderr.strip())


def regen_workloads() -> None:
    from workload_cases import table_markdown, with_table

    path = REPO / "docs" / "workloads.md"
    path.write_text(with_table(path.read_text(encoding="utf-8"), table_markdown()), encoding="utf-8")
    print("wrote docs/workloads.md")


if __name__ == "__main__":
    jobs = {
        "errors": regen_errors,
        "schema": regen_schema,
        "codes": regen_codes,
        "inventories": regen_inventories,
        "readme": regen_readme,
        "workloads": regen_workloads,
    }
    for name in sys.argv[1:] or list(jobs):
        jobs[name]()
