#!/usr/bin/env bash
# Installs the Debian package of every command the formal checks need that is
# missing (make proofs, make model; scripts/services.sh does the same for
# make test). Arguments: COMMAND:PACKAGE pairs, e.g. coqc:coq spin:spin cc:gcc.
set -euo pipefail
need=()
for pair in "$@"; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "formal: missing ${need[*]} and not root: install them with apt-get" >&2
  exit 1
fi
echo "formal: installing ${need[*]} from Debian packages" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2 || true
apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
