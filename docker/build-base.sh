#!/bin/sh
# Build the Dockerfile's base image locally from Debian packages, for machines that reach
# Debian's archive but no container registry (`docker pull debian:bookworm-slim` fails).
#
#   docker/build-base.sh [TAG]        # default TAG: debian:bookworm-slim (the Dockerfile's BASE_IMAGE)
#
# It does nothing when TAG is already present or can be pulled. Otherwise it runs
# `debootstrap --variant=minbase bookworm` into a temporary directory (as root), trims
# docs, man pages and apt lists the way Debian's slim images do, and `docker import`s the
# directory as TAG. Needs: root, debootstrap, a running dockerd. Mirror: $DEBIAN_MIRROR
# (default: the first deb.debian.org-style URI of the host's apt sources, else
# http://deb.debian.org/debian).
set -eu

TAG="${1:-debian:bookworm-slim}"
SUITE="${DEBIAN_SUITE:-bookworm}"

say() { echo "build-base: $*" >&2; }

if docker image inspect "$TAG" >/dev/null 2>&1; then
    say "$TAG is present; nothing to do"
    exit 0
fi
if docker pull "$TAG" >/dev/null 2>&1; then
    say "pulled $TAG"
    exit 0
fi
command -v debootstrap >/dev/null 2>&1 || { say "debootstrap is missing: apt-get install debootstrap"; exit 1; }
[ "$(id -u)" = 0 ] || { say "debootstrap needs root (run as root or with sudo)"; exit 1; }

mirror="${DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
    mirror=$(grep -hoE '^(URIs:|deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
             | head -n1 | sed -E 's/^(URIs:|deb) +//; s/ +$//') || true
fi
mirror="${mirror:-http://deb.debian.org/debian}"

root=$(mktemp -d /tmp/innet-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
say "debootstrap --variant=minbase $SUITE from $mirror (a few minutes)"
debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$root.log" 2>&1 || {
    say "debootstrap failed; last lines of $root.log:"; tail -n 5 "$root.log" >&2; exit 1; }
rm -f "$root.log"
# what Debian's -slim images leave out
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log
printf 'deb %s %s main\ndeb %s %s-updates main\n' "$mirror" "$SUITE" "$mirror" "$SUITE" > "$root/etc/apt/sources.list"
tar -C "$root" -c . | docker import \
    --change 'CMD ["bash"]' \
    --change 'ENV LANG=C.UTF-8' \
    --message "debootstrap --variant=minbase $SUITE (innet docker/build-base.sh)" \
    - "$TAG" >/dev/null
say "imported $TAG ($(docker image inspect --format '{{.Size}}' "$TAG") bytes)"
