{{- define "app-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "app-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller-manager
{{- end -}}

{{- define "app-operator.labels" -}}
{{ include "app-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "app-operator.serviceAccountName" -}}
{{ include "app-operator.fullname" . }}-controller-manager
{{- end -}}

{{/* The manager's rules, generated from the controllers' markers by `make manifests`. */}}
{{- define "app-operator.managerRules" -}}
{{ (.Files.Get "files/role.yaml" | fromYaml).rules | toYaml }}
{{- end -}}
