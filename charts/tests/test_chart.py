"""The Helm chart, rendered and linted by Helm's own Go SDK (helm-python-sdk)
and every manifest validated against strict Kubernetes schemas
(kubernetes-validate). Run by `make test` through scripts/chart-test.sh."""

from pathlib import Path

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

CHART = Path(__file__).resolve().parents[1] / "ticket"
PRODUCTION = yaml.safe_load((CHART / "ci" / "production-values.yaml").read_text())
KUBE_VERSION = kubernetes_validate.latest_version()
# Custom resources have no schema in kubernetes-validate; tested by content.
CUSTOM_KINDS = {"ScaledObject", "TriggerAuthentication", "ServiceMonitor"}
RESTRICTED_POD_KINDS = {"Deployment", "StatefulSet", "Job"}


def render(values=None, **options):
    chart = helm.Chart.load(CHART)
    rendered = chart.render(values or {}, name="ticket", namespace="tickets", is_install=True, **options)
    docs = []
    for path, text in rendered.items():
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


def find(docs, kind, suffix=""):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]
    assert len(found) == 1, f"expected one {kind} *{suffix}, found {[d['metadata']['name'] for d in found]}"
    return found[0]


def kinds(docs):
    return sorted(d["kind"] for d in docs)


@pytest.mark.parametrize("values", [{}, PRODUCTION], ids=["defaults", "production"])
def test_helm_lint_is_clean(values):
    report = helm.lint(CHART, values, strict=True, namespace="tickets")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert not problems, problems
    assert not report["errors"], report["errors"]


@pytest.mark.parametrize("values", [{}, PRODUCTION], ids=["defaults", "production"])
def test_every_manifest_is_valid_under_strict_schemas(values):
    docs = render(values)
    assert docs
    for doc in docs:
        if doc["kind"] in CUSTOM_KINDS:
            continue
        kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)


@pytest.mark.parametrize("values", [{}, PRODUCTION], ids=["defaults", "production"])
def test_pods_are_restricted(values):
    for doc in render(values):
        if doc["kind"] not in RESTRICTED_POD_KINDS:
            continue
        pod = doc["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, doc["metadata"]["name"]
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        for container in pod["containers"]:
            sc = container["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False
            assert sc["readOnlyRootFilesystem"] is True
            assert sc["capabilities"]["drop"] == ["ALL"]
            assert "resources" in container or doc["kind"] == "StatefulSet"
        mounts = {m["mountPath"] for c in pod["containers"] for m in c.get("volumeMounts", [])}
        assert "/tmp" in mounts, "a writable /tmp on a read-only root"


def test_worker_role_may_only_read_its_own_configmap():
    docs = render()
    role = find(docs, "Role", "-worker")
    configmap = find(docs, "ConfigMap", "-worker")
    rules = [r for r in role["rules"] if "configmaps" in r["resources"]]
    assert len(rules) == 1
    assert rules[0]["resourceNames"] == [configmap["metadata"]["name"]]
    assert set(rules[0]["verbs"]) <= {"get", "list", "watch"}
    # Nothing else readable; the only other permission is creating Events.
    for rule in role["rules"]:
        if rule is not rules[0]:
            assert rule["resources"] == ["events"] and rule["verbs"] == ["create"]
    binding = find(docs, "RoleBinding", "-worker")
    worker = find(docs, "Deployment", "-worker")
    assert binding["subjects"][0]["name"] == worker["spec"]["template"]["spec"]["serviceAccountName"]


def test_worker_reads_its_configmap_live_without_a_restart_annotation():
    docs = render()
    worker = find(docs, "Deployment", "-worker")
    configmap = find(docs, "ConfigMap", "-worker")
    assert configmap["data"] == {
        "batchSize": "1000",
        "pollIntervalMs": "50",
        "leaseMs": "30000",
        "maxAttempts": "5",
    }
    annotations = worker["spec"]["template"]["metadata"].get("annotations", {})
    assert not any("checksum" in key for key in annotations)
    env = {e["name"]: e for e in worker["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["TICKET_WORKER_CONFIGMAP"]["value"] == configmap["metadata"]["name"]
    probe = worker["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]
    assert probe["httpGet"]["path"] == "/healthz"


def test_hpa_targets_the_api_which_then_has_no_fixed_replicas():
    docs = render()
    hpa = find(docs, "HorizontalPodAutoscaler", "-api")
    api = find(docs, "Deployment", "-api")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": api["metadata"]["name"]}
    assert "replicas" not in api["spec"]
    fixed = render({"api": {"autoscaling": {"enabled": False}, "replicaCount": 4}})
    assert "HorizontalPodAutoscaler" not in kinds(fixed)
    assert find(fixed, "Deployment", "-api")["spec"]["replicas"] == 4


def test_api_probes_readiness_on_the_database_and_liveness_without_it():
    container = find(render(), "Deployment", "-api")["spec"]["template"]["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"


def test_migrations_run_as_a_pre_install_pre_upgrade_hook_after_their_secrets():
    docs = render({"database": {"url": "mysql://u:p@db:3306/ticket"}, "auth": {"secret": "s" * 40}})
    job = find(docs, "Job", "-migrate")
    annotations = job["metadata"]["annotations"]
    assert set(annotations["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade"}
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["/usr/local/bin/ticket-api", "migrate"]
    secret = find(docs, "Secret", "-database")
    assert int(secret["metadata"]["annotations"]["helm.sh/hook-weight"]) < int(annotations["helm.sh/hook-weight"])
    assert secret["stringData"]["database-url"] == "mysql://u:p@db:3306/ticket"


def test_existing_secrets_are_used_and_not_created():
    docs = render(PRODUCTION)
    secrets = [d["metadata"]["name"] for d in docs if d["kind"] == "Secret"]
    assert secrets == []
    env = {e["name"]: e for e in find(docs, "Deployment", "-api")["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]["name"] == "ticket-database"
    assert env["TICKET_AUTH_SECRET"]["valueFrom"]["secretKeyRef"]["name"] == "ticket-auth"
    assert env["TICKET_ADMIN_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "ticket-admin"
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"]["value"] == "http://otel-collector.observability:4317"


def test_keda_scales_workers_on_pending_depth_instead_of_fixed_replicas():
    docs = render(PRODUCTION)
    scaled = find(docs, "ScaledObject", "-worker")
    worker = find(docs, "Deployment", "-worker")
    assert scaled["spec"]["scaleTargetRef"]["name"] == worker["metadata"]["name"]
    assert "replicas" not in worker["spec"], "KEDA owns the worker replica count"
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["type"] == "mysql" and "status = 'PENDING'" in trigger["metadata"]["query"]
    auth = find(docs, "TriggerAuthentication")
    assert auth["spec"]["secretTargetRef"][0] == {"parameter": "connectionString", "name": "ticket-database-dsn", "key": "dsn"}
    # No other autoscaler ever targets the workers.
    for hpa in (d for d in docs if d["kind"] == "HorizontalPodAutoscaler"):
        assert hpa["spec"]["scaleTargetRef"]["name"] != worker["metadata"]["name"]


def test_keda_is_not_rendered_where_its_api_is_missing():
    values = {**PRODUCTION, "keda": {**PRODUCTION["keda"], "assumeApiAvailable": False}}
    docs = render(values)
    assert "ScaledObject" not in kinds(docs)
    assert find(docs, "Deployment", "-worker")["spec"]["replicas"] == 3


def test_optional_mysql_is_off_by_default_and_complete_when_on():
    assert "StatefulSet" not in kinds(render())
    docs = render({"mysql": {"enabled": True, "password": "pw-for-trying"}})
    find(docs, "StatefulSet", "-mysql")
    find(docs, "Service", "-mysql")
    url = find(docs, "Secret", "-database")["stringData"]["database-url"]
    assert url == "mysql://root:pw-for-trying@ticket-mysql:3306/ticket"


@pytest.mark.parametrize(
    "values",
    [
        {"worker": {"config": {"batchSize": "many"}}},
        {"worker": {"config": {"batchSize": 0}}},
        {"worker": {"config": {"maxAttempts": 0}}},
        {"worker": {"replicas": 3}},
        {"unknownKey": True},
        {"auth": {"secret": "too-short"}},
        {"database": {"url": "postgres://nope"}},
        {"logFormat": "xml"},
        {"api": {"limits": {"userRequestsPerSec": -1}}},
        {"metrics": {"serviceMonitor": {"interval": "soon"}}},
    ],
    ids=["mistyped", "zero", "no-attempts", "unknown-nested", "unknown-top", "weak-secret", "wrong-url", "log-format", "interval", "negative-limit"],
)
def test_schema_rejects_bad_values(values):
    chart = helm.Chart.load(CHART)
    with pytest.raises(helm.HelmValuesError):
        chart.validate_schema(chart.merge_values(values))


def env_of(deployment):
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container["env"]}


def test_metrics_ports_are_named_on_the_services():
    docs = render()
    api = find(docs, "Service", "-api")
    assert [p["name"] for p in api["spec"]["ports"]] == ["http"], "no metrics on the public Service"
    api_metrics = find(docs, "Service", "-api-metrics")
    assert api_metrics["spec"]["ports"] == [{"name": "metrics", "port": 9090, "targetPort": "metrics"}]
    api_deployment = find(docs, "Deployment", "-api")
    assert api_metrics["spec"]["selector"].items() <= api_deployment["spec"]["template"]["metadata"]["labels"].items()
    assert {"name": "metrics", "containerPort": 9090} in api_deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert env_of(api_deployment)["TICKET_METRICS_ADDR"] == "0.0.0.0:9090"
    workers = find(docs, "Service", "-worker-metrics")
    assert workers["spec"]["ports"] == [{"name": "metrics", "port": 8081, "targetPort": "metrics"}]
    worker = find(docs, "Deployment", "-worker")
    pod_labels = worker["spec"]["template"]["metadata"]["labels"]
    assert workers["spec"]["selector"].items() <= pod_labels.items()
    container = worker["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "metrics", "containerPort": 8081} in container["ports"]
    assert env_of(worker)["TICKET_WORKER_HEALTH_ADDR"] == "0.0.0.0:8081"
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}


def test_service_monitor_scrapes_the_api_and_the_workers_when_asked():
    assert not [d for d in render() if d["kind"] == "ServiceMonitor"], "off by default"
    docs = render(PRODUCTION)
    monitor = find(docs, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert [(e["port"], e["path"]) for e in monitor["spec"]["endpoints"]] == [("metrics", "/metrics")]
    selector = monitor["spec"]["selector"]["matchLabels"]
    for service in (find(docs, "Service", "-api-metrics"), find(docs, "Service", "-worker-metrics")):
        assert selector.items() <= service["metadata"]["labels"].items(), service["metadata"]["name"]
    missing_api = {**PRODUCTION, "metrics": {"serviceMonitor": {"enabled": True}}}
    assert not [d for d in render(missing_api) if d["kind"] == "ServiceMonitor"]


def test_telemetry_settings_reach_both_binaries():
    for doc in ("-api", "-worker"):
        default_env = env_of(find(render(), "Deployment", doc))
        assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in default_env, "nothing exported without an endpoint"
        assert default_env["TICKET_LOG_FORMAT"] == "json"
        env = env_of(find(render(PRODUCTION), "Deployment", doc))
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == PRODUCTION["otel"]["endpoint"]
        assert env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "grpc"
        assert env["OTEL_TRACES_SAMPLER"] == "parentbased_traceidratio"
        assert env["OTEL_SERVICE_NAME"] == "ticket" + doc


def test_rate_limits_reach_the_api():
    env = env_of(find(render(), "Deployment", "-api"))
    assert env["TICKET_USER_REQUESTS_PER_SEC"] == "20"
    assert env["TICKET_ANONYMOUS_REQUESTS_PER_SEC"] == "20"
    assert env["TICKET_LOGINS_PER_MINUTE_PER_NICKNAME"] == "10"
    assert "TICKET_CLIENT_ADDRESS_HEADER" not in env
    behind_ingress = {"api": {"limits": {"clientAddressHeader": "X-Forwarded-For", "userRequestsPerSec": 0}}}
    env = env_of(find(render(behind_ingress), "Deployment", "-api"))
    assert env["TICKET_CLIENT_ADDRESS_HEADER"] == "X-Forwarded-For"
    assert env["TICKET_TRUSTED_PROXIES"] == "1"
    assert env["TICKET_USER_REQUESTS_PER_SEC"] == "0"
    behind_cdn = {"api": {"limits": {"clientAddressHeader": "X-Forwarded-For", "trustedProxies": 2}}}
    assert env_of(find(render(behind_cdn), "Deployment", "-api"))["TICKET_TRUSTED_PROXIES"] == "2"
