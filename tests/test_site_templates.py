"""Site templates (`render --templates DIR`) are trusted to print, not to run code: they render in Jinja's
sandbox, and the site's folder gives only regular files of a bounded size reached without a symbolic link.
Every refusal is a located CF-RENDER-001 (exit 1) that writes nothing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from helpers import REPO, run_cli

BLUEPRINT = "blueprints/l40s-inference.yaml"
TEMPLATE = "slurm/gres.conf.j2"  # rendered for this blueprint
SECRET = "s3cr3t-shadow-line"


def render_with(site: Path, out: Path) -> tuple[int, str, str]:
    result = run_cli("render", BLUEPRINT, "-o", str(out), "--templates", str(site))
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return result.returncode, result.stdout, result.stderr


def site_with(tmp_path: Path, text: str) -> Path:
    site = tmp_path / "site"
    (site / "slurm").mkdir(parents=True)
    (site / TEMPLATE).write_text(text, encoding="utf-8")
    return site


@pytest.mark.parametrize(
    "payload",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ cycler.__init__.__globals__.os.popen('touch {marker}').read() }}",
        "{{ lipsum.__globals__['os'].system('touch {marker}') }}",
        "{{ '{0.__class__.__mro__}'.format('') }}",
    ],
)
def test_a_site_template_cannot_run_code(payload: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    site = site_with(tmp_path, "# header\n" + payload.replace("{marker}", str(marker)) + "\n")
    code, stdout, _ = render_with(site, tmp_path / "out")
    assert code == 1, stdout
    assert "CF-RENDER-001" in stdout and "SecurityError" in stdout, stdout
    assert f"{site / TEMPLATE}:2:1: error CF-RENDER-001" in stdout  # the template's line
    assert "subprocess" not in stdout and "<class" not in stdout
    assert not marker.exists()
    assert not (tmp_path / "out").exists()


def secret_file(tmp_path: Path) -> Path:
    """Stands for /etc/shadow: a file outside the site's folder."""
    secret = tmp_path / "elsewhere" / "gres.conf.j2"
    secret.parent.mkdir()
    secret.write_text(f"{SECRET}\n", encoding="utf-8")
    return secret


def test_a_site_template_that_is_a_link_is_refused(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "slurm").mkdir(parents=True)
    (site / TEMPLATE).symlink_to(secret_file(tmp_path))
    code, stdout, stderr = render_with(site, tmp_path / "out")
    assert code == 1, stdout
    assert f"{site / TEMPLATE}: error CF-RENDER-001" in stdout and "symbolic link" in stdout, stdout
    assert SECRET not in stdout + stderr
    assert not (tmp_path / "out").exists()


def test_a_site_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "slurm").symlink_to(secret_file(tmp_path).parent, target_is_directory=True)
    code, stdout, stderr = render_with(site, tmp_path / "out")
    assert code == 1 and "CF-RENDER-001" in stdout and "symbolic link" in stdout, stdout
    assert SECRET not in stdout + stderr


def test_a_template_link_inside_the_folder_is_refused_too(tmp_path: Path) -> None:
    """Read as files only: a link is refused wherever it points (no race between a check and the read)."""
    site = site_with(tmp_path, "# {{ nodes | length }}\n")
    (site / "slurm" / "gres.conf.j2").rename(site / "real.j2")
    (site / TEMPLATE).symlink_to(site / "real.j2")
    code, stdout, _ = render_with(site, tmp_path / "out")
    assert code == 1 and "symbolic link" in stdout, stdout


@pytest.mark.parametrize("kind", ["fifo", "folder", "oversized", "binary"])
def test_a_site_template_that_is_not_a_small_text_file_is_refused(kind: str, tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "slurm").mkdir(parents=True)
    path = site / TEMPLATE
    if kind == "fifo":
        os.mkfifo(path)  # would hang a reader waiting for a writer
    elif kind == "folder":
        path.mkdir()
    elif kind == "oversized":
        path.write_text("#" * (1024 * 1024) + "\n", encoding="utf-8")
    else:
        path.write_bytes(b"\xff\xfe{{ x }}\n")
    code, stdout, _ = render_with(site, tmp_path / "out")
    assert code == 1, stdout
    assert f"{path}: error CF-RENDER-001" in stdout, stdout
    assert not (tmp_path / "out").exists()


def test_the_shipped_templates_render_alike_in_the_sandbox(tmp_path: Path) -> None:
    """Every shipped template, copied into a site folder, renders in the sandbox to the committed files."""
    site = tmp_path / "site"
    shutil.copytree(REPO / "templates", site)
    committed = REPO / "inventories" / "h200-training-pod"
    result = run_cli(
        "render", "blueprints/h200-training-pod.yaml", "-o", str(committed), "--check", "--templates", str(site)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "fresh" in result.stdout
