"""Write a rendered tree into its output folder, or compare it with what is there (--check).

The folder is clusterforge's only when it says so: it is missing, empty, or holds a previous render's
`manifest.json`. Such a folder is replaced as a whole (built beside it, then swapped in), and of what it held
only the files the previous manifest lists are dropped: anything a person put there is carried over, and its
folders keep their modes. One with another file system mounted inside is refused. Any other folder is refused
unless the caller forces it; then files are written into it one by one and nothing of its own is touched but
the files of the same path.

Everything below the folder that holds the output folder is reached through folder descriptors, a part of a
path at a time, never through a symbolic link, whenever one is put there (write_behind_child.open_folder).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .. import codes
from ..errors import ClusterforgeError, Finding, Severity, display_name
from ..inputs import InputRefused, read_regular
from ..version import __version__
from .fsops import FolderBusy, held, hold, locked, mount_points, remove, swap_in
from .paths import UnsafePath, check_relative
from .pieces import FileText, whole
from .write_behind import WriteBehind
from .write_behind_child import FOLDER_FLAGS, NEW_FILE_FLAGS, NewFiles, open_folder, write_all

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
        return _listed(read_regular(folder / MANIFEST, MAX_MANIFEST_BYTES)[1])
    except (OSError, InputRefused):
        return None


def _manifest_in(dir_fd: int, name: str) -> set[str] | None:
    """`manifest_files` of the folder `name` in the folder `dir_fd`; None for anything but a folder."""
    try:
        folder = os.open(name, FOLDER_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        return _listed(_read(folder, MANIFEST))
    except OSError:
        return None
    finally:
        os.close(folder)


def _open_file(root: int, rel: str) -> int:
    """A descriptor to read the file `rel` below the folder descriptor `root`, never through a symbolic link."""
    folder, _, name = rel.rpartition("/")
    dir_fd = open_folder(root, folder)
    try:
        # O_NONBLOCK: a FIFO planted in the folder must not make the open wait; _read refuses it by its type
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def _read(root: int, rel: str, limit: int = MAX_MANIFEST_BYTES) -> bytes:
    """The bytes of the regular file `rel` below `root`, of at most `limit` bytes; OSError for anything else."""
    with open(_open_file(root, rel), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(errno.EINVAL, f"{rel} is not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"{rel} is larger than {limit:,} bytes")
    return data


def _listed(text: bytes) -> set[str] | None:
    try:
        data = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
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


class _MountInside(Exception):
    """Another file system is mounted at this folder (a path relative to the output folder)."""


def _survey(fd: int, mounts: Collection[str], rel: str = "") -> Iterator[tuple[str, os.stat_result | None]]:
    """(relative path, the status of a folder or None) of everything in the folder `fd`, by name, a
    folder before what it holds, never through a symbolic link. Raises _MountInside where another file system
    is mounted: a folder whose device differs, or one of `mounts` (a bind mount, of a folder or of a file, may
    have its folder's device)."""
    dev = os.fstat(fd).st_dev
    with os.scandir(fd) as entries:
        inside = sorted(
            (entry.name, entry.stat(follow_symlinks=False) if entry.is_dir(follow_symlinks=False) else None)
            for entry in entries
        )
    for name, st in inside:
        path = f"{rel}/{name}" if rel else name
        if path in mounts or (st is not None and st.st_dev != dev):
            raise _MountInside(path)
        if st is None:
            yield path, None
            continue
        yield path, st
        folder = os.open(name, FOLDER_FLAGS, dir_fd=fd)
        try:
            yield from _survey(folder, mounts, path)
        finally:
            os.close(folder)


def _kept_entries(
    old: int, ours: set[str], mounts: Collection[str]
) -> tuple[dict[str, bool], dict[str, os.stat_result]]:
    """What the folder `old` holds that no previous render wrote (files, links and empty folders a person put
    there: path -> whether a folder), and the status of all its folders by path ("" for itself)."""
    entries = list(_survey(old, mounts))
    holding = {rel.rpartition("/")[0] for rel, _ in entries}
    kept: dict[str, bool] = {}
    folders = {"": os.fstat(old)}
    for rel, st in entries:
        if st is not None:
            folders[rel] = st
            if rel not in holding:
                kept[rel] = True
        elif rel not in ours:
            kept[rel] = False
    return kept, folders


def _collisions(files: set[str], kept: dict[str, bool]) -> list[str]:
    """Kept paths that a new file would replace, or that stand where a new file needs a folder (or back)."""
    new_dirs = {"/".join(rel.split("/")[:i]) for rel in files for i in range(1, rel.count("/") + 1)}
    found = []
    for rel, is_dir in kept.items():
        parents = {"/".join(rel.split("/")[:i]) for i in range(1, rel.count("/") + 1)}
        if rel in files or (rel in new_dirs and not is_dir) or parents & files:
            found.append(rel)
    return sorted(found)


def _carry_over(kept: dict[str, bool], old: int, new: int) -> None:
    """Hard-link (or copy, where links cannot be made) what a person put in the folder `old` into `new`."""
    for rel, is_dir in kept.items():
        folder, _, name = rel.rpartition("/")
        into = open_folder(new, folder, make=True)
        try:
            if is_dir:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=into)
                continue
            source = open_folder(old, folder)
            try:
                _link_or_copy(source, into, name)
            finally:
                os.close(source)
        finally:
            os.close(into)


def _link_or_copy(source: int, into: int, name: str) -> None:
    try:
        os.link(name, name, src_dir_fd=source, dst_dir_fd=into, follow_symlinks=False)
        return
    except OSError:
        st = os.lstat(name, dir_fd=source)
        if not (stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode)):
            raise
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(name, dir_fd=source), name, dir_fd=into)
        return
    read = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=source)
    with open(read, "rb") as original, open(os.open(name, NEW_FILE_FLAGS, 0o600, dir_fd=into), "wb") as copy:
        shutil.copyfileobj(original, copy)
        os.chmod(copy.fileno(), stat.S_IMODE(st.st_mode))
        os.utime(copy.fileno(), ns=(st.st_atime_ns, st.st_mtime_ns))


def _keep_modes(folders: dict[str, os.stat_result], new: int) -> None:
    """Give the folders of `new` that the previous tree had the owner (where this process may) and the mode
    they had there; the root last (until then only this process's user can reach what is inside)."""
    for rel, was in sorted(folders.items(), key=lambda item: item[0], reverse=True):
        try:
            folder = open_folder(new, rel)
        except OSError:
            continue  # no longer a folder in the new tree
        try:
            now = os.fstat(folder)
            if (now.st_uid, now.st_gid) != (was.st_uid, was.st_gid):
                with contextlib.suppress(PermissionError):
                    os.chown(folder, was.st_uid, was.st_gid)
            os.chmod(folder, stat.S_IMODE(was.st_mode))
        finally:
            os.close(folder)


def clean_leftovers(parent: int, target: Path) -> None:
    """Remove what a killed render left beside `target` (in the folder `parent`), whatever it is, never what a
    link points to; if it was killed between two renames, put the previous tree (a folder, never a link) back
    first. Call with the folder's lock held. A staging folder that a running render still holds (fsops.held)
    is left alone."""
    names = sorted(os.listdir(parent))
    new = [name for name in names if name.startswith(f".{target.name}.{_NEW}")]
    old = [name for name in names if name.startswith(f".{target.name}.{_OLD}")]
    if target.name not in names:
        olds = [name for name in old if _manifest_in(parent, name) is not None]
        if olds:
            os.rename(olds[-1], target.name, src_dir_fd=parent, dst_dir_fd=parent)
            old.remove(olds[-1])
    for name in new + old:
        if not (name in new and held(parent, name)):
            with contextlib.suppress(OSError):
                remove(parent, name, mount_points(target.parent / name))


def _swap(staging: str, target: Path, parent: int) -> None:
    """Put the folder `staging` at `target` (names in the folder `parent`) and remove the previous one."""
    old = f".{target.name}.{_OLD}{os.getpid()}"
    swap_in(parent, staging, target.name, old)
    with contextlib.suppress(OSError):
        remove(parent, old, mount_points(target.parent / old))


def _way_clear(into: int, rel: str, target: Path, *, make: bool) -> int | None:
    """The descriptor of the folder below `into` that the file `rel` goes in (made with `make`, else None);
    CF-OUT-002 where a file or a symbolic link stands where a folder is needed, or a folder where the file goes."""
    folder, _, name = rel.rpartition("/")
    try:
        fd = open_folder(into, folder, make=make)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        raise _fail(codes.OUTPUT_WOULD_REPLACE, target, f"cannot write {rel}: {exc.filename} is not a folder") from None
    try:
        in_the_way = stat.S_ISDIR(os.lstat(name, dir_fd=fd).st_mode)
    except FileNotFoundError:
        in_the_way = False
    if in_the_way or not make:
        os.close(fd)
    if in_the_way:
        raise _fail(codes.OUTPUT_WOULD_REPLACE, target, f"cannot write {rel}: a folder of that name is in the way")
    return fd if make else None


def _replace_file(staging: int, folder: int, rel: str) -> None:
    """Put the staged file `rel` in the folder `folder` under a temporary name, then rename it over its own."""
    name = rel.rpartition("/")[2]
    while True:
        temp = f".{name}.{_NEW}{os.urandom(4).hex()}"
        with contextlib.suppress(FileExistsError):
            fd = os.open(temp, NEW_FILE_FLAGS, 0o600, dir_fd=folder)
            break
    try:
        with open(fd, "wb") as handle, open(_open_file(staging, rel), "rb") as staged:
            shutil.copyfileobj(staged, handle)
            os.chmod(handle.fileno(), 0o644)
        os.rename(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise


def _write_into(staging: int, files: set[str], into: int, target: Path) -> None:
    """Forced write into a folder that is not ours: file by file (each atomically), the manifest last,
    never through a symbolic link, deleting nothing. What stands in the way is refused before anything is
    written, and again where it appears later (a link put there meanwhile is never followed)."""
    for rel in files:
        _way_clear(into, rel, target, make=False)
    for rel in sorted(files, key=lambda rel: (rel == MANIFEST, rel)):
        folder = _way_clear(into, rel, target, make=True)
        assert folder is not None
        try:
            _replace_file(staging, folder, rel)
        finally:
            os.close(folder)


def _write_locked(staging: int, staging_name: str, files: set[str], target: Path, force: bool, parent: int) -> None:
    clean_leftovers(parent, target)
    try:
        kind = os.lstat(target.name, dir_fd=parent).st_mode
    except FileNotFoundError:
        os.chmod(staging, 0o755)
        _swap(staging_name, target, parent)
        return
    if not stat.S_ISDIR(kind):
        what = "a symbolic link" if stat.S_ISLNK(kind) else "a file"
        raise _fail(codes.OUTPUT_NOT_OURS, target, f"the output path is {what}, not a folder")
    old = os.open(target.name, FOLDER_FLAGS, dir_fd=parent)
    try:
        _write_over(staging, staging_name, files, target, force, parent, old)
    finally:
        os.close(old)


def _write_over(
    staging: int, staging_name: str, files: set[str], target: Path, force: bool, parent: int, old: int
) -> None:
    """Write into the folder `target` that is there (`old`)."""
    empty = not os.listdir(old)
    ours = set() if empty else _manifest_in(old, ".")
    if ours is None and not force:
        raise _fail(
            codes.OUTPUT_NOT_OURS,
            target,
            "this folder holds files that clusterforge did not write "
            "(no manifest.json of an earlier render); nothing was written",
            "render into an empty or new folder, or pass --force to write into this one "
            "(files of the same path are replaced; nothing else is deleted)",
        )
    mounts = mount_points(target)
    if "" in mounts or os.fstat(old).st_dev != os.fstat(parent).st_dev:
        if not (force or empty):
            raise _fail(
                codes.OUTPUT_UNWRITABLE,
                target,
                "the output folder is a mount point, which cannot be replaced as a whole",
                "render into a folder inside it, or pass --force to write file by file",
            )
        ours = None
    if ours is None:
        _write_into(staging, files, old, target)
        return
    try:
        kept, folders = _kept_entries(old, ours, mounts)
    except _MountInside as inside:
        raise _fail(
            codes.OUTPUT_UNWRITABLE,
            target,
            f"{inside} inside the output folder is a mount point, which replacing the folder would move away "
            "with the previous render; nothing was written",
            "unmount it (or mount it outside the output folder), or render into another folder",
        ) from None
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
    _carry_over(kept, old, staging)
    _keep_modes(folders, staging)
    _swap(staging_name, target, parent)


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
        if self._new_files is not None:
            self._new_files.close()
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
        if not self._committed:
            assert self._hold is not None
            return _read(self._hold, rel).decode("utf-8")
        target = os.open(self.target, FOLDER_FLAGS)
        try:
            return _read(target, rel).decode("utf-8")
        finally:
            os.close(target)

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
            self.begin()
            assert self._hold is not None
            with contextlib.suppress(OSError):
                self._behind = WriteBehind(self._hold)

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
        another process (clusterforge.runtime.forked) sends back to be `adopt`ed."""
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
        """The new folder, held (fsops.hold) so that another render's clean-up leaves it alone; its files are
        written through the hold's descriptor."""
        parent = self.target.parent
        self._made_parents = [p for p in (parent, *parent.parents) if not p.exists()]
        parent.mkdir(parents=True, exist_ok=True)
        with locked(parent):
            self._staging = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.{_NEW}", dir=parent))
            self._hold = hold(self._staging)
            self._new_files = NewFiles(self._hold)
        return self._staging

    def commit(self) -> None:
        """Put the new folder in place; raise OutputError and leave `target` as it was when that cannot be
        done safely."""
        self._settle()
        with _output_errors(self.target):
            staging = self.begin()
            assert self._hold is not None
            with locked(self.target.parent) as parent:
                _write_locked(self._hold, staging.name, set(self._paths), self.target, self.force, parent)
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
