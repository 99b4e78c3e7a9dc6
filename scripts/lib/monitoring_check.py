"""After scripts/monitoring.sh's run: every panel of the dashboard returned
data from the real Prometheus during the run, and every alert's expression
(the chart's rules as rendered) evaluates without error."""

import json
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "ticket"
prometheus, started, ended = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def query_range(expr):
    params = urllib.parse.urlencode({"query": expr, "start": started, "end": ended, "step": "2s"})
    with urllib.request.urlopen(f"{prometheus}/api/v1/query_range?{params}", timeout=30) as reply:
        body = json.load(reply)
    assert body["status"] == "success", body
    return body["data"]["result"]


def alert_rules():
    values = {"auth": {"secret": "k" * 40}, "metrics": {"prometheusRule": {"enabled": True, "assumeApiAvailable": True}}}
    rendered = helm.Chart.load(CHART).render(values, name="ticket", namespace="tickets", is_install=True)
    for path, text in rendered.items():
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc and doc.get("kind") == "PrometheusRule":
                return [r for g in doc["spec"]["groups"] for r in g["rules"]]
    raise SystemExit("no PrometheusRule rendered")


failures = []
dashboard = json.loads((CHART / "dashboards" / "sale.json").read_text())
for panel in dashboard["panels"]:
    for target in panel["targets"]:
        expr = target["expr"].replace("$namespace", "tickets").replace("$release", "ticket")
        series = query_range(expr)
        points = sum(len(s["values"]) for s in series)
        print(f"panel {panel['title']!r} [{target['legendFormat']}]: {len(series)} series, {points} points")
        if not points:
            failures.append(f"panel {panel['title']!r}: {expr} returned nothing")
for rule in alert_rules():
    series = query_range(rule["expr"])
    print(f"alert {rule['alert']}: evaluates ({len(series)} series firing-or-pending over the run)")
if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("every panel returned data; every alert's expression evaluates")
