FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY monitor ./monitor
COPY config ./config
RUN pip install --no-cache-dir . \
 && useradd --system --home /var/lib/monitor --create-home monitor
USER monitor
ENV LITELLM_LOCAL_MODEL_COST_MAP=True
WORKDIR /var/lib/monitor
EXPOSE 9108
ENTRYPOINT ["monitor"]
CMD ["run", "--config", "/app/config/monitor.yaml"]
