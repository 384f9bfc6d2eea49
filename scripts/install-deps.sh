#!/usr/bin/env bash
# Install the Debian packages sqlbus needs to build and test, only those
# missing. Runs as root (or through sudo when available).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config clang
      libsqlite3-dev sqlite3 libpq-dev libjansson-dev libcmocka-dev
      libmicrohttpd-dev curl postgresql postgresql-contrib jq python3)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' \
        || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
