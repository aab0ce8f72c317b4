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

{{/*
The manager's rules split by the scope of their resources, for installs
that grant the namespaced ones through a Role in each watched namespace: a
Role cannot grant a cluster-scoped resource (the PriorityClass of the
MicroServiceDeploy pods).
*/}}
{{- define "app-operator.clusterScopedGroups" -}}
{{- list "scheduling.k8s.io" | toJson -}}
{{- end -}}

{{- define "app-operator.namespacedManagerRules" -}}
{{- $cluster := include "app-operator.clusterScopedGroups" . | fromJsonArray }}
{{- $out := list }}
{{- range (.Files.Get "files/role.yaml" | fromYaml).rules }}
{{- if not (has (first .apiGroups) $cluster) }}{{ $out = append $out . }}{{ end }}
{{- end }}
{{- toYaml $out }}
{{- end -}}

{{- define "app-operator.clusterScopedManagerRules" -}}
{{- $cluster := include "app-operator.clusterScopedGroups" . | fromJsonArray }}
{{- $out := list }}
{{- range (.Files.Get "files/role.yaml" | fromYaml).rules }}
{{- if has (first .apiGroups) $cluster }}{{ $out = append $out . }}{{ end }}
{{- end }}
{{- toYaml $out }}
{{- end -}}
