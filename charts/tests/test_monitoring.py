"""The chart's alerts (templates/prometheusrule.yaml) and dashboard
(dashboards/sale.json, templates/dashboard-configmap.yaml) as rendered:
checked by promtool (Debian's prometheus package, installed by
scripts/chart-test.sh), the alerts unit-tested by `promtool test rules` with
alerts-test.yaml and each linked to its entry in docs/runbook.md."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from test_chart import find, render

HERE = Path(__file__).resolve().parent
RUNBOOK = HERE.parents[1] / "docs" / "runbook.md"
DASHBOARD = HERE.parent / "ticket" / "dashboards" / "sale.json"
ENABLED = {"metrics": {"prometheusRule": {"enabled": True, "assumeApiAvailable": True}}}


def promtool():
    tool = os.environ.get("TICKET_PROMTOOL") or shutil.which("promtool")
    assert tool, "promtool not found: scripts/chart-test.sh installs Debian's prometheus package"
    return tool


def rules(values=ENABLED):
    return find(render(values), "PrometheusRule")


def alerts():
    return [rule for group in rules()["spec"]["groups"] for rule in group["rules"]]


def run(*args, cwd):
    done = subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_rules_are_off_by_default_and_need_the_operators_api():
    assert not [d for d in render() if d["kind"] == "PrometheusRule"]
    asked = {"metrics": {"prometheusRule": {"enabled": True}}}
    assert not [d for d in render(asked) if d["kind"] == "PrometheusRule"], "no API, no rule"


def test_promtool_accepts_the_rules_and_their_templates(tmp_path):
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rules()["spec"]["groups"]}))
    assert "SUCCESS" in run("check", "rules", "rules.yaml", cwd=tmp_path)


def test_every_alert_fires_when_it_should_and_only_then(tmp_path):
    # promtool compares annotations too; they are checked above (templates
    # parse) and below (runbook links), so the unit tests see labels only.
    groups = rules()["spec"]["groups"]
    for group in groups:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    tests = yaml.safe_load((HERE / "alerts-test.yaml").read_text())
    tests["rule_files"] = ["rules.yaml"]
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    run("test", "rules", "tests.yaml", cwd=tmp_path)
    firing = {
        case["alertname"]
        for test in tests["tests"]
        for case in test["alert_rule_test"]
        if case["exp_alerts"]
    }
    silent = {
        case["alertname"]
        for test in tests["tests"]
        for case in test["alert_rule_test"]
        if not case["exp_alerts"]
    }
    names = {rule["alert"] for rule in alerts()}
    assert names - firing == set(), "alerts never shown firing"
    assert names - silent == set(), "alerts never shown silent"


def test_every_alert_has_a_runbook_entry_and_links_it():
    headings = {
        line[3:].strip() for line in RUNBOOK.read_text().splitlines() if line.startswith("## ")
    }
    for rule in alerts():
        name = rule["alert"]
        assert name in headings, f"docs/runbook.md has no '## {name}'"
        assert rule["annotations"]["runbook_url"].endswith("/docs/runbook.md#" + name.lower())
        assert rule["annotations"]["summary"]
        assert rule["labels"]["severity"] in {"critical", "warning"}


def test_thresholds_and_labels_come_from_values():
    values = {
        "metrics": {
            "prometheusRule": {
                "enabled": True,
                "assumeApiAvailable": True,
                "labels": {"release": "prometheus"},
                "runbookBaseUrl": "https://runbooks.example.com/ticket/docs/runbook.md",
                "thresholds": {
                    "oldestRequestSeconds": 12,
                    "decisionP99Seconds": 2,
                    "unavailableRatio": 0.05,
                    "holdsOverdueSeconds": 30,
                    "leaseTakeovers": 3,
                    "deliveriesFailingFor": "5m",
                    "poolUsedRatio": 0.9,
                    "serverConnectionsRatio": 0.85,
                },
            }
        }
    }
    rule = rules(values)
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    by_name = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"]}
    assert re.search(r"> 12$", by_name["TicketRequestsWaitingTooLong"]["expr"])
    assert re.search(r"> 2$", by_name["TicketDecisionsSlow"]["expr"])
    assert re.search(r"> 3$", by_name["TicketLeaseTakeovers"]["expr"])
    assert by_name["TicketMailFailing"]["for"] == "5m"
    assert by_name["TicketWorkersAbsent"]["annotations"]["runbook_url"] == (
        "https://runbooks.example.com/ticket/docs/runbook.md#ticketworkersabsent"
    )


def dashboard_configmap(values):
    return find(render(values), "ConfigMap", "-dashboard")


def test_the_dashboard_is_a_configmap_for_grafanas_sidecar_when_asked():
    assert not [d for d in render() if d["metadata"]["name"].endswith("-dashboard")], "off by default"
    configmap = dashboard_configmap({"metrics": {"dashboard": {"enabled": True}}})
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = json.loads(configmap["data"]["ticket-sale.json"])
    variables = {v["name"]: v for v in shipped["templating"]["list"]}
    assert variables["namespace"]["current"]["value"] == "tickets"
    assert variables["release"]["current"]["value"] == "ticket"
    assert shipped["panels"] == json.loads(DASHBOARD.read_text())["panels"]
    custom = dashboard_configmap(
        {"metrics": {"dashboard": {"enabled": True, "labels": {"grafana_dashboard": "sale"}, "annotations": {"grafana_folder": "Box office"}}}}
    )
    assert custom["metadata"]["labels"]["grafana_dashboard"] == "sale"
    assert custom["metadata"]["annotations"] == {"grafana_folder": "Box office"}


def panel_queries():
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel["title"], target["expr"])
        for panel in dashboard["panels"]
        for target in panel["targets"]
    ]


def test_every_panel_shows_something_and_its_query_parses(tmp_path):
    dashboard = json.loads(DASHBOARD.read_text())
    assert all(panel["targets"] for panel in dashboard["panels"])
    # promtool parses expressions in rules: each query becomes one.
    recorded = [
        {"record": f"ticket:panel_{i}", "expr": expr.replace("$namespace", "tickets").replace("$release", "ticket")}
        for i, (_, expr) in enumerate(panel_queries())
    ]
    (tmp_path / "panels.yaml").write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": recorded}]}))
    assert "SUCCESS" in run("check", "rules", "panels.yaml", cwd=tmp_path)


def test_the_dashboard_shows_what_a_sale_needs():
    # Requests/s and 4xx/5xx, the line, decisions/s and their time, holds
    # and expiries, seats free/held/sold, webhooks, mail, the pool.
    needed = {
        "http_server_requests_total",
        "ticket_queue_depth",
        "ticket_oldest_open_request_seconds",
        "ticket_decisions_total",
        "ticket_decision_latency_seconds_bucket",
        "ticket_worker_holds_expired_total",
        "ticket_seats",
        "ticket_webhook_deliveries_total",
        "ticket_mail_deliveries_total",
        "ticket_db_pool_connections",
    }
    used = {name for _, expr in panel_queries() for name in re.findall(r"[a-z_]+(?=\{)", expr)}
    assert needed <= used, needed - used
    seats = [expr for _, expr in panel_queries() if "ticket_seats" in expr]
    assert seats and all('state' in expr for expr in seats)
