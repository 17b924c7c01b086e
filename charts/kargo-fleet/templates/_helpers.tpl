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

{{/*
labels are every object's labels: the chart's own, then commonLabels over
global.labels (the name Kargo's chart gives them, shared with it when both
are subcharts of one parent). The chart's own labels win.
*/}}
{{- define "kargo-fleet.labels" -}}
{{- $common := include "kargo-fleet.commonLabels" . | fromYaml -}}
{{- $own := dict "helm.sh/chart" (printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_") "app.kubernetes.io/version" .Chart.AppVersion "app.kubernetes.io/managed-by" .Release.Service -}}
{{- $_ := mergeOverwrite $own (include "kargo-fleet.selector" . | fromYaml) -}}
{{- toYaml (mergeOverwrite $common $own) -}}
{{- end -}}

{{/* commonLabels: commonLabels over global.labels. */}}
{{- define "kargo-fleet.commonLabels" -}}
{{- $global := dig "labels" dict (.Values.global | default dict) -}}
{{- toYaml (mergeOverwrite (deepCopy $global) (deepCopy (.Values.commonLabels | default dict))) -}}
{{- end -}}

{{/*
annotations renders an object's "annotations:" block, indented for
metadata: commonAnnotations over global.annotations, then the object's own
(extra), which win. Nothing when there are none. Call it at the end of a
metadata line: {{- include "kargo-fleet.annotations" (dict "root" . "extra" $own) }}
*/}}
{{- define "kargo-fleet.annotations" -}}
{{- $root := .root -}}
{{- $global := dig "annotations" dict ($root.Values.global | default dict) -}}
{{- $all := mergeOverwrite (deepCopy $global) (deepCopy ($root.Values.commonAnnotations | default dict)) (deepCopy (.extra | default dict)) -}}
{{- with $all }}
  annotations: {{- toYaml . | nindent 4 }}
{{- end -}}
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

{{/* metricsSecretName is the Secret holding the metrics endpoint's serving certificate and its CA. */}}
{{- define "kargo-fleet.metricsSecretName" -}}
{{- if eq .Values.metrics.tls.certificates "secret" -}}
{{- required "metrics.tls.secretName is required when metrics.tls.certificates is secret" .Values.metrics.tls.secretName -}}
{{- else -}}
{{- printf "%s-metrics-tls" (include "kargo-fleet.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* stepsSecretName is the Secret of the step server's generated certificate. */}}
{{- define "kargo-fleet.stepsSecretName" -}}
{{- printf "%s-steps-tls" (include "kargo-fleet.fullname" .) -}}
{{- end -}}

{{- define "kargo-fleet.webhookServiceName" -}}
{{- printf "%s-webhook" (include "kargo-fleet.fullname" .) -}}
{{- end -}}

{{- define "kargo-fleet.webhookConfigName" -}}
{{- include "kargo-fleet.fullname" . -}}
{{- end -}}

{{/*
pdbCount resolves a PodDisruptionBudget count (an integer or "N%") against
a replica count, rounding a percentage up as the disruption controller
does for both minAvailable and maxUnavailable.
*/}}
{{- define "kargo-fleet.pdbCount" -}}
{{- $v := toString .value -}}
{{- if hasSuffix "%" $v -}}
{{- div (add (mul (trimSuffix "%" $v | int) .replicas) 99) 100 -}}
{{- else -}}
{{- $v | int -}}
{{- end -}}
{{- end -}}
