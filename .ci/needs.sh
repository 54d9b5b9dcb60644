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
