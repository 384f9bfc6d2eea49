#!/usr/bin/env bash
# once/cron_reference.sh - src/core's time zones and cron expressions
# against an independent reference: random zones, instants and
# expressions, each answered by the cron_probe program and by Python's
# zoneinfo with a brute-force matcher (cron_reference.py). Skipped (77)
# without python3's zoneinfo or the system's tz database.
set -euo pipefail
src=${SB_SOURCE_DIR:?SB_SOURCE_DIR must point at the source tree}
build=${SB_BUILD_DIR:?SB_BUILD_DIR must point at the build tree}
if ! command -v python3 >/dev/null || ! python3 -c 'import zoneinfo' 2>/dev/null; then
    echo "skipped: python3 with zoneinfo is not installed"
    exit 77
fi
if [[ ! -f /usr/share/zoneinfo/Europe/Berlin ]]; then
    echo "skipped: no tz database in /usr/share/zoneinfo"
    exit 77
fi
exec python3 "$src/tests/once/cron_reference.py" "$build/tests/cron_probe"
