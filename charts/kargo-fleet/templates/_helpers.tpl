{{/* name is the chart name, or nameOverride. */}}
{{- define "kargo-fleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
fullname prefixes every object of the release: fullnameOverride, else the
release name when it already contains the chart name, else
<release>-<name>. Kept to 52 characters so suffixes such as "-webhook" stay
within Kubernetes' 63-character limit.
*/}}
{{- define "kargo-fleet.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "kargo-fleet.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kargo-fleet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "kargo-fleet.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "kargo-fleet.selector" -}}
app.kubernetes.io/name: {{ include "kargo-fleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kargo-fleet.serviceAccountName" -}}
{{- default (include "kargo-fleet.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "kargo-fleet.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* stepServerURL is this release's step Service, the tasks' default serverURL. */}}
{{- define "kargo-fleet.stepServerURL" -}}
{{- printf "%s://%s-steps.%s.svc:%d" (ternary "https" "http" .Values.steps.tls.enabled) (include "kargo-fleet.fullname" .) .Release.Namespace (int .Values.service.steps) -}}
{{- end -}}

{{/*
webhookCertMode resolves webhook.certificates: "auto" is cert-manager when
the cluster serves cert-manager.io/v1, else generated.
*/}}
{{- define "kargo-fleet.webhookCertMode" -}}
{{- $m := .Values.webhook.certificates -}}
{{- if eq $m "auto" -}}
{{- ternary "cert-manager" "generated" (.Capabilities.APIVersions.Has "cert-manager.io/v1") -}}
{{- else -}}
{{- $m -}}
{{- end -}}
{{- end -}}

{{/* webhookSecretName is the Secret holding the webhook's serving certificate. */}}
{{- define "kargo-fleet.webhookSecretName" -}}
{{- if eq (include "kargo-fleet.webhookCertMode" .) "secret" -}}
{{- required "webhook.secretName is required when webhook.certificates is secret" .Values.webhook.secretName -}}
{{- else -}}
{{- printf "%s-webhook-tls" (include "kargo-fleet.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "kargo-fleet.webhookServiceName" -}}
{{- printf "%s-webhook" (include "kargo-fleet.fullname" .) -}}
{{- end -}}

{{- define "kargo-fleet.webhookConfigName" -}}
{{- include "kargo-fleet.fullname" . -}}
{{- end -}}
