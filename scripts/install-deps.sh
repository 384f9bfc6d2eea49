#!/usr/bin/env bash
# Install the Debian packages sqlbus needs, only those missing. Runs as
# root (or through sudo when available).
#   install-deps.sh          to build and to test (make check, CI)
#   install-deps.sh --build  to build and run only (make serve, make run)
#   install-deps.sh --bench  to test, and wrk for bench/run's HTTP passes
set -euo pipefail
build_only=0
[ "${1:-}" = --build ] && build_only=1
bench=0
[ "${1:-}" = --bench ] && bench=1
# tzdata: the zones of schedules' cron expressions (T41).
pkgs=(build-essential cmake ninja-build pkg-config
      libsqlite3-dev libpq-dev libjansson-dev libcmocka-dev
      libmicrohttpd-dev libcurl4-openssl-dev unixodbc-dev tzdata)
# odbc-postgresql (psqlODBC): the tests prove the ODBC driver through it;
# tdsodbc (FreeTDS): they load SQL Server's driver (no server here).
[ $build_only = 1 ] ||
    pkgs+=(clang clang-format sqlite3 curl openssl postgresql postgresql-contrib jq python3
           odbc-postgresql tdsodbc)
[ $bench = 0 ] || pkgs+=(wrk)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' \
        || missing+=("$p")
done
# The dashboard's browser tests (tests/ui, rule S15): Debian's chromium,
# driven by playwright-core under node. node and npm count as present
# whichever package brought them (a nodejs that bundles npm conflicts
# with Debian's npm package).
if [ $build_only = 0 ]; then
    [ -x /usr/bin/chromium ] || missing+=(chromium)
    command -v node >/dev/null 2>&1 || missing+=(nodejs)
    command -v npm >/dev/null 2>&1 || missing+=(npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# FreeTDS registers itself with unixODBC only when debconf says so.
if [ $build_only = 0 ] && ! odbcinst -q -d -n FreeTDS >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo odbcinst -i -d -f /usr/share/tdsodbc/odbcinst.ini >/dev/null
fi
# playwright-core, pinned by tests/ui/package-lock.json (it downloads no
# browser; the tests use /usr/bin/chromium).
ui="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/ui"
if [ $build_only = 0 ] && [ -f "$ui/package-lock.json" ] &&
    [ ! -d "$ui/node_modules/playwright-core" ]; then
    echo "installing tests/ui/node_modules (npm ci)"
    (cd "$ui" && npm ci --no-audit --no-fund --loglevel=error)
fi
