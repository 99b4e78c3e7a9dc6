"""The optional highly available database (templates/galera.yaml): a MariaDB
Galera cluster and MaxScale made by mariadb-operator, validated against the
operator's own CRD schemas (crds/mariadb-operator.json, from its
repository), made strict: a field the CRD does not know fails, as a typo
would otherwise be dropped silently by the API server's pruning."""

import copy
import json
from pathlib import Path

import helm_python as helm
import jsonschema
import kubernetes_validate
import pytest

from test_chart import CHART, CUSTOM_KINDS, KUBE_VERSION, find, render, render_error, with_key

CRDS = json.loads((Path(__file__).resolve().parent / "crds" / "mariadb-operator.json").read_text())["schemas"]
GALERA = {"galera": {"enabled": True, "assumeApiAvailable": True, "password": "p@ss word"}}


def strict(schema):
    """Unknown fields are errors wherever the CRD lists its fields and does
    not ask for unknown ones to be kept."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
                node.setdefault("additionalProperties", False)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


def validator(doc):
    group_version = doc["apiVersion"]
    schema = CRDS[f"{group_version}/{doc['kind']}"]
    return jsonschema.Draft7Validator(strict(schema))


def operator_docs(docs):
    return [d for d in docs if d["apiVersion"].startswith("k8s.mariadb.com/")]


def test_galera_is_off_by_default():
    assert not operator_docs(render())


def test_the_galera_cluster_and_maxscale_are_valid_under_the_operators_crds():
    docs = render(GALERA)
    assert sorted(d["kind"] for d in operator_docs(docs)) == ["MariaDB", "MaxScale"]
    for doc in operator_docs(docs):
        errors = sorted(validator(doc).iter_errors(doc), key=str)
        assert not errors, [f"{doc['kind']}: {e.json_path}: {e.message}" for e in errors]
    # The rest of the release is still valid Kubernetes.
    for doc in docs:
        if doc["kind"] not in CUSTOM_KINDS and not doc["apiVersion"].startswith("k8s.mariadb.com/"):
            kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
    report = helm.lint(CHART, with_key(GALERA), strict=True, namespace="tickets")
    assert not [m for m in report["messages"] if m["severity"] >= 2] and not report["errors"]


def test_galera_provider_options_reach_the_cluster_and_fit_the_crd():
    fast = {"galera": {**GALERA["galera"], "providerOptions": {"evs.suspect_timeout": "PT2S", "evs.keepalive_period": "PT0.5S"}}}
    mariadb = find(render(fast), "MariaDB")
    assert mariadb["spec"]["galera"]["providerOptions"] == {"evs.suspect_timeout": "PT2S", "evs.keepalive_period": "PT0.5S"}
    assert not list(validator(mariadb).iter_errors(mariadb))
    assert "providerOptions" not in find(render(GALERA), "MariaDB")["spec"]["galera"]


def test_the_crd_check_catches_a_field_the_operator_does_not_know():
    mariadb = find(render(GALERA), "MariaDB")
    mariadb["spec"]["galera"]["enabeld"] = True
    assert any("enabeld" in e.message for e in validator(mariadb).iter_errors(mariadb))
    maxscale = find(render(GALERA), "MaxScale")
    maxscale["spec"]["services"][0]["router"] = "schemarouter"
    assert list(validator(maxscale).iter_errors(maxscale))


def test_one_writer_through_maxscale_that_does_not_fail_back():
    docs = render(GALERA)
    mariadb, maxscale = find(docs, "MariaDB"), find(docs, "MaxScale")
    assert mariadb["spec"]["replicas"] == 3 and mariadb["spec"]["galera"]["enabled"] is True
    assert mariadb["spec"]["maxScaleRef"]["name"] == maxscale["metadata"]["name"] == "ticket-maxscale"
    assert maxscale["spec"]["mariaDbRef"]["name"] == mariadb["metadata"]["name"]
    # Every connection to the primary alone (readwritesplit would send reads
    # elsewhere), and a returning node does not take the role back.
    [service] = maxscale["spec"]["services"]
    assert service["router"] == "readconnroute" and service["params"]["router_options"] == "master"
    assert maxscale["spec"]["monitor"]["params"]["disable_master_failback"] == "true"
    config = mariadb["spec"]["myCnf"]
    assert "wsrep_sync_wait=1" in config and "max_connections=500" in config
    assert "innodb_autoinc_lock_mode=2" in config and "binlog_format=row" in config
    # The application's account, never root; its password in a Secret.
    assert mariadb["spec"]["username"] == "ticket" and mariadb["spec"]["database"] == "ticket"
    ref = mariadb["spec"]["passwordSecretKeyRef"]
    assert find(docs, "Secret", ref["name"])["stringData"][ref["key"]] == "p@ss word"
    assert mariadb["spec"]["rootPasswordSecretKeyRef"]["generate"] is True


def test_pods_reach_galera_through_maxscale_and_migrate_once_it_answers():
    docs = render(GALERA)
    url = find(docs, "Secret", "-database")["stringData"]["database-url"]
    assert url == "mysql://ticket:p%40ss%20word@ticket-maxscale:3306/ticket"
    # The cluster is made by the release: no pre-install hook can reach it.
    assert find(docs, "Job", "-migrate")["metadata"]["annotations"]["helm.sh/hook"] == "pre-upgrade"
    for name in ("-api", "-worker"):
        init = find(docs, "Deployment", name)["spec"]["template"]["spec"]["initContainers"]
        assert [c["command"] for c in init] == [["/usr/local/bin/ticket-api", "migrate"]]


def test_an_existing_password_secret_needs_the_url_as_a_secret_too():
    own = {"galera": {"enabled": True, "assumeApiAvailable": True, "existingSecret": "db-pass"}}
    assert "database.existingSecret" in render_error(with_key(own))
    docs = render({**own, "database": {"existingSecret": "db-url"}})
    assert find(docs, "MariaDB")["spec"]["passwordSecretKeyRef"]["name"] == "db-pass"
    assert not [d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"].endswith("-galera")]


@pytest.mark.parametrize(
    "values, message",
    [
        ({"galera": {"enabled": True, "password": "pw"}}, "mariadb-operator's CRDs"),
        ({"galera": {"enabled": True, "assumeApiAvailable": True}}, "galera.password"),
        ({**GALERA, "mysql": {"enabled": True, "password": "pw"}}, "choose one database"),
    ],
    ids=["no-operator", "no-password", "with-mysql"],
)
def test_galera_refuses_what_cannot_work(values, message):
    assert message in render_error(with_key(values))


@pytest.mark.parametrize("galera", [{"replicas": 2}, {"replicas": 4}, {"user": "root"}, {"replica": 3}], ids=["two", "even", "root", "typo"])
def test_the_schema_refuses_a_cluster_without_a_majority_or_a_root_account(galera):
    chart = helm.Chart.load(CHART)
    with pytest.raises(helm.HelmValuesError):
        chart.validate_schema(chart.merge_values({"galera": galera}))

