#!/usr/bin/env bash
# Installs everything the tests need (into .venv, plus Debian's chromium and bubblewrap when run as root)
# and runs ruff, mypy and the whole test suite on two pytest workers (LARIK_TEST_WORKERS sets how
# many; 0 runs it in this process). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(command -v python3.11 || command -v python3)
# chromium for the browser tests; bubblewrap for the check's fallback confinement where Landlock is
# missing (tests/test_os_confined.py).
if { [ ! -x /usr/bin/chromium ] || ! command -v bwrap >/dev/null; } && [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium bubblewrap >/dev/null
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
.venv/bin/ruff check larik_jupyter tests bench
.venv/bin/mypy
exec .venv/bin/pytest -q -rs -p no:cacheprovider -n "${LARIK_TEST_WORKERS:-2}" --dist loadfile "$@"
