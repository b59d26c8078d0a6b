#!/usr/bin/env bash
# What building and running the images here needs (scripts/images.py, tests/slow/test_images.py): Debian's dockerd
# and containerd, and debootstrap for the base image. Installs only what is missing; needs root and apt.
set -euo pipefail
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v containerd >/dev/null 2>&1 || missing+=(containerd)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -eq 0 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install_image_tools: need root and apt-get to install ${missing[*]}" >&2
  exit 1
fi
echo "installing ${missing[*]} (Debian packages) for the image builds"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
