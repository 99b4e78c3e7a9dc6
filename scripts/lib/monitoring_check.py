"""After scripts/monitoring.sh's run: every panel of the dashboard returned
data from the real Prometheus during the run, and every alert's expression
(the chart's rules as rendered) evaluates without error. The main panels
are drawn as they were (PICTURE, an SVG: the README's picture)."""

import json
import os
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "ticket"
prometheus, started, ended, picture = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
sys.path.insert(0, str(Path(__file__).resolve().parent))
from dashboard_picture import draw, legend  # noqa: E402

# The panels the picture shows, by title.
PICTURED = [
    "Requests/s by status",
    "4xx and 5xx answers/s",
    "Line length",
    "Decisions/s",
    "Time to decision",
    "Seats free, held and sold (concerts on sale)",
]


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
drawn = {}
dashboard = json.loads((CHART / "dashboards" / "sale.json").read_text())
for panel in dashboard["panels"]:
    for target in panel["targets"]:
        expr = target["expr"].replace("$namespace", "tickets").replace("$release", "ticket")
        series = query_range(expr)
        points = sum(len(s["values"]) for s in series)
        print(f"panel {panel['title']!r} [{target['legendFormat']}]: {len(series)} series, {points} points")
        if not points:
            failures.append(f"panel {panel['title']!r}: {expr} returned nothing")
        unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit", "short")
        lines = drawn.setdefault(panel["title"], (unit, []))[1]
        for s in series:
            name = legend(target["legendFormat"], s["metric"])
            lines.append((name, [(float(t), float(v)) for t, v in s["values"] if v not in ("NaN", "+Inf", "-Inf")]))
missing = [title for title in PICTURED if title not in drawn]
if missing:
    failures.append(f"panels to draw not in the dashboard: {missing}")
else:
    # From the first scrape with data to the last (the stack starts after
    # the clock does, and its database is dropped before the end).
    times = [t for title in PICTURED for _, points in drawn[title][1] for t, _ in points] or [started, ended]
    picture.write_text(draw([(t, *drawn[t]) for t in PICTURED], min(times), max(times),
                            os.environ.get("TICKET_PICTURE_SUBTITLE", "scripts/monitoring.sh: the k6 checkout scenario, scraped by Prometheus every second")))
    print(f"main panels drawn in {picture}")
for rule in alert_rules():
    series = query_range(rule["expr"])
    print(f"alert {rule['alert']}: evaluates ({len(series)} series firing-or-pending over the run)")
if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("every panel returned data; every alert's expression evaluates")
