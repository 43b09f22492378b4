"""Write a rendered tree into its output folder, or compare it with what is there (--check).

The folder is clusterforge's only when it says so: it is missing, empty, or holds a previous render's
`manifest.json`. Such a folder is replaced as a whole (built beside it, then swapped in), and of what it held
only the files the previous manifest lists are dropped: anything a person put there is carried over. Any
other folder is refused unless the caller forces it; then files are written into it one by one and nothing
of its own is touched but the files of the same path.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import codes
from .errors import ClusterforgeError, Finding, Severity, display_name
from .fsops import FolderBusy, held, hold, locked, swap_in
from .inputs import InputRefused, read_regular
from .output_paths import UnsafePath, check_relative
from .render.pieces import FileText, whole
from .version import __version__
from .write_behind import WriteBehind
from .write_behind_child import NewFiles, write_all

MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 256 * 1024 * 1024
"""A manifest lists every file of a render by its sha256 (some 100 bytes a file)."""
TOOL = "clusterforge"
_NEW, _OLD = "clusterforge-new-", "clusterforge-old-"


class OutputError(ClusterforgeError):
    """The output folder cannot be written as asked; what was there is untouched."""


def _fail(code: str, target: Path, message: str, hint: str | None = None) -> OutputError:
    return OutputError([Finding(code, Severity.ERROR, f"{display_name(target)}: {message}", hint=hint)])


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def manifest_text(digests: Mapping[str, str], blueprint_sha256: str) -> str:
    """`manifest.json` of files with these sha256 digests: each file's, the blueprint's hash, the tool version."""
    manifest = {
        "tool": TOOL,
        "version": __version__,
        "blueprint_sha256": blueprint_sha256,
        "files": dict(sorted(digests.items())),
    }
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"


def with_manifest(files: dict[str, str], blueprint_sha256: str) -> dict[str, str]:
    """The files plus `manifest.json`: every file's sha256, the blueprint's hash and the tool version."""
    digests = {path: sha256(text) for path, text in files.items()}
    return {**files, MANIFEST: manifest_text(digests, blueprint_sha256)}


def manifest_files(folder: Path) -> set[str] | None:
    """The files a previous render in `folder` wrote (its manifest included), or None when no clusterforge
    manifest is there."""
    try:
        data = json.loads(read_regular(folder / MANIFEST, MAX_MANIFEST_BYTES)[1].decode("utf-8"))
    except (OSError, InputRefused, RecursionError, ValueError):
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


def _checked_path(rel: str, target: Path) -> None:
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


def _collisions(files: set[str], kept: dict[str, os.DirEntry[str]]) -> list[str]:
    """Kept paths that a new file would replace, or that stand where a new file needs a folder (or back)."""
    new_dirs = {"/".join(rel.split("/")[:i]) for rel in files for i in range(1, rel.count("/") + 1)}
    found = []
    for rel in kept:
        parents = {"/".join(rel.split("/")[:i]) for i in range(1, rel.count("/") + 1)}
        if rel in files or (rel in new_dirs and not kept[rel].is_dir(follow_symlinks=False)) or parents & files:
            found.append(rel)
    return sorted(found)


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
    previous tree back first. Call with the folder's lock held. A staging folder that a running render still
    holds (fsops.held) is left alone."""
    leftovers = sorted(target.parent.glob(f".{target.name}.{_NEW}*")) + sorted(
        target.parent.glob(f".{target.name}.{_OLD}*")
    )
    if not target.exists():
        olds = [p for p in leftovers if _OLD in p.name and manifest_files(p) is not None]
        if olds:
            os.rename(olds[-1], target)
            leftovers.remove(olds[-1])
    for path in leftovers:
        if not (_NEW in path.name and held(path)):
            shutil.rmtree(path, ignore_errors=True)


def _replace_folder(staging: Path, target: Path, kept: dict[str, os.DirEntry[str]]) -> None:
    old = target.parent / f".{target.name}.{_OLD}{os.getpid()}"
    _carry_over(kept, staging)
    os.chmod(staging, 0o755)
    swap_in(staging, target, old)
    shutil.rmtree(old, ignore_errors=True)


def _write_into(staging: Path, files: set[str], target: Path) -> None:
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
    for rel in sorted(files, key=lambda rel: (rel == MANIFEST, rel)):
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{_NEW}")
        try:
            with open(fd, "wb") as handle, open(staging / rel, "rb") as staged:
                shutil.copyfileobj(staged, handle)
            os.chmod(temp, 0o644)
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


def _write_locked(staging: Path, files: set[str], target: Path, force: bool) -> None:
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
        _write_into(staging, files, target)
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
    _replace_folder(staging, target, kept)


@contextlib.contextmanager
def _output_errors(target: Path) -> Iterator[None]:
    """File-system failures as OutputError naming the folder."""
    try:
        yield
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


ENCODE_PIECE = 1 << 20
"""Characters encoded at a time: a 100 MB table encoded whole would be another 100 MB of fresh pages, and on
a virtual machine fresh pages cost more system time than the encoding itself."""


def _encoded_pieces(text: FileText) -> Iterator[bytes]:
    """`text` as UTF-8, a piece at a time (a character is never split: slices are by character)."""
    for part in (text,) if isinstance(text, str) else text:
        for start in range(0, len(part), ENCODE_PIECE):
            yield part[start : start + ENCODE_PIECE].encode("utf-8")


class StagedTree(Mapping[str, str]):
    """A render's files, written one by one as they come into a new folder beside `target` (made at the first
    file), then put in place by `commit`: the whole folder swapped in, or, into a folder that is not
    clusterforge's, copied file by file. Leaving the `with` block without a commit removes the new folder, and
    the folders made for it, so a failed render changes nothing.

    As a mapping it is every file written so far by path. Only the texts under the `keep` prefixes stay in
    memory; the others are read back from the disk when asked for, so a render of a million GPUs need not hold
    its gigabytes of text. `digests` has every file's sha256 for the manifest."""

    def __init__(self, target: Path, *, force: bool = False, keep: tuple[str, ...] = ()) -> None:
        self.target = target.resolve()
        self.force = force
        self.keep = keep
        self._paths: dict[str, None] = {}
        """Every file put or adopted, in that order."""
        self._digests: dict[str, str] = {}
        self._kept: dict[str, str] = {}
        self._behind: WriteBehind | None = None
        self._staging: Path | None = None
        self._hold: int | None = None
        self._new_files: NewFiles | None = None
        self._made_parents: list[Path] = []
        self._committed = False

    def __enter__(self) -> StagedTree:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._behind is not None:
            self._behind.stop()
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)  # after a commit: nothing, or a forced write's copy
        if self._hold is not None:
            os.close(self._hold)
        if not self._committed:
            for folder in self._made_parents:
                with contextlib.suppress(OSError):
                    folder.rmdir()

    def __getitem__(self, rel: str) -> str:
        if rel in self._kept:
            return self._kept[rel]
        if rel not in self._paths:
            raise KeyError(rel)
        self._settle()
        root = self.target if self._committed else self._staging
        assert root is not None
        return (root / rel).read_bytes().decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, rel: object) -> bool:
        return rel in self._paths

    @property
    def digests(self) -> dict[str, str]:
        """Every file's sha256, by path (once the files sent to a write-behind process are written)."""
        self._settle()
        return self._digests

    def write_behind(self) -> None:
        """From here on, `put` hands the files to a second process that writes them (write_behind.py); where
        that process cannot be started (no Python executable to start), `put` goes on writing them itself."""
        if self._behind is None:
            root = self.begin()
            with contextlib.suppress(OSError):
                self._behind = WriteBehind(root)

    def _settle(self) -> None:
        """Wait for the write-behind process to write what it was sent (it ends; `put` writes from here on)."""
        behind, self._behind = self._behind, None
        if behind is not None:
            with _output_errors(self.target):
                self._digests.update(behind.finish())

    def put(self, rel: str, text: FileText) -> None:
        """Write one file (a path not written before) into the new folder."""
        _checked_path(rel, self.target)
        self._paths[rel] = None
        if rel.startswith(self.keep):
            self._kept[rel] = whole(text)
        if self._behind is not None:
            with _output_errors(self.target):
                self._behind.send(rel, _encoded_pieces(text))
            return
        digest = hashlib.sha256()
        with _output_errors(self.target):
            self.begin()
            assert self._new_files is not None
            fd = self._new_files.create(rel)
            try:
                for data in _encoded_pieces(text):
                    digest.update(data)
                    write_all(fd, data)
            finally:
                os.close(fd)
        self._digests[rel] = digest.hexdigest()

    def tail(self, start: int) -> tuple[dict[str, str], dict[str, str]]:
        """The digests and kept texts of the files written after the first `start` ones: what a render lane in
        another process (clusterforge.forked) sends back to be `adopt`ed."""
        digests = dict(list(self.digests.items())[start:])
        return digests, {rel: self._kept[rel] for rel in digests if rel in self._kept}

    def adopt(self, digests: Mapping[str, str], kept: Mapping[str, str]) -> None:
        """Take in files that another process wrote into this tree's new folder (`tail` there)."""
        for rel, digest in digests.items():
            if rel in self._paths:
                raise ValueError(f"two renderers write {rel}")
            self._paths[rel] = None
            self._digests[rel] = digest
        self._kept.update(kept)

    def begin(self) -> Path:
        """The new folder, made at the first call (another process forked after this writes into it too)."""
        with _output_errors(self.target):
            return self._staging or self._start()

    def _start(self) -> Path:
        """The new folder, held (fsops.hold) so that another render's clean-up leaves it alone."""
        parent = self.target.parent
        self._made_parents = [p for p in (parent, *parent.parents) if not p.exists()]
        parent.mkdir(parents=True, exist_ok=True)
        with locked(parent):
            self._staging = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.{_NEW}", dir=parent))
            self._new_files = NewFiles(str(self._staging))
            self._hold = hold(self._staging)
        return self._staging

    def commit(self) -> None:
        """Put the new folder in place; raise OutputError and leave `target` as it was when that cannot be
        done safely."""
        self._settle()
        with _output_errors(self.target):
            staging = self.begin()
            with locked(self.target.parent):
                _write_locked(staging, set(self._paths), self.target, self.force)
        self._committed = True


def write_tree(files: dict[str, str], target: Path, *, force: bool = False) -> None:
    """Write `files` (relative path -> text, a manifest among them) to the folder `target`; raise OutputError
    and leave `target` as it was when that cannot be done safely."""
    for rel in files:
        _checked_path(rel, target)
    with StagedTree(target, force=force) as staged:
        for rel, text in sorted(files.items()):
            staged.put(rel, text)
        staged.commit()


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


def _holds(path: Path, data: bytes) -> bool:
    """Whether the file on disk is `data`; read only up to its size (a longer file, a FIFO or a device
    differs, and is not read)."""
    try:
        return read_regular(path, len(data))[1] == data
    except (OSError, InputRefused):
        return False


def compare_tree(files: dict[str, str], target: Path) -> TreeDiff:
    diff = TreeDiff()
    on_disk = (
        {rel for rel, entry in _walk(target) if not entry.is_dir(follow_symlinks=False)} if target.is_dir() else set()
    )
    for rel, text in sorted(files.items()):
        if rel not in on_disk:
            diff.missing.append(rel)
        elif not _holds(target / rel, text.encode("utf-8")):
            diff.stale.append(rel)
    ours = manifest_files(target) or set()
    diff.extra = sorted((on_disk & ours) - set(files))
    diff.unmanaged = sorted(on_disk - ours - set(files))
    return diff
