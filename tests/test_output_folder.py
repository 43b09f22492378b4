"""The output folder: only clusterforge's own is replaced, nothing a person put there is lost, kills and
concurrent renders leave a whole tree, and file-system failures are clear errors with the old tree untouched."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, run_cli

from clusterforge.errors import ClusterforgeError
from clusterforge.output import fsops, write_behind, writer
from clusterforge.output.writer import MANIFEST, manifest_files, with_manifest, write_tree

BP = "blueprints/l40s-inference.yaml"


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under `folder` (files by content hash, links by target, folders by name)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


def tree(version: int, files: int = 3) -> dict[str, str]:
    body = {f"family/file{i}.txt": f"v{version} file {i}\n" for i in range(files)}
    return with_manifest(body, f"{version:064d}")


def assert_whole(folder: Path) -> int:
    """The folder holds one render, complete: every file its manifest lists, with that content. Its version."""
    listed = manifest_files(folder)
    assert listed is not None, f"{folder} has no manifest"
    versions = {(folder / rel).read_text().split()[0] for rel in listed - {MANIFEST}}
    assert len(versions) == 1, versions
    return int(versions.pop()[1:])


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if "clusterforge-" in p.name)


# --- whose folder it is ---------------------------------------------------------------------------------


def test_render_into_a_repository_root_is_refused_and_touches_nothing(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shutil.copy(REPO / BP, repo / "cluster.yaml")
    (repo / "README.md").write_text("ours\n")
    before = snapshot(repo)
    result = run_cli("render", str(repo / "cluster.yaml"), "-o", str(repo))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "CF-OUT-001" in result.stdout and "--force" in result.stdout and "nothing was written" in result.stdout
    assert "Traceback" not in result.stderr
    assert snapshot(repo) == before
    assert leftovers(tmp_path) == []


def test_a_folder_of_unrelated_files_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "some" / "dir"
    home.mkdir(parents=True)
    (home / "thesis.tex").write_text("years of work\n")
    result = run_cli("render", BP, "-o", str(home))
    assert result.returncode == 1 and "CF-OUT-001" in result.stdout
    assert snapshot(home) == {"thesis.tex": hashlib.sha256(b"years of work\n").hexdigest()}


def test_an_empty_or_missing_folder_is_written(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for name in ("empty", "missing/deeper"):
        result = run_cli("render", BP, "-o", str(tmp_path / name))
        assert result.returncode == 0, result.stdout
        assert manifest_files(tmp_path / name) is not None


def test_files_a_person_added_survive_a_rerender_and_old_outputs_go(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(tree(1, files=4), out)
    (out / "NOTES.md").write_text("site notes\n")
    (out / "family" / "local.txt").write_text("kept\n")
    (out / "scratch").mkdir()
    (out / "link").symlink_to("/etc/hostname")
    write_tree(tree(2, files=2), out)
    assert assert_whole(out) == 2
    assert not (out / "family/file3.txt").exists(), "a file the previous render wrote and this one does not"
    assert (out / "NOTES.md").read_text() == "site notes\n"
    assert (out / "family/local.txt").read_text() == "kept\n"
    assert (out / "scratch").is_dir() and os.readlink(out / "link") == "/etc/hostname"


def test_a_new_output_never_silently_replaces_a_persons_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(tree(1, files=1), out)
    (out / "family/file2.txt").write_text("hand-written\n")
    before = snapshot(out)
    with pytest.raises(ClusterforgeError) as caught:
        write_tree(tree(2, files=3), out)
    assert caught.value.findings[0].code == "CF-OUT-002" and "family/file2.txt" in caught.value.findings[0].message
    assert snapshot(out) == before
    write_tree(tree(2, files=3), out, force=True)
    assert assert_whole(out) == 2


def test_force_writes_into_a_foreign_folder_file_by_file_and_deletes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "site"
    (folder / "family").mkdir(parents=True)
    (folder / "family/file0.txt").write_text("replaced\n")
    (folder / "family/other.txt").write_text("kept\n")
    (folder / ".git").mkdir()
    (folder / ".git/HEAD").write_text("ref: refs/heads/main\n")
    write_tree(tree(1), folder, force=True)
    assert assert_whole(folder) == 1
    assert (folder / "family/other.txt").read_text() == "kept\n"
    assert (folder / ".git/HEAD").read_text() == "ref: refs/heads/main\n"
    assert [p.name for p in folder.rglob("*clusterforge-*")] == []


def test_force_never_writes_through_a_symbolic_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "family").symlink_to(outside)
    with pytest.raises(ClusterforgeError) as caught:
        write_tree(tree(1), folder, force=True)
    assert caught.value.findings[0].code == "CF-OUT-002"
    assert list(outside.iterdir()) == []


def test_output_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("a file\n")
    with pytest.raises(ClusterforgeError) as caught:
        write_tree(tree(1), tmp_path / "out")
    assert caught.value.findings[0].code == "CF-OUT-001"
    assert (tmp_path / "out").read_text() == "a file\n"


@pytest.mark.parametrize(
    "rel",
    [
        "../escaped.svg",
        "/etc/passwd",
        "a/../../b",
        "a//b",
        ".hidden",
        "a/b\nc",
        "rack/\x00x",
        "é/x",
        "a/" + "b" * 200,
        "/".join("d" * 9),
    ],
)
def test_no_rendered_path_can_leave_the_folder(tmp_path: Path, rel: str) -> None:
    with pytest.raises(ClusterforgeError) as caught:
        write_tree({rel: "x\n", MANIFEST: "{}\n"}, tmp_path / "out")
    assert caught.value.findings[0].code == "CF-OUT-004"
    assert sorted(p.name for p in tmp_path.rglob("*")) == []


# --- kills and concurrent renders -----------------------------------------------------------------------


def killed_at(step: str, nth: int, action: Callable[[], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Run `action` in a child process that dies (SIGKILL-like: no cleanup runs) at the nth call of `step`."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        calls = {"n": 0}
        module, name = (os, step) if hasattr(os, step) and step != "exchange" else (fsops, "_renameat2_exchange")
        real = getattr(module, name)

        def dying(*args: Any, **kwargs: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == nth:
                os._exit(9)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, dying)
        try:
            action()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 9, f"the write never reached call {nth} of {step}"


BETWEEN_TWO_RENAMES = ("rename", 2)
"""Without renameat2: the old tree is moved aside, the new one not yet in place."""


def kill_points() -> Iterator[tuple[bool, str, int]]:
    """(renameat2 available, step, nth call): every step a write takes in that mode (with renameat2 the only
    rename is the old tree's move aside after the exchange)."""
    for can_exchange in (True, False):
        for step, nth in (("link", 1), ("rename", 1), ("exchange", 1), ("chmod", 1), ("mkdir", 2)):
            yield can_exchange, step, nth
    yield False, *BETWEEN_TWO_RENAMES


@pytest.mark.parametrize(("can_exchange", "step", "nth"), list(kill_points()))
def test_a_killed_render_leaves_a_whole_tree_and_the_next_run_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, can_exchange: bool, step: str, nth: int
) -> None:
    if not can_exchange:
        monkeypatch.setattr(fsops, "_renameat2_exchange", lambda *_: False)
    out = tmp_path / "out"
    write_tree(tree(1), out)
    (out / "NOTES.md").write_text("kept\n")
    killed_at(step, nth, lambda: write_tree(tree(2), out), monkeypatch)
    if (step, nth) == BETWEEN_TWO_RENAMES:
        assert not out.exists()  # the next run puts the previous tree back before it writes
    else:
        assert assert_whole(out) in (1, 2), "the folder is missing or mixed after a kill"
    write_tree(tree(3), out)
    assert assert_whole(out) == 3
    assert (out / "NOTES.md").read_text() == "kept\n"
    assert leftovers(tmp_path) == [], "the next run did not clean up"


def test_concurrent_renders_into_one_folder_both_finish_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "clusterforge", "render", BP, "-o", str(out)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], results
    assert run_cli("render", BP, "-o", str(out), "--check").returncode == 0
    assert leftovers(tmp_path) == []


def test_a_held_lock_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_tree(tree(1), out)
    monkeypatch.setattr(writer, "locked", lambda parent: fsops.locked(parent, timeout_s=0.3))
    with fsops.locked(tmp_path), pytest.raises(ClusterforgeError) as caught:
        write_tree(tree(2), out)
    assert caught.value.findings[0].code == "CF-OUT-005"
    assert assert_whole(out) == 1


# --- file-system failures -------------------------------------------------------------------------------


@pytest.fixture
def small_mount(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB tmpfs (needs root and mount rights; skipped where the machine does not allow it)."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_read_only_file_system_is_a_clear_error(small_mount: Path) -> None:
    out = small_mount / "out"
    assert run_cli("render", BP, "-o", str(out)).returncode == 0
    before = snapshot(out)
    subprocess.run(["mount", "-o", "remount,ro", str(small_mount)], check=True)
    result = run_cli("render", BP, "-o", str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "CF-OUT-003" in result.stdout and "Read-only file system" in result.stdout
    assert snapshot(out) == before


def test_a_full_disk_is_a_clear_error_and_leaves_nothing_behind(small_mount: Path) -> None:
    out = small_mount / "out"
    write_tree(tree(1), out)
    before = snapshot(out)
    big = with_manifest({f"f{i}.txt": "x" * 600_000 + "\n" for i in range(8)}, "0" * 64)
    with pytest.raises(ClusterforgeError) as caught:
        write_tree(big, out)
    assert caught.value.findings[0].code == "CF-OUT-003"
    assert "No space left on device" in caught.value.findings[0].message
    assert snapshot(out) == before
    assert leftovers(small_mount) == []


def test_a_mount_point_is_not_replaced_but_force_writes_into_it(small_mount: Path) -> None:
    write_tree(tree(1), small_mount)  # empty: written file by file
    assert assert_whole(small_mount) == 1
    with pytest.raises(ClusterforgeError) as caught:
        write_tree(tree(2), small_mount)
    assert caught.value.findings[0].code == "CF-OUT-003" and "mount point" in caught.value.findings[0].message
    assert assert_whole(small_mount) == 1
    write_tree(tree(2), small_mount, force=True)
    assert assert_whole(small_mount) == 2


# --- hostile file systems -------------------------------------------------------------------------------


def plant_link_before_second_file(
    monkeypatch: pytest.MonkeyPatch, folder: Callable[[], Path | None], outside: Path
) -> list[str]:
    """Once `family/file0.txt` is written in the folder `folder()` names, the next file created anywhere moves
    `family` aside (inside that folder) and leaves a symbolic link to `outside` in its place, just before
    the file is created: a link planted after every check was made. Returns where it was planted."""
    real_open = os.open
    planted: list[str] = []

    def opening(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        where = folder()
        if flags & os.O_CREAT and not planted and where is not None and (where / "family/file0.txt").is_file():
            os.rename(where / "family", where / "moved")
            os.symlink(outside, where / "family")
            planted.append(str(where))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", opening)
    return planted


def test_force_never_writes_through_a_link_planted_after_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "site"
    (folder / "family").mkdir(parents=True)
    (folder / "own.txt").write_text("not clusterforge's\n")
    planted = plant_link_before_second_file(monkeypatch, lambda: folder, outside)
    failed = None
    try:
        write_tree(tree(1, files=4), folder, force=True)
    except ClusterforgeError as exc:
        failed = exc
    monkeypatch.undo()
    assert planted, "the link was never planted"
    assert sorted(p.name for p in outside.iterdir()) == [], "a rendered file was written through the link"
    assert failed is not None and failed.findings[0].code == "CF-OUT-002", failed
    assert "family" in failed.findings[0].message


def staging_folder(parent: Path) -> Path | None:
    found = sorted(parent.glob(".out.clusterforge-new-*"))
    return found[0] if found else None


@pytest.mark.parametrize("behind", [False, True], ids=["here", "write-behind"])
def test_a_staged_render_never_writes_through_a_link_planted_in_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, behind: bool
) -> None:
    """A link put in the new folder while the render writes there (in this process, or in the write-behind
    process) is never followed: nothing lands outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    texts = tree(1, files=4)
    with contextlib.suppress(ClusterforgeError), writer.StagedTree(out) as staged:
        if behind:
            monkeypatch.setattr(write_behind, "BATCH", 1)  # each file goes to the process as it is put
            staged.write_behind()
        else:
            plant_link_before_second_file(monkeypatch, lambda: staging_folder(tmp_path), outside)
        staged.put("family/file0.txt", texts["family/file0.txt"])
        if behind:
            staging = staging_folder(tmp_path)
            assert staging is not None
            for _ in range(1000):
                if (staging / "family/file0.txt").is_file():
                    break
                time.sleep(0.01)
            os.rename(staging / "family", staging / "moved")
            os.symlink(outside, staging / "family")
        for rel in ("family/file1.txt", "family/file2.txt", "family/file3.txt", MANIFEST):
            staged.put(rel, texts[rel])
        staged.commit()
    monkeypatch.undo()
    assert sorted(p.name for p in outside.iterdir()) == [], "a rendered file was written through the link"


def mount_or_skip(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here: {done.stderr.decode().strip()}")


@pytest.mark.parametrize("how", ["tmpfs", "bind", "file-bind"])
def test_a_file_system_mounted_inside_the_output_folder_is_refused_and_untouched(tmp_path: Path, how: str) -> None:
    """Replacing the folder as a whole would move the mount away with the previous tree, then empty it. A bind
    mount of the same file system (of a folder or of a file) has its parent folder's device number: it is found
    all the same."""
    out = tmp_path / "out"
    write_tree(tree(1), out)
    (out / "runs" / "scratch").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if how == "tmpfs":
        mount_or_skip("-t", "tmpfs", "-o", "size=4m", "tmpfs", str(out / "runs" / "scratch"))
    elif how == "bind":
        mount_or_skip("--bind", str(elsewhere), str(out / "runs" / "scratch"))
    else:
        (elsewhere / "results.txt").write_text("")
        (out / "runs" / "scratch" / "results.txt").write_text("")
        mount_or_skip("--bind", str(elsewhere / "results.txt"), str(out / "runs" / "scratch" / "results.txt"))
    try:
        (out / "runs" / "scratch" / "results.txt").write_text("a week of runs\n")
        before = snapshot(out)
        with pytest.raises(ClusterforgeError) as caught:
            write_tree(tree(2), out)
        finding = caught.value.findings[0]
        assert finding.code == "CF-OUT-003", finding
        where = "runs/scratch/results.txt" if how == "file-bind" else "runs/scratch"
        assert f"{where} inside" in finding.message and "mount point" in finding.message
        assert snapshot(out) == before
        assert leftovers(tmp_path) == []
    finally:  # wherever the mount went (a render that moves it takes it along with the previous tree)
        for point in sorted(fsops.mount_points(tmp_path.resolve()), reverse=True):
            subprocess.run(["umount", "-l", str(tmp_path.resolve() / point)], check=False)


def test_a_rerender_keeps_the_modes_of_the_folder_and_of_what_it_carries_over(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree(tree(1), out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o755, "a new folder is readable by all, as before"
    (out / "private").mkdir()
    (out / "private/vault.txt").write_text("secret\n")
    (out / "private/inner").mkdir()
    os.chmod(out / "private/vault.txt", 0o644)
    os.chmod(out / "private/inner", 0o711)
    os.chmod(out / "private", 0o700)
    os.chmod(out / "family", 0o750)
    os.chmod(out, 0o700)
    write_tree(tree(2), out)
    assert assert_whole(out) == 2
    modes = {rel: stat.S_IMODE((out / rel).stat().st_mode) for rel in ("", "private", "private/inner", "family")}
    assert modes == {"": 0o700, "private": 0o700, "private/inner": 0o711, "family": 0o750}
    assert stat.S_IMODE((out / "private/vault.txt").stat().st_mode) == 0o644
    assert (out / "private/vault.txt").read_text() == "secret\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_rerender_by_root_keeps_the_owners_of_the_folders(tmp_path: Path) -> None:
    """A person's 0700 folder, made again by a render that root runs, is still theirs (not root's, which
    would shut them out of it), and so is the output folder."""
    out = tmp_path / "out"
    write_tree(tree(1), out)
    (out / "private").mkdir(mode=0o700)
    (out / "private/notes.txt").write_text("mine\n")
    for path in (out, out / "private", out / "private/notes.txt"):
        os.chown(path, 4321, 4322)
    write_tree(tree(2), out)
    owners = {
        rel: ((out / rel).stat().st_uid, (out / rel).stat().st_gid) for rel in ("", "private", "private/notes.txt")
    }
    assert owners == dict.fromkeys(("", "private", "private/notes.txt"), (4321, 4322))
    assert stat.S_IMODE((out / "private").stat().st_mode) == 0o700


LEFTOVER_KINDS = ["file", "folder", "link-to-folder", "link-to-file", "broken-link", "fifo"]


@pytest.mark.parametrize("kind", LEFTOVER_KINDS)
@pytest.mark.parametrize("which", ["new", "old"])
@pytest.mark.parametrize("present", [True, False], ids=["folder-there", "folder-missing"])
def test_a_leftover_of_any_kind_is_removed_and_never_followed(
    tmp_path: Path, kind: str, which: str, present: bool
) -> None:
    """Whatever a killed run (or anyone) left under a leftover's name goes at the next run; a link is removed,
    never what it points to, and is never put back as the output folder."""
    outside = tmp_path / "outside"
    write_tree(tree(7), outside)  # a render elsewhere: what a link points to must not be taken or emptied
    before = snapshot(outside)
    out = tmp_path / "out"
    if present:
        write_tree(tree(1), out)
    leftover = tmp_path / f".out.clusterforge-{which}-4242"
    if kind == "file":
        leftover.write_text("x\n")
    elif kind == "folder":
        (leftover / "sub").mkdir(parents=True)
        (leftover / "sub/link").symlink_to(outside)
    elif kind == "link-to-folder":
        leftover.symlink_to(outside)
    elif kind == "link-to-file":
        leftover.symlink_to(outside / MANIFEST)
    elif kind == "broken-link":
        leftover.symlink_to(tmp_path / "nothing")
    else:
        os.mkfifo(leftover)
    write_tree(tree(2), out)
    assert assert_whole(out) == 2 and not out.is_symlink()
    assert leftovers(tmp_path) == []
    assert snapshot(outside) == before


# --- render-check ---------------------------------------------------------------------------------------


def test_render_check_on_a_missing_or_empty_folder_fails(tmp_path: Path) -> None:
    missing = run_cli("render-check", "--blueprints", str(tmp_path / "nosuchdir"))
    assert missing.returncode == 2 and "is not a folder" in missing.stderr
    empty = run_cli("render-check", "--blueprints", str(tmp_path))
    assert empty.returncode == 2 and "no *.yaml blueprint" in empty.stderr


def test_export_to_an_unwritable_file_is_a_user_error(tmp_path: Path) -> None:
    result = run_cli("export", BP, "-o", str(tmp_path / "no-such-folder" / "topology.json"))
    assert result.returncode == 1 and "cannot write" in result.stderr and "internal error" not in result.stderr


def test_render_ends_with_a_summary_of_findings_files_and_report(tmp_path: Path) -> None:
    """The summary lists each unsuppressed warning, counts the findings as `check` does, and names the
    report, which exists where it says."""
    from clusterforge.pipeline import analyse, load_valid

    blueprint = REPO / "blueprints/gb200-nvl72.yaml"
    out = tmp_path / "out"
    result = run_cli("render", str(blueprint), "-o", str(out))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    findings = analyse(load_valid(blueprint)).findings
    warnings = [f for f in findings if f.severity.value == "warning" and not f.suppressed_by]
    assert warnings, "the example has warnings to list"
    for warning in warnings:
        assert any(f"warning {warning.code}: {warning.message}" in line for line in lines), warning.code
    check = run_cli("check", str(blueprint)).stdout.splitlines()[-1].split(": ", 1)[1]
    assert f"findings: {check} (all of them in the report)" in lines
    report = next(line for line in lines if line.startswith("report: "))
    assert report == f"report: {out}/handoff/report.md, {out}/handoff/report.html"
    assert (out / "handoff/report.md").is_file() and (out / "handoff/report.html").is_file()
    assert lines[0] == f"{out}: wrote {len(list(p for p in out.rglob('*') if p.is_file()))} files"
