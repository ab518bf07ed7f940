# monitor in a container: docker build -t monitor . && docker run -p 9108:9108 monitor
# Mount your own config over /app/config/monitor.yaml (or pass --config); data lives in /var/lib/monitor.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY monitor ./monitor
COPY config ./config
RUN pip install --no-cache-dir . \
 && useradd --system --home /var/lib/monitor --create-home monitor
USER monitor
WORKDIR /var/lib/monitor
# No internet price-list fetch by litellm; metrics reachable from outside the container.
ENV LITELLM_LOCAL_MODEL_COST_MAP=True \
    MONITOR_METRICS_HOST=0.0.0.0 \
    OLLAMA_HOST=http://host.docker.internal:11434
EXPOSE 9108
VOLUME ["/var/lib/monitor"]
ENTRYPOINT ["monitor"]
CMD ["run", "--config", "/app/config/monitor.yaml", "--db", "/var/lib/monitor/monitor.db"]
