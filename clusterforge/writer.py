"""Write a rendered tree into its output folder, or compare it with what is there (--check).

The folder is clusterforge's only when it says so: it is missing, empty, or holds a previous render's
`manifest.json`. Such a folder is replaced as a whole (built beside it, then swapped in), and of what it held
only the files the previous manifest lists are dropped: anything a person put there is carried over. Any
other folder is refused unless the caller forces it; then files are written into it one by one and nothing
of its own is touched but the files of the same path.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import codes
from .errors import ClusterforgeError, Finding, Severity, display_name
from .fsops import FolderBusy, locked, swap_in
from .output_paths import UnsafePath, check_relative
from .version import __version__

MANIFEST = "manifest.json"
TOOL = "clusterforge"
_NEW, _OLD = "clusterforge-new-", "clusterforge-old-"


class OutputError(ClusterforgeError):
    """The output folder cannot be written as asked; what was there is untouched."""


def _fail(code: str, target: Path, message: str, hint: str | None = None) -> OutputError:
    return OutputError([Finding(code, Severity.ERROR, f"{display_name(target)}: {message}", hint=hint)])


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def with_manifest(files: dict[str, str], blueprint_sha256: str) -> dict[str, str]:
    """The files plus `manifest.json`: every file's sha256, the blueprint's hash and the tool version."""
    manifest = {
        "tool": TOOL,
        "version": __version__,
        "blueprint_sha256": blueprint_sha256,
        "files": {path: sha256(text) for path, text in sorted(files.items())},
    }
    return {**files, MANIFEST: json.dumps(manifest, indent=2, sort_keys=True) + "\n"}


def manifest_files(folder: Path) -> set[str] | None:
    """The files a previous render in `folder` wrote (its manifest included), or None when no clusterforge
    manifest is there."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("tool") != TOOL or not isinstance(data.get("files"), dict):
        return None
    return {str(path) for path in data["files"]} | {MANIFEST}


def _walk(root: Path, rel: str = "") -> Iterator[tuple[str, os.DirEntry[str]]]:
    """(relative path, entry) of everything under `root`, without following symbolic links."""
    with os.scandir(root / rel if rel else root) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            path = f"{rel}/{entry.name}" if rel else entry.name
            yield path, entry
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(root, path)


def _checked_paths(files: dict[str, str], target: Path) -> None:
    for rel in files:
        try:
            check_relative(rel)
        except UnsafePath as exc:
            raise _fail(codes.OUTPUT_PATH_UNSAFE, target, f"refusing to write {exc}") from None


def _kept_entries(target: Path, ours: set[str]) -> dict[str, os.DirEntry[str]]:
    """What the folder holds that no previous render wrote: files, links and empty folders a person put there."""
    kept: dict[str, os.DirEntry[str]] = {}
    for rel, entry in _walk(target):
        if entry.is_dir(follow_symlinks=False):
            with os.scandir(entry.path) as inside:
                empty = next(inside, None) is None
            if empty:
                kept[rel] = entry
        elif rel not in ours:
            kept[rel] = entry
    return kept


def _collisions(files: dict[str, str], kept: dict[str, os.DirEntry[str]]) -> list[str]:
    """Kept paths that a new file would replace, or that stand where a new file needs a folder (or back)."""
    new_dirs = {"/".join(rel.split("/")[:i]) for rel in files for i in range(1, rel.count("/") + 1)}
    found = []
    for rel in kept:
        parents = {"/".join(rel.split("/")[:i]) for i in range(1, rel.count("/") + 1)}
        if rel in files or (rel in new_dirs and not kept[rel].is_dir(follow_symlinks=False)) or parents & set(files):
            found.append(rel)
    return sorted(found)


def _write_files(files: dict[str, str], root: Path) -> None:
    """Each file created anew (O_EXCL), each folder made once: at 100,000 GPUs a render writes some 20,000."""
    made: set[str] = set()
    for rel, text in sorted(files.items()):
        folder, _, _ = rel.rpartition("/")
        if folder not in made:
            (root / folder).mkdir(parents=True, exist_ok=True)
            made.add(folder)
        fd = os.open(root / rel, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            data = memoryview(text.encode("utf-8"))
            while data:
                data = data[os.write(fd, data) :]
        finally:
            os.close(fd)


def _carry_over(kept: dict[str, os.DirEntry[str]], staging: Path) -> None:
    """Hard-link (or copy, where links cannot be made) what a person put in the folder into the new tree."""
    for rel, entry in kept.items():
        dest = staging / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if entry.is_dir(follow_symlinks=False):
            dest.mkdir(exist_ok=True)
            continue
        try:
            os.link(entry.path, dest, follow_symlinks=False)
        except OSError:
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), dest)
            else:
                shutil.copy2(entry.path, dest)


def clean_leftovers(target: Path) -> None:
    """Remove what a killed render left beside `target`; if it was killed between two renames, put the
    previous tree back first. Call with the folder's lock held."""
    leftovers = sorted(target.parent.glob(f".{target.name}.{_NEW}*")) + sorted(
        target.parent.glob(f".{target.name}.{_OLD}*")
    )
    if not target.exists():
        olds = [p for p in leftovers if _OLD in p.name and manifest_files(p) is not None]
        if olds:
            os.rename(olds[-1], target)
            leftovers.remove(olds[-1])
    for path in leftovers:
        shutil.rmtree(path, ignore_errors=True)


def _replace_folder(files: dict[str, str], target: Path, kept: dict[str, os.DirEntry[str]]) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.{_NEW}", dir=target.parent))
    old = target.parent / f".{target.name}.{_OLD}{os.getpid()}"
    try:
        _write_files(files, staging)
        _carry_over(kept, staging)
        os.chmod(staging, 0o755)
        swap_in(staging, target, old)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _write_into(files: dict[str, str], target: Path) -> None:
    """Forced write into a folder that is not ours: file by file (each atomically), the manifest last,
    never through a symbolic link, deleting nothing."""
    for rel in files:
        here = target
        for part in rel.split("/")[:-1]:
            here = here / part
            if here.is_symlink() or (here.exists() and not here.is_dir()):
                raise _fail(
                    codes.OUTPUT_WOULD_REPLACE,
                    target,
                    f"cannot write {rel}: {here.relative_to(target)} is not a folder",
                )
        if (target / rel).is_dir() and not (target / rel).is_symlink():
            raise _fail(codes.OUTPUT_WOULD_REPLACE, target, f"cannot write {rel}: a folder of that name is in the way")
    for rel, text in sorted(files.items(), key=lambda item: item[0] == MANIFEST):
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{_NEW}")
        try:
            with open(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(text)
            os.chmod(temp, 0o644)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


def _write_locked(files: dict[str, str], target: Path, force: bool) -> None:
    clean_leftovers(target)
    if target.exists() and not target.is_dir():
        raise _fail(codes.OUTPUT_NOT_OURS, target, "the output path is a file, not a folder")
    empty = not target.exists() or not any(target.iterdir())
    ours = set() if empty else manifest_files(target)
    if ours is None and not force:
        raise _fail(
            codes.OUTPUT_NOT_OURS,
            target,
            "this folder holds files that clusterforge did not write "
            "(no manifest.json of an earlier render); nothing was written",
            "render into an empty or new folder, or pass --force to write into this one "
            "(files of the same path are replaced; nothing else is deleted)",
        )
    if target.exists() and os.path.ismount(target):
        if not (force or empty):
            raise _fail(
                codes.OUTPUT_UNWRITABLE,
                target,
                "the output folder is a mount point, which cannot be replaced as a whole",
                "render into a folder inside it, or pass --force to write file by file",
            )
        ours = None
    if ours is None:
        _write_into(files, target)
        return
    kept = _kept_entries(target, ours) if target.exists() else {}
    collisions = _collisions(files, kept)
    if collisions and not force:
        raise _fail(
            codes.OUTPUT_WOULD_REPLACE,
            target,
            f"the render would replace {len(collisions)} file(s) that the previous render did not write: "
            f"{', '.join(collisions[:5])}; nothing was written",
            "move them away, or pass --force to replace them",
        )
    for rel in collisions:
        del kept[rel]
    _replace_folder(files, target, kept)


def write_tree(files: dict[str, str], target: Path, *, force: bool = False) -> None:
    """Write `files` (relative path -> text, a manifest among them) to the folder `target`; raise OutputError
    and leave `target` as it was when that cannot be done safely."""
    _checked_paths(files, target)
    target = target.resolve()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with locked(target.parent):
            _write_locked(files, target, force)
    except FolderBusy:
        raise _fail(
            codes.OUTPUT_BUSY,
            target,
            "another clusterforge render is writing next to this folder",
            "wait for it to finish, then run again",
        ) from None
    except OSError as exc:
        where = exc.filename or target
        raise _fail(
            codes.OUTPUT_UNWRITABLE,
            target,
            f"cannot write the output: {exc.strerror or exc} ({where}); the folder is as it was",
        ) from None


@dataclass
class TreeDiff:
    stale: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    """Files the previous render wrote (per its manifest) that the blueprint no longer produces."""
    unmanaged: list[str] = field(default_factory=list)
    """Files that no render wrote; a render keeps them."""

    @property
    def fresh(self) -> bool:
        return not (self.stale or self.missing or self.extra)


def compare_tree(files: dict[str, str], target: Path) -> TreeDiff:
    diff = TreeDiff()
    on_disk = (
        {rel for rel, entry in _walk(target) if not entry.is_dir(follow_symlinks=False)} if target.is_dir() else set()
    )
    for rel, text in sorted(files.items()):
        if rel not in on_disk:
            diff.missing.append(rel)
        elif (target / rel).read_bytes() != text.encode("utf-8"):
            diff.stale.append(rel)
    ours = manifest_files(target) or set()
    diff.extra = sorted((on_disk & ours) - set(files))
    diff.unmanaged = sorted(on_disk - ours - set(files))
    return diff
