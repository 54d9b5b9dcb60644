# What the test suite needs beyond Rust, installed or started when missing. Sourced by
# .ci/run (CI) and .ci/test (the README's test command); Debian's packages, as root.

ensure_postgres() {
  if pg_isready -q -h 127.0.0.1 -p 5432; then return 0; fi
  echo "PostgreSQL is not running; starting it"
  local version
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  for _ in $(seq 1 60); do
    pg_isready -q -h 127.0.0.1 -p 5432 && return 0
    sleep 1
  done
  echo "PostgreSQL did not come up" >&2
  return 1
}

ensure_browser() {
  # The page tests drive Debian's Chromium through chromedriver.
  if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then return 0; fi
  echo "installing chromium and chromium-driver"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q chromium chromium-driver >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null; }
}

ensure_node_clients() {
  # The better-auth client test runs the real npm client (locked in package-lock.json).
  if ! command -v npm >/dev/null 2>&1; then
    echo "Node.js (with npm) is needed for the better-auth client test; installing nodejs and npm"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q nodejs npm >/dev/null ||
      { apt-get update -q >/dev/null && apt-get install -y -q nodejs npm >/dev/null; }
  fi
  npm ci --prefix tests/clients/better-auth --no-audit --no-fund --loglevel=error
  # The test push service (web-push-testing) and its self-test's sender (web-push).
  npm ci --prefix tests/clients/push-service --no-audit --no-fund --loglevel=error
}

ensure_python_icalendar() {
  # The iCalendar export tests read every export with a second parser: Python's icalendar
  # package for Debian's python3 (a python3 earlier on PATH may be a shim without it).
  if /usr/bin/python3 -c 'import icalendar' 2>/dev/null; then return 0; fi
  echo "installing python3-icalendar"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q python3-icalendar >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q python3-icalendar >/dev/null; }
}

# Pinned CalDAV servers the CalDAV client tests start (tests/api/support/caldav_servers.rs).
RADICALE_PIN=3.9.0
XANDIKOS_PIN=0.4.10

caldav_venv() {
  # A fresh venv at $1 with the pip requirement $2 (Debian's python3 needs python3-venv).
  local python=${PYTHON:-python3}
  rm -rf "$1"
  if ! "$python" -m venv "$1" 2>/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q python3-venv >/dev/null ||
      { apt-get update -q >/dev/null && apt-get install -y -q python3-venv >/dev/null; }
    rm -rf "$1"
    "$python" -m venv "$1"
  fi
  "$1/bin/python" -m pip install -q --disable-pip-version-check "$2"
}

ensure_caldav_servers() {
  # Radicale and Xandikos from PyPI, each in its own venv under BOWLINE_TOOLS_DIR; skipped
  # when the installed one reports the pinned version.
  local tools=${BOWLINE_TOOLS_DIR:-$HOME/.cache/bowline}
  mkdir -p "$tools"
  if [ "$("$tools/radicale-venv/bin/radicale" --version 2>/dev/null)" != "$RADICALE_PIN" ]; then
    echo "installing radicale $RADICALE_PIN into $tools/radicale-venv"
    caldav_venv "$tools/radicale-venv" "radicale[bcrypt]==$RADICALE_PIN"
  fi
  if [ "$("$tools/xandikos-venv/bin/xandikos" --version 2>/dev/null)" != "xandikos $XANDIKOS_PIN" ]; then
    echo "installing xandikos $XANDIKOS_PIN into $tools/xandikos-venv"
    caldav_venv "$tools/xandikos-venv" "xandikos==$XANDIKOS_PIN"
  fi
}

# The API fuzzer .ci/schemathesis/run drives (PyPI), in its own venv.
SCHEMATHESIS_PIN=4.32.5
SCHEMATHESIS_VENV=${BOWLINE_TOOLS_DIR:-$HOME/.cache/bowline}/schemathesis-venv

ensure_schemathesis() {
  if [ "$("$SCHEMATHESIS_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null)" = "$SCHEMATHESIS_PIN" ]; then
    return 0
  fi
  echo "installing schemathesis $SCHEMATHESIS_PIN into $SCHEMATHESIS_VENV"
  mkdir -p "$(dirname "$SCHEMATHESIS_VENV")"
  caldav_venv "$SCHEMATHESIS_VENV" "schemathesis==$SCHEMATHESIS_PIN"
}

ensure_promtool() {
  # promtool (Debian's prometheus package) checks the alert rules, the dashboard's queries and
  # a live scrape (.ci/check-operations, .ci/check-scrape). The package also ships a
  # Prometheus server; its start at install is refused, so nothing listens on its ports.
  if command -v promtool >/dev/null 2>&1; then return 0; fi
  echo "installing prometheus (for promtool)"
  export DEBIAN_FRONTEND=noninteractive
  local guard=/usr/sbin/policy-rc.d added=""
  if [ ! -e "$guard" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$guard" && chmod +x "$guard" && added=yes
  fi
  local status=0
  apt-get install -y -q --no-install-recommends prometheus >/dev/null ||
    { apt-get update -q >/dev/null &&
      apt-get install -y -q --no-install-recommends prometheus >/dev/null; } ||
    status=$?
  if [ -n "$added" ]; then rm -f "$guard"; fi
  return $status
}
