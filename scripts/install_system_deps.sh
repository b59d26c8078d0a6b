#!/usr/bin/env bash
# System packages the integration tests start as real servers: the Debian prometheus binary (and npx, for the
# durable broker's s3rver, which comes with the machine's node/npm). Installs only what is missing.
set -euo pipefail
if ! command -v prometheus >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing prometheus (Debian package) for the metrics tests"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q prometheus >/dev/null
  else
    echo "warning: prometheus is not installed (apt-get install -y prometheus); the scrape tests will fail" >&2
  fi
fi
