#!/usr/bin/env bash
# The one test command (README and CI): installs what the tests need, then lint, types and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages the tests drive for real (one name a line in tests/apt-packages.txt).
mapfile -t apt_packages < <(grep -v '^\s*#' tests/apt-packages.txt | grep -v '^\s*$' || true)
missing=()
for package in "${apt_packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing system packages: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  # Wait (up to 10 minutes) for another apt or dpkg that holds the lock instead of failing at once.
  lock_wait=(-o DPkg::Lock::Timeout=600)
  $sudo_cmd apt-get "${lock_wait[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get "${lock_wait[@]}" install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -e '.[test]'

# Python bytecode, compiled once a run into a folder outside the tree, even where the environment asks for none
# (PYTHONDONTWRITEBYTECODE): the suite starts clusterforge hundreds of times, and compiling its modules again on
# every start cost 0.18 s each (tests/test_error_corpus.py and test_cli_help.py: 46 s without, 28 s with).
PYTHONPYCACHEPREFIX="$(mktemp -d "${TMPDIR:-/tmp}/clusterforge-pyc.XXXXXXXX")"
export PYTHONPYCACHEPREFIX
trap 'rm -rf "$PYTHONPYCACHEPREFIX"' EXIT
unset PYTHONDONTWRITEBYTECODE
python3 -m ruff check clusterforge tests benchmarks
python3 -m ruff format --check clusterforge tests benchmarks
python3 -m mypy
python3 -m pytest -q "$@"
