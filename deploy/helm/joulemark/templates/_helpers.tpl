{{/* Chart name. */}}
{{- define "joulemark.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Fully qualified app name. */}}
{{- define "joulemark.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "joulemark.exporter" -}}
{{- printf "%s-exporter" (include "joulemark.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of the exporter pods. */}}
{{- define "joulemark.selectorLabels" -}}
app.kubernetes.io/name: {{ include "joulemark.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: exporter
{{- end -}}

{{/* Common labels. */}}
{{- define "joulemark.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "joulemark.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The Prometheus Operator release label, when set. */}}
{{- define "joulemark.releaseLabel" -}}
{{- with .Values.prometheusRelease }}
release: {{ . | quote }}
{{- end -}}
{{- end -}}

{{- define "joulemark.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Name of the Secret holding the phase API token, "" when none. */}}
{{- define "joulemark.tokenSecret" -}}
{{- if .Values.exporter.apiToken.existingSecret -}}
{{- .Values.exporter.apiToken.existingSecret -}}
{{- else if .Values.exporter.apiToken.value -}}
{{- printf "%s-token" (include "joulemark.exporter" .) -}}
{{- end -}}
{{- end -}}
