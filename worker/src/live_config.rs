//! Operator-style configuration: the worker watches its ConfigMap through
//! the Kubernetes API and applies batch size, poll interval, lease and attempt limit between
//! batches, without a restart. Invalid values and a deleted ConfigMap keep
//! the last good configuration; API errors are retried with backoff while
//! the queue keeps being worked.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::WorkerConfig;

/// Reads the worker settings from a ConfigMap's data. Keys left out keep
/// their current value; any present key must be a whole number in range.
pub fn parse(
    data: &BTreeMap<String, String>,
    current: WorkerConfig,
) -> Result<WorkerConfig, String> {
    fn number(
        data: &BTreeMap<String, String>,
        key: &str,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<Option<u64>, String> {
        let Some(raw) = data.get(key) else {
            return Ok(None);
        };
        let value: u64 = raw
            .trim()
            .parse()
            .map_err(|_| format!("{key}={raw:?} is not a whole number"))?;
        if !range.contains(&value) {
            return Err(format!(
                "{key}={value} is outside {}..={}",
                range.start(),
                range.end()
            ));
        }
        Ok(Some(value))
    }
    let batch_size = number(
        data,
        "batchSize",
        1..=u64::from(WorkerConfig::MAX_BATCH_SIZE),
    )?;
    let poll = number(data, "pollIntervalMs", 1..=60_000)?;
    let lease = number(data, "leaseMs", 100..=3_600_000)?;
    let max_attempts = number(
        data,
        "maxAttempts",
        1..=u64::from(WorkerConfig::MAX_ATTEMPTS_LIMIT),
    )?;
    Ok(WorkerConfig {
        batch_size: batch_size.map_or(current.batch_size, |v| v as u32),
        poll_interval: poll.map_or(current.poll_interval, Duration::from_millis),
        lease: lease.map_or(current.lease, Duration::from_millis),
        max_attempts: max_attempts.map_or(current.max_attempts, |v| v as u32),
    })
}

/// Where configuration Events go: the worker's own pod.
pub struct EventTarget {
    pub recorder: Recorder,
    pub pod: ObjectReference,
}

impl EventTarget {
    pub fn for_pod(client: Client, namespace: &str, pod: &str) -> Self {
        let reporter = Reporter {
            controller: "ticket-worker".into(),
            instance: Some(pod.to_owned()),
        };
        let pod = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(pod.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectReference::default()
        };
        Self {
            recorder: Recorder::new(client, reporter),
            pod,
        }
    }

    async fn publish(&self, type_: EventType, reason: &str, note: String) {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(note),
            action: "Configure".into(),
            secondary: None,
        };
        // An Event is a courtesy to operators; failing to record one changes nothing.
        if let Err(e) = self.recorder.publish(&event, &self.pod).await {
            tracing::debug!(error = %e, "could not record a Kubernetes Event");
        }
    }
}

/// Watches the ConfigMap `name` until `shutdown`, sending each valid new
/// configuration to the claim loop.
pub async fn watch_configmap(
    client: Client,
    namespace: &str,
    name: &str,
    sender: watch::Sender<WorkerConfig>,
    events: Option<EventTarget>,
    shutdown: CancellationToken,
) {
    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    let stream = watcher::watch_object(api, name).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut deleted = false;
    loop {
        let item = tokio::select! {
            () = shutdown.cancelled() => return,
            item = stream.next() => item,
        };
        let Some(item) = item else { return };
        match item {
            Ok(Some(configmap)) => {
                deleted = false;
                let current = *sender.borrow();
                let data = configmap.data.unwrap_or_default();
                match parse(&data, current) {
                    Ok(new) if new == current => {}
                    Ok(new) => {
                        tracing::info!(configmap = name, old = ?current, new = ?new, "worker configuration changed");
                        sender.send_replace(new);
                        if let Some(events) = &events {
                            let note = format!(
                                "batchSize={} pollIntervalMs={} leaseMs={} maxAttempts={}",
                                new.batch_size,
                                new.poll_interval.as_millis(),
                                new.lease.as_millis(),
                                new.max_attempts
                            );
                            events
                                .publish(EventType::Normal, "ConfigApplied", note)
                                .await;
                        }
                    }
                    Err(reason) => {
                        tracing::warn!(configmap = name, %reason, kept = ?current, "invalid worker configuration rejected");
                        if let Some(events) = &events {
                            events
                                .publish(
                                    EventType::Warning,
                                    "ConfigRejected",
                                    format!("{reason}; keeping the last good configuration"),
                                )
                                .await;
                        }
                    }
                }
            }
            Ok(None) if !deleted => {
                deleted = true;
                tracing::warn!(configmap = name, kept = ?*sender.borrow(), "worker ConfigMap deleted; keeping the last good configuration");
                if let Some(events) = &events {
                    events
                        .publish(
                            EventType::Warning,
                            "ConfigMapDeleted",
                            "keeping the last good configuration".into(),
                        )
                        .await;
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(configmap = name, error = %e, "watching the worker ConfigMap failed; retrying with backoff")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CURRENT: WorkerConfig = WorkerConfig {
        batch_size: 1000,
        poll_interval: Duration::from_millis(50),
        lease: Duration::from_secs(30),
        max_attempts: 5,
    };

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn parses_changes_and_keeps_what_is_left_out() {
        let new = parse(
            &data(&[
                ("batchSize", "250"),
                ("leaseMs", " 5000 "),
                ("maxAttempts", "3"),
            ]),
            CURRENT,
        )
        .unwrap();
        assert_eq!(new.batch_size, 250);
        assert_eq!(new.max_attempts, 3);
        assert_eq!(new.poll_interval, CURRENT.poll_interval);
        assert_eq!(new.lease, Duration::from_secs(5));
        assert_eq!(parse(&data(&[]), CURRENT), Ok(CURRENT));
    }

    #[test]
    fn rejects_non_numbers_zero_and_absurd_values() {
        for bad in [
            ("batchSize", "many"),
            ("batchSize", "0"),
            ("batchSize", "-5"),
            ("batchSize", "1000000"),
            ("pollIntervalMs", "0"),
            ("leaseMs", "10"),
            ("leaseMs", "99999999999999999999"),
            ("maxAttempts", "0"),
            ("maxAttempts", "101"),
        ] {
            assert!(parse(&data(&[bad]), CURRENT).is_err(), "{bad:?}");
        }
    }
}
