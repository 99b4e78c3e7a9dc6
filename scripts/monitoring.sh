#!/usr/bin/env bash
# The dashboard and the alerts against a real Prometheus (Debian's
# prometheus package): it scrapes the API and the worker every second
# during the k6 checkout scenario (labelled as the chart's ServiceMonitor
# labels them), then every panel's query must have returned data and every
# alert's expression must evaluate; the main panels are drawn in
# .local/monitoring/dashboard.svg. Run: scripts/monitoring.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v prometheus >/dev/null 2>&1 || scripts/debian.sh prometheus
source scripts/lib/stack.sh
work=.local/monitoring
rm -rf "$work" && mkdir -p "$work"
stack_free_port 18380; api_port=$port
stack_free_port $((api_port + 1)); worker_port=$port
stack_free_port $((worker_port + 1)); prom_port=$port
cat >"$work/prometheus.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: ticket-api-metrics
    static_configs: [{targets: ["127.0.0.1:$api_port"], labels: {namespace: tickets, pod: api-1}}]
  - job_name: ticket-worker-metrics
    static_configs: [{targets: ["127.0.0.1:$worker_port"], labels: {namespace: tickets, pod: worker-1}}]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
prom_pid=$!
trap 'kill $prom_pid 2>/dev/null || true' EXIT
stack_wait_for "$prom_port"
started=$(date +%s)
TICKET_K6_API_PORT=$api_port TICKET_K6_WORKER_ADDR="127.0.0.1:$worker_port" \
  TICKET_USERS=300 TICKET_SEATS=80 TICKET_VUS=20 TICKET_DURATION="${TICKET_MONITORING_DURATION:-30s}" TICKET_HOLD_SECONDS=2 \
  scripts/k6.sh checkout
ended=$(date +%s)
venv="$(scripts/venv.sh 'helm-python-sdk==0.2.2' 'kubernetes-validate==1.37.0' 'pyyaml>=6' 'pytest>=8')"
"$venv/bin/python" scripts/lib/monitoring_check.py "http://127.0.0.1:$prom_port" "$started" "$ended" "$work/dashboard.svg"
# The README's picture (a run longer than the panels' 1-minute rates):
# TICKET_MONITORING_DURATION=150s TICKET_DASHBOARD_PICTURE=docs/screenshots/dashboard.svg scripts/monitoring.sh
if [ -n "${TICKET_DASHBOARD_PICTURE:-}" ]; then cp "$work/dashboard.svg" "$TICKET_DASHBOARD_PICTURE"; fi
