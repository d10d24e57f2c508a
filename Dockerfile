# innet's image: the embedded switch, the controller and the host agent in one Python venv.
# Used by docker-compose.yml (switch, controller, worker services).
#
#   docker build -t innet:latest .                       # or: docker-compose build (v2: docker compose build)
#   docker build --build-arg PIP_INDEX_URL=https://mirror.example/simple -t innet:latest .
#
# BASE_IMAGE is pinned by this ARG; where no registry is reachable, docker/build-base.sh
# builds it from Debian packages (debootstrap) under the same name.
# PIP_INDEX_URL / PIP_EXTRA_INDEX_URL: the package index the host's pip uses (innet's
# docker runtime passes them from `pip config list` / the environment; empty: PyPI).
# docker/certs/*.crt (optional, not in git): extra CA certificates pip must trust while
# building (a TLS-inspecting proxy); used in the build stage only, never in the image.
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS build
ARG PIP_INDEX_URL=
ARG PIP_EXTRA_INDEX_URL=
ARG PIP_TRUSTED_HOST=
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-venv ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/innet
COPY docker/certs/ /tmp/certs/
COPY constraints.txt pyproject.toml setup.py README.md /src/
# dependencies first: this layer is reused while only innet's own sources change; the `ml`
# extra (scikit-learn: the digits data set) is for the workers' demo training
RUN set -e; cat /etc/ssl/certs/ca-certificates.crt /tmp/certs/*.crt > /tmp/ca.pem 2>/dev/null || true; \
    export PIP_CERT=/tmp/ca.pem PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1; \
    [ -n "$PIP_INDEX_URL" ] && export PIP_INDEX_URL; [ -n "$PIP_EXTRA_INDEX_URL" ] && export PIP_EXTRA_INDEX_URL; \
    [ -n "$PIP_TRUSTED_HOST" ] && export PIP_TRUSTED_HOST; \
    deps=$(python3 -c "import tomllib; t = tomllib.load(open('/src/pyproject.toml','rb'))['project']; print(' '.join(t['dependencies'] + t['optional-dependencies']['ml']))"); \
    /opt/innet/bin/pip install -q -c /src/constraints.txt $deps
COPY . /src
RUN set -e; export PIP_CERT=/tmp/ca.pem PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1; \
    /opt/innet/bin/pip install -q --no-deps /src \
 && /opt/innet/bin/python -c "import innet.testbed.ina.compose, innet.switch.server, innet.host.agent.agent"

FROM ${BASE_IMAGE} AS runtime
# cpp: innet's P4 front-end preprocesses with the system C preprocessor, as p4c does.
# gcc + libc6-dev: the native executor compiles each pipeline to C at start (without a
# compiler the switch falls back to the slower python executor).
# /var/cache/innet (INNET_NATIVE_CACHE, also holding the start cache): writable by the
# `innet` user, whose home is a real directory, so compiled pipelines are kept and reused.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 cpp gcc libc6-dev >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --create-home --home-dir /home/innet --shell /usr/sbin/nologin innet \
 && mkdir -p /results /var/cache/innet/native && chown innet /results /var/cache/innet /var/cache/innet/native
COPY --from=build /opt/innet /opt/innet
ENV PATH=/opt/innet/bin:$PATH PYTHONUNBUFFERED=1 INNET_NATIVE_CACHE=/var/cache/innet/native
LABEL org.innet.component=innet
USER innet
WORKDIR /results
CMD ["innet-switch", "--help"]
