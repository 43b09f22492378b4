#!/usr/bin/env bash
# Coverage of the package, including the CLI processes the tests start (coverage's `patch = subprocess`,
# configured in pyproject.toml). Optional and slower than tests/run.sh; extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check -e '.[test,coverage]'
python3 -m coverage erase
python3 -m coverage run -m pytest -q "$@"
python3 -m coverage combine -q
python3 -m coverage report
