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

{{- define "ticket.workerConfigMap" -}}
{{ include "ticket.fullname" . }}-worker
{{- end -}}

{{- define "ticket.serviceMonitorEnabled" -}}
{{- if and .Values.metrics.serviceMonitor.enabled (or .Values.metrics.serviceMonitor.assumeApiAvailable (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor")) -}}true{{- end -}}
{{- end -}}

{{- define "ticket.kedaEnabled" -}}
{{- if and .Values.keda.enabled (or .Values.keda.assumeApiAvailable (.Capabilities.APIVersions.Has "keda.sh/v1alpha1")) -}}true{{- end -}}
{{- end -}}

{{/* The database URL the chart puts in its own Secret. */}}
{{- define "ticket.databaseUrl" -}}
{{- if .Values.mysql.enabled -}}
{{- printf "mysql://root:%s@%s-mysql:3306/ticket" .Values.mysql.password (include "ticket.fullname" .) -}}
{{- else -}}
{{- .Values.database.url -}}
{{- end -}}
{{- end -}}

{{/* Environment shared by every container that talks to the database. */}}
{{- define "ticket.databaseEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "ticket.databaseSecret" . }}
      key: {{ .Values.database.existingSecretKey }}
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
