"""Write a rendered tree atomically, with a manifest; or compare it with what is on disk (--check)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .version import __version__

MANIFEST = "manifest.json"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def with_manifest(files: dict[str, str], blueprint_sha256: str) -> dict[str, str]:
    """The files plus `manifest.json`: every file's sha256, the blueprint's hash and the tool version."""
    manifest = {
        "tool": "clusterforge",
        "version": __version__,
        "blueprint_sha256": blueprint_sha256,
        "files": {path: sha256(text) for path, text in sorted(files.items())},
    }
    return {**files, MANIFEST: json.dumps(manifest, indent=2, sort_keys=True) + "\n"}


def write_tree(files: dict[str, str], target: Path) -> None:
    """Write every file into a temporary folder beside `target`, then swap it in: readers never see a
    half-written tree, files the blueprint no longer produces disappear, and a failure leaves `target`
    as it was."""
    target = target.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for rel, text in sorted(files.items()):
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
        os.chmod(staging, 0o755)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    if target.exists():
        os.replace(target, old)
    try:
        os.replace(staging, target)
    except BaseException:
        if old.exists():
            os.replace(old, target)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)


@dataclass
class TreeDiff:
    stale: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    @property
    def fresh(self) -> bool:
        return not (self.stale or self.missing or self.extra)


def compare_tree(files: dict[str, str], target: Path) -> TreeDiff:
    diff = TreeDiff()
    on_disk = {str(p.relative_to(target)) for p in target.rglob("*") if p.is_file()} if target.is_dir() else set()
    for rel, text in sorted(files.items()):
        path = target / rel
        if rel not in on_disk:
            diff.missing.append(rel)
        elif path.read_text(encoding="utf-8") != text:
            diff.stale.append(rel)
    diff.extra = sorted(on_disk - set(files))
    return diff
