# monitor in a container. Build and run:
#   docker build -t monitor .
#   docker run -d -p 9108:9108 -v monitor-data:/var/lib/monitor \
#              -v $PWD/monitor.yaml:/etc/monitor/monitor.yaml:ro monitor
# Build arguments (all optional):
#   BASE             the base image (default python:3.11-slim). Any Debian-like image with python3 (3.11+),
#                    python3-venv and ca-certificates works, e.g. one built offline with mmdebstrap (.ci/deploy).
#   EXTRA_CA_CERTS   PEM text of extra CA certificates, for a TLS-intercepting proxy or a private CA:
#                    --build-arg EXTRA_CA_CERTS="$(cat /usr/local/share/ca-certificates/*.crt)"
#                    pip in the build trusts them, and so do the checks the image runs.
#   PIP_INDEX_URL    a package index mirror.
# Dependencies come from requirements.lock, every file checked against its hash (pip --require-hashes).
# No BuildKit features: the legacy builder (and docker-compose 1.29) builds it too.
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
ARG EXTRA_CA_CERTS=""
ARG PIP_INDEX_URL=""
USER root
RUN if [ -n "$EXTRA_CA_CERTS" ]; then \
      printf '%s\n' "$EXTRA_CA_CERTS" > /usr/local/share/ca-certificates/monitor-build-extra.crt \
      && update-ca-certificates >/dev/null; \
    fi
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_INDEX_URL=${PIP_INDEX_URL:-https://pypi.org/simple}
RUN python3 -m venv /opt/monitor
COPY requirements.lock /tmp/requirements.lock
RUN /opt/monitor/bin/pip install --quiet --require-hashes --no-deps --only-binary=:all: -r /tmp/requirements.lock
COPY pyproject.toml README.md /src/
COPY monitor /src/monitor
RUN /opt/monitor/bin/pip install --quiet --no-deps --no-build-isolation /src \
 && /opt/monitor/bin/pip uninstall --quiet --yes pip setuptools

FROM ${BASE}
ARG EXTRA_CA_CERTS=""
USER root
RUN if [ -n "$EXTRA_CA_CERTS" ]; then \
      printf '%s\n' "$EXTRA_CA_CERTS" > /usr/local/share/ca-certificates/monitor-build-extra.crt \
      && update-ca-certificates >/dev/null; \
    fi \
 && (getent group monitor >/dev/null || groupadd --system --gid 10001 monitor) \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/monitor --no-create-home \
            --shell /usr/sbin/nologin monitor \
 && mkdir -p /var/lib/monitor /etc/monitor \
 && chown 10001:10001 /var/lib/monitor
COPY --from=build /opt/monitor /opt/monitor
COPY deploy/docker/monitor.yaml /etc/monitor/monitor.yaml
COPY deploy/docker/healthcheck.py /opt/monitor/healthcheck.py
# LITELLM_LOCAL_MODEL_COST_MAP: no price-list fetch from the internet at start.
# OLLAMA_HOST: compose names the service "ollama"; with plain docker run, pass -e OLLAMA_HOST=...
#   (and --add-host=host.docker.internal:host-gateway for an Ollama on the host).
ENV PATH=/opt/monitor/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    MONITOR_CONFIG=/etc/monitor/monitor.yaml \
    MONITOR_METRICS_LISTEN=0.0.0.0:9108 \
    OLLAMA_HOST=http://ollama:11434
USER 10001:10001
WORKDIR /var/lib/monitor
VOLUME ["/var/lib/monitor"]
EXPOSE 9108
# /healthz answers 200 while check cycles complete. The check asks where the daemon really listens: its
# --metrics-listen flag, else $MONITOR_METRICS_LISTEN, else the config's metrics port. Python: a slim base has no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/opt/monitor/bin/python", "/opt/monitor/healthcheck.py"]
ENTRYPOINT ["monitor"]
CMD ["run", "--db", "/var/lib/monitor/monitor.db"]
