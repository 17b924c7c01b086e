{{- define "kargo-fleet.labels" -}}
app.kubernetes.io/name: kargo-fleet
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}
{{- define "kargo-fleet.selector" -}}
app.kubernetes.io/name: kargo-fleet
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
