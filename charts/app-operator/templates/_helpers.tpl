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
MicroServiceDeploy pods; the Nodes and PersistentVolumes a stateful
member's volume stranded on a node is read from; the StorageClass that
says whether a data service's claims may grow). A rule names resources of
one scope only (internal/permissions checks it).
*/}}
{{- define "app-operator.clusterScopedResources" -}}
{{- list "nodes" "persistentvolumes" "priorityclasses" "storageclasses" | toJson -}}
{{- end -}}

{{- define "app-operator.namespacedManagerRules" -}}
{{- $cluster := include "app-operator.clusterScopedResources" . | fromJsonArray }}
{{- $out := list }}
{{- range (.Files.Get "files/role.yaml" | fromYaml).rules }}
{{- if not (has (first .resources) $cluster) }}{{ $out = append $out . }}{{ end }}
{{- end }}
{{- toYaml $out }}
{{- end -}}

{{- define "app-operator.clusterScopedManagerRules" -}}
{{- $cluster := include "app-operator.clusterScopedResources" . | fromJsonArray }}
{{- $out := list }}
{{- range (.Files.Get "files/role.yaml" | fromYaml).rules }}
{{- if has (first .resources) $cluster }}{{ $out = append $out . }}{{ end }}
{{- end }}
{{- toYaml $out }}
{{- end -}}

{{/*
GOMEMLIMIT: goRuntime.memoryLimitPercent of resources.limits.memory, in
whole MiB; empty without a memory limit or with a percentage of 0. The
limit is a Kubernetes quantity: a number of bytes, with or without a
binary (Ki, Mi, Gi, Ti) or decimal (k, M, G, T) suffix.
*/}}
{{- define "app-operator.goMemLimit" -}}
{{- $raw := ((.Values.resources).limits).memory | default "" -}}
{{- $limit := toString $raw -}}
{{- if kindIs "float64" $raw -}}
{{- $limit = printf "%.0f" $raw -}}
{{- end -}}
{{- $percent := float64 (.Values.goRuntime.memoryLimitPercent | default 0) -}}
{{- if and $limit (gt $percent 0.0) -}}
{{- $units := dict "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "k" 1000.0 "M" 1000000.0 "G" 1000000000.0 "T" 1000000000000.0 -}}
{{- $number := $limit -}}
{{- $unit := 1.0 -}}
{{- range $suffix, $bytes := $units -}}
{{- if hasSuffix $suffix $limit -}}
{{- $number = trimSuffix $suffix $limit -}}
{{- $unit = $bytes -}}
{{- end -}}
{{- end -}}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?$" $number) -}}
{{- fail (printf "resources.limits.memory %q: want a number of bytes with an optional suffix Ki, Mi, Gi, Ti, k, M, G or T" $limit) -}}
{{- end -}}
{{- printf "%dMiB" (int64 (floor (divf (mulf (float64 $number) $unit $percent) 104857600.0))) -}}
{{- end -}}
{{- end -}}
