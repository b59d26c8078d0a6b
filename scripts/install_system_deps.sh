#!/usr/bin/env bash
# System packages the integration tests start as real servers. Installs only what is missing:
# - the Debian prometheus binary (the metrics scrape tests);
# - the S3 emulator s3rver (npm s3rver@3.7.1): the on-disk alternative to moto (the default S3 store of the durable
#   broker, a Python package) that tests/integration/test_kafka_bus.py also checks; into $SKBQA_NODE_PREFIX (default
#   ~/.cache/skbqa/node), where skbqa.devstack.tansu looks for it first. Installing it here, rather than letting `npx`
#   fetch it during a test, keeps the tests off the network and their timing honest.
set -euo pipefail
S3RVER_VERSION="3.7.1"
NODE_PREFIX="${SKBQA_NODE_PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/skbqa/node}"

if ! command -v prometheus >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing prometheus (Debian package) for the metrics tests"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q prometheus >/dev/null
  else
    echo "warning: prometheus is not installed (apt-get install -y prometheus); the scrape tests will fail" >&2
  fi
fi

if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing nodejs + npm (Debian packages) for s3rver, the durable broker storage"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm >/dev/null
  else
    echo "warning: npm is not installed (apt-get install -y nodejs npm); the durable-broker fault tests will fail" >&2
  fi
fi

installed="$NODE_PREFIX/node_modules/s3rver/package.json"
if command -v npm >/dev/null 2>&1 && ! grep -q "\"version\": \"$S3RVER_VERSION\"" "$installed" 2>/dev/null; then
  echo "installing s3rver@$S3RVER_VERSION into $NODE_PREFIX"
  mkdir -p "$NODE_PREFIX"
  npm install --prefix "$NODE_PREFIX" --no-audit --no-fund --loglevel=error "s3rver@$S3RVER_VERSION" >/dev/null
fi
