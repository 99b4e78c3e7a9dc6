{{- define "ticket.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ticket.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "ticket.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "ticket.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "ticket.databaseSecret" -}}
{{ .Values.database.existingSecret | default (printf "%s-database" (include "ticket.fullname" .)) }}
{{- end -}}

{{- define "ticket.authSecret" -}}
{{ .Values.auth.existingSecret | default (printf "%s-auth" (include "ticket.fullname" .)) }}
{{- end -}}

{{- define "ticket.ticketsSecret" -}}
{{ .Values.tickets.existingSecret | default (printf "%s-tickets" (include "ticket.fullname" .)) }}
{{- end -}}

{{- define "ticket.ticketsEnabled" -}}
{{- if or .Values.tickets.existingSecret .Values.tickets.codeKeys }}true{{ end -}}
{{- end -}}

{{- define "ticket.mailEnabled" -}}
{{- if or .Values.mail.existingSecret .Values.mail.smtpUrl }}true{{ end -}}
{{- end -}}

{{- define "ticket.stripeEnabled" -}}
{{- if or .Values.stripe.existingSecret .Values.stripe.secretKey }}true{{ end -}}
{{- end -}}

{{- define "ticket.stripeSecret" -}}
{{ .Values.stripe.existingSecret | default (printf "%s-stripe" (include "ticket.fullname" .)) }}
{{- end -}}

{{- /* Stripe's settings both the API and the workers take (not the keys). */ -}}
{{- define "ticket.stripeEnv" -}}
- name: TICKET_STRIPE_SECRET_KEY_FILE
  value: {{ include "ticket.secretsDir" . }}/stripe/secret-key
{{- with .Values.stripe.apiBase }}
- name: TICKET_STRIPE_API_BASE
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{- define "ticket.mailSecret" -}}
{{ .Values.mail.existingSecret | default (printf "%s-mail" (include "ticket.fullname" .)) }}
{{- end -}}

{{- /* The SMTP password is a file of its own: a key of the Secret you
manage, or the password the chart's Secret holds. */}}
{{- define "ticket.mailPassword" -}}
{{- if .Values.mail.existingSecret }}{{ .Values.mail.passwordKey }}
{{- else if .Values.mail.password }}password
{{- end -}}
{{- end -}}

{{- /* Where mail links to: mail.publicUrl, else the chart's ingress host. */}}
{{- define "ticket.publicUrl" -}}
{{- if .Values.mail.publicUrl }}{{ .Values.mail.publicUrl }}
{{- else if .Values.ingress.enabled }}https://{{ .Values.ingress.host }}
{{- end -}}
{{- end -}}

{{- define "ticket.webhookSecret" -}}
{{ .Values.webhook.existingSecret | default (printf "%s-webhook" (include "ticket.fullname" .)) }}
{{- end -}}

{{- define "ticket.workerConfigMap" -}}
{{ include "ticket.fullname" . }}-worker
{{- end -}}

{{- define "ticket.serviceMonitorEnabled" -}}
{{- if and .Values.metrics.serviceMonitor.enabled (or .Values.metrics.serviceMonitor.assumeApiAvailable (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor")) -}}true{{- end -}}
{{- end -}}

{{- define "ticket.prometheusRuleEnabled" -}}
{{- if and .Values.metrics.prometheusRule.enabled (or .Values.metrics.prometheusRule.assumeApiAvailable (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/PrometheusRule")) -}}true{{- end -}}
{{- end -}}

{{/* The labels Prometheus gives this release's series when the
ServiceMonitor scrapes them (the job is the Service's name). */}}
{{- define "ticket.apiSeries" -}}
namespace="{{ .Release.Namespace }}", job="{{ include "ticket.fullname" . }}-api-metrics"
{{- end -}}
{{- define "ticket.workerSeries" -}}
namespace="{{ .Release.Namespace }}", job="{{ include "ticket.fullname" . }}-worker-metrics"
{{- end -}}
{{- define "ticket.anySeries" -}}
namespace="{{ .Release.Namespace }}", job=~"{{ include "ticket.fullname" . }}-(api|worker)-metrics"
{{- end -}}

{{- define "ticket.kedaEnabled" -}}
{{- if and .Values.keda.enabled (or .Values.keda.assumeApiAvailable (.Capabilities.APIVersions.Has "keda.sh/v1alpha1")) -}}true{{- end -}}
{{- end -}}

{{/* The database URL the chart puts in its own Secret; the password is
percent-encoded, so that `@`, `/`, `:` or `%` in it cannot break the URL
(urlquery writes a space as "+", which a URL's userinfo would keep). */}}
{{- define "ticket.databaseUrl" -}}
{{- if .Values.mysql.enabled -}}
{{- printf "mysql://%s:%s@%s-mysql:3306/%s" .Values.mysql.user (include "ticket.urlEncode" .Values.mysql.password) (include "ticket.fullname" .) .Values.mysql.database -}}
{{- else if .Values.galera.enabled -}}
{{- if .Values.galera.existingSecret -}}
{{- fail "galera.existingSecret: the chart cannot read that password, so give the URL too as database.existingSecret (mysql://user:password@RELEASE-maxscale:3306/ticket)" -}}
{{- end -}}
{{- printf "mysql://%s:%s@%s-maxscale:3306/%s" .Values.galera.user (include "ticket.urlEncode" .Values.galera.password) (include "ticket.fullname" .) .Values.galera.database -}}
{{- else -}}
{{- .Values.database.url -}}
{{- end -}}
{{- end -}}

{{- define "ticket.urlEncode" -}}
{{- . | urlquery | replace "+" "%20" -}}
{{- end -}}

{{/* Secrets reach the binaries as files (NAME_FILE), not environment
variables, which leak into crash reports and `kubectl describe`. */}}
{{- define "ticket.secretsDir" -}}/var/run/secrets/ticket{{- end -}}

{{/* Environment shared by every container that talks to the database. */}}
{{- define "ticket.databaseEnv" -}}
- name: DATABASE_URL_FILE
  value: {{ include "ticket.secretsDir" . }}/database/url
{{- end -}}

{{- define "ticket.databaseVolume" -}}
- name: database-secret
  secret:
    secretName: {{ include "ticket.databaseSecret" . }}
    items:
      - key: {{ .Values.database.existingSecretKey }}
        path: url
{{- end -}}

{{- define "ticket.databaseVolumeMount" -}}
- name: database-secret
  mountPath: {{ include "ticket.secretsDir" . }}/database
  readOnly: true
{{- end -}}

{{/* Connections every pod may open at once, at the largest scale the
chart allows (autoscaler maximum, plus the one extra pod of a rolling
update), and the migration Job's one: this must fit the server's
max_connections, or pods fail at the worst moment, under load. */}}
{{- define "ticket.connectionBudget" -}}
{{- $apiPods := ternary .Values.api.autoscaling.maxReplicas .Values.api.replicaCount .Values.api.autoscaling.enabled -}}
{{- $workerPods := ternary .Values.keda.maxReplicas .Values.worker.replicaCount .Values.keda.enabled -}}
{{- $api := mul .Values.api.dbMaxConnections (add $apiPods 1) -}}
{{- $workers := mul .Values.worker.dbMaxConnections (add $workerPods 1) -}}
{{- $total := add $api $workers 1 -}}
{{- if gt (int $total) (int .Values.database.maxConnections) -}}
{{- fail (printf "the pods may open %d database connections at once (API: %d pods x %d, workers: %d pods x %d, with one extra pod each during a rolling update, and 1 for migrations), more than database.maxConnections=%d. Raise database.maxConnections (and the server's max_connections to match), or lower api.dbMaxConnections, worker.dbMaxConnections or the maximum replica counts." (int $total) (int (add $apiPods 1)) (int .Values.api.dbMaxConnections) (int (add $workerPods 1)) (int .Values.worker.dbMaxConnections) (int .Values.database.maxConnections)) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{- define "ticket.otelEnv" -}}
{{- if .Values.otel.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .Values.otel.endpoint | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ .Values.otel.protocol | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .Values.otel.tracesSampler | quote }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ .Values.otel.tracesSamplerArg | quote }}
{{- end }}
{{- end -}}

{{/* The database is made by this release (the bundled MySQL, or Galera by
mariadb-operator): it cannot exist before the release's hooks run. */}}
{{- define "ticket.databaseInRelease" -}}
{{- if or .Values.mysql.enabled .Values.galera.enabled -}}true{{- end -}}
{{- end -}}

{{/* With a database made by the release, pods migrate before they start
(see migrate-job.yaml): waiting for the database with backoff, then
applying what is pending under the migrations' lock. */}}
{{- define "ticket.waitForMigrations" -}}
{{- if and (include "ticket.databaseInRelease" .) .Values.migrations.enabled }}
initContainers:
  - name: migrate
    image: {{ include "ticket.image" . }}
    imagePullPolicy: {{ .Values.image.pullPolicy }}
    command: ["/usr/local/bin/ticket-api", "migrate"]
    env:
      {{- include "ticket.databaseEnv" . | nindent 6 }}
      - name: TICKET_DB_WAIT_SECS
        value: {{ .Values.migrations.waitForDatabaseSeconds | quote }}
    resources:
      {{- toYaml .Values.migrations.resources | nindent 6 }}
    securityContext:
      {{- toYaml .Values.securityContext | nindent 6 }}
    volumeMounts:
      {{- include "ticket.databaseVolumeMount" . | nindent 6 }}
{{- end }}
{{- end -}}

{{- /* Egress every pod of the release needs: DNS and the database. */}}
{{- define "ticket.commonEgress" -}}
- ports:
    - { protocol: UDP, port: 53 }
    - { protocol: TCP, port: 53 }
- ports:
    - { protocol: TCP, port: {{ .Values.networkPolicy.databasePort }} }
  {{- with .Values.networkPolicy.databaseCidr }}
  to:
    - ipBlock: { cidr: {{ . | quote }} }
  {{- end }}
{{- if .Values.otel.endpoint }}
- ports:
    - { protocol: TCP, port: {{ .Values.networkPolicy.otlpPort }} }
{{- end }}
{{- with .Values.networkPolicy.extraEgress }}
{{ toYaml . }}
{{- end }}
{{- end }}
