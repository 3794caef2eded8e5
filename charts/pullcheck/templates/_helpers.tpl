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

{{/* The mode, checked: watch (the webhook adds only the Job rule, the watcher acts), init (the
init container alone) or both. `watch.enabled`, which the mode replaces, is refused rather than
ignored, so that an upgrade cannot silently change what runs. */}}
{{- define "pullcheck.mode" -}}
{{- if hasKey .Values.watch "enabled" -}}
{{- fail "watch.enabled is replaced by mode: mode=init for the init container alone, mode=watch (the default) or mode=both for the watcher" -}}
{{- end -}}
{{- if not (has .Values.mode (list "watch" "init" "both")) -}}
{{- fail (printf "mode must be watch, init or both, not %v" .Values.mode) -}}
{{- end -}}
{{- .Values.mode -}}
{{- end -}}

{{/* "true" when the watcher runs (mode watch or both), else empty. */}}
{{- define "pullcheck.watcher" -}}
{{- if ne (include "pullcheck.mode" .) "init" -}}true{{- end -}}
{{- end -}}

{{/* The webhook's namespaceSelector expression for the namespaces it acts in: in watch mode the
watcher's label (watch.namespaceLabel, KEY=VALUE or KEY), so that one label opts a namespace in
to both; otherwise namespaceLabel. */}}
{{- define "pullcheck.namespaceMatch" -}}
{{- if eq (include "pullcheck.mode" .) "watch" -}}
{{- $parts := splitList "=" .Values.watch.namespaceLabel -}}
{{- if gt (len $parts) 1 -}}
- key: {{ first $parts }}
  operator: In
  values: [{{ rest $parts | join "=" | quote }}]
{{- else -}}
- key: {{ first $parts }}
  operator: Exists
{{- end -}}
{{- else -}}
- key: {{ .Values.namespaceLabel.key }}
  operator: In
  values: [{{ .Values.namespaceLabel.value | quote }}]
{{- end -}}
{{- end -}}
