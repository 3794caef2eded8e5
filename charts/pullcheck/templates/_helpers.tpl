{{/* The release's full name: the chart's name, prefixed by the release's unless it holds it. */}}
{{- define "pullcheck.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The webhook's Service: `pullcheck-webhook` for a release named pullcheck, the flag's default. */}}
{{- define "pullcheck.service" -}}
{{- printf "%s-webhook" (include "pullcheck.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The MutatingWebhookConfiguration's name, which the webhook patches and RBAC names. */}}
{{- define "pullcheck.configuration" -}}
{{- default (include "pullcheck.fullname" .) .Values.webhook.configurationName -}}
{{- end -}}

{{- define "pullcheck.serviceAccount" -}}
{{- default (include "pullcheck.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "pullcheck.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The cert-manager Certificate (and the Secret it writes). */}}
{{- define "pullcheck.certificate" -}}
{{- printf "%s-tls" (include "pullcheck.service" .) -}}
{{- end -}}

{{- define "pullcheck.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: webhook
{{- end -}}

{{- define "pullcheck.labels" -}}
{{ include "pullcheck.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
