#!/usr/bin/env bash
# Installs everything innet needs on a fresh Debian bookworm machine, as root:
# Debian packages (Mininet, cpp, iproute2, ...) and a venv at .venv built on Debian's
# python3 with innet installed editable. Mininet is the one Debian Python package innet
# imports: the venv sees it through a .pth file and sees no other system package (a Debian
# matplotlib or numpy beside the venv's own would mix versions).
# Every Python package comes at the version pinned in constraints.txt, so two setups give the
# same versions. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")"

# Another apt/dpkg (unattended-upgrades, a second setup.sh) may hold the package locks: wait for
# them up to INNET_APT_WAIT seconds, then say which are held (testbed/core/apt_locks.py).
APT_WAIT=${INNET_APT_WAIT:-600}
wait_for_apt() {
  /usr/bin/python3 testbed/core/apt_locks.py "$APT_WAIT"
}

APT_PKGS=(mininet cpp iproute2 iputils-ping ethtool tcpdump python3-venv python3-dev gcc procps psmisc
          docker.io docker-compose debootstrap docker-registry openssl)
missing=()
for p in "${APT_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: missing Debian packages (${missing[*]}) and not root: run as root once" >&2
    exit 2
  fi
  echo "setup.sh: apt-get install ${missing[*]}"
  wait_for_apt
  apt-get -o DPkg::Lock::Timeout="$APT_WAIT" update -qq
  wait_for_apt
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$APT_WAIT" install -y -qq "${missing[@]}" >/dev/null
fi

PY=/usr/bin/python3
if [ -f .venv/pyvenv.cfg ] && grep -q "include-system-site-packages = true" .venv/pyvenv.cfg; then
  echo "setup.sh: .venv sees every Debian Python package; recreating it with Mininet only"
  rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then
  echo "setup.sh: creating .venv on $($PY --version)"
  $PY -m venv .venv
fi
MININET_PKG=$($PY -c "import mininet, os; print(os.path.dirname(mininet.__file__))")
SITE=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_path('purelib'))")
mkdir -p .venv/debian
ln -sfn "$MININET_PKG" .venv/debian/mininet
echo "$(pwd)/.venv/debian" > "$SITE/innet-debian-mininet.pth"
stamp=.venv/.innet-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ] \
   || [ constraints.txt -nt "$stamp" ]; then
  echo "setup.sh: pip install -e .[test,plot,ml,docker] (versions from constraints.txt)"
  .venv/bin/python -m pip install -q -c constraints.txt --upgrade pip
  .venv/bin/python -m pip install -q -c constraints.txt -e '.[test,plot,ml,docker]'
  touch "$stamp"
fi
# torch (CPU) for the gloo baseline of `innet bench`/`innet demo`; kept out of innet's core
# imports. The wheel comes from the local wheel directory when pip is configured with it
# (find-links), else from PyPI. INNET_NO_TORCH=1 skips it (the demo then runs innet only).
TORCH_VERSION=2.13.0
if [ "${INNET_NO_TORCH:-0}" != 1 ] && ! .venv/bin/python -c "import torch" 2>/dev/null; then
  echo "setup.sh: pip install torch==$TORCH_VERSION (gloo baseline)"
  wheel_dir=/opt/wheels
  if [ -d "$wheel_dir" ]; then
    .venv/bin/python -m pip install -q -c constraints.txt --find-links "$wheel_dir" "torch==$TORCH_VERSION" \
      || echo "setup.sh: torch not installed; innet demo/bench will skip gloo" >&2
  else
    .venv/bin/python -m pip install -q -c constraints.txt "torch==$TORCH_VERSION" \
      || echo "setup.sh: torch not installed; innet demo/bench will skip gloo" >&2
  fi
fi
# Byte-code of innet's own modules, written once here: with PYTHONDONTWRITEBYTECODE set (as in
# many CI and sandbox environments) every process would otherwise compile them again (0.15-0.2 s
# of each innet-switch start). Python still checks each file's mtime, so an edited module is
# compiled from source until the next setup.sh.
.venv/bin/python -m compileall -q -x '(^|/)(\.venv|\.git|tests|results|build)(/|$)' . >/dev/null \
  || echo "setup.sh: compileall failed; innet runs, only its start-up is slower" >&2
echo "setup.sh: ready (.venv/bin/innet, .venv/bin/python -m pytest)"
