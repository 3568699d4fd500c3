{{/* The release's objects' name: the release's own when it already says jupyter-hetero. */}}
{{- define "jupyter-hetero.fullname" -}}
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

{{- define "jupyter-hetero.labels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "jupyter-hetero.selectorLabels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "jupyter-hetero.serviceAccountName" -}}
{{- default (include "jupyter-hetero.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The namespaces that get the workloads' Role, as a JSON list (templates cannot return lists). */}}
{{- define "jupyter-hetero.workloadNamespaces" -}}
{{- $namespaces := .Values.workloadNamespaces -}}
{{- if not $namespaces -}}
{{- if contains "{tenant}" .Values.kubernetes.namespace -}}
{{- fail "kubernetes.namespace names one namespace per tenant: list each tenant's namespace in workloadNamespaces" -}}
{{- end -}}
{{- $namespaces = list .Values.kubernetes.namespace -}}
{{- end -}}
{{- toJson $namespaces -}}
{{- end -}}

{{- define "jupyter-hetero.workClaim" -}}
{{- default (printf "%s-work" (include "jupyter-hetero.fullname" .)) .Values.workVolume.existingClaim -}}
{{- end -}}

{{- define "jupyter-hetero.stateClaim" -}}
{{- default (printf "%s-state" (include "jupyter-hetero.fullname" .)) .Values.store.persistence.existingClaim -}}
{{- end -}}

{{- define "jupyter-hetero.tokenSecretName" -}}
{{- default (printf "%s-token" (include "jupyter-hetero.fullname" .)) .Values.server.tokenSecret.name -}}
{{- end -}}

{{/* Where the server's routes start: the hub's service prefix in hub mode, the root otherwise. */}}
{{- define "jupyter-hetero.prefix" -}}
{{- if .Values.hub.enabled -}}
{{- printf "%s/services/%s/" (trimSuffix "/" .Values.hub.baseUrl) .Values.hub.serviceName -}}
{{- else -}}
/
{{- end -}}
{{- end -}}

{{/* The server's traits, as jupyter_server_config.json: what the chart sets, then server.extraConfig over it. */}}
{{- define "jupyter-hetero.serverConfig" -}}
{{- $hetero := dict "backend" "kubernetes" "work_dir" .Values.workVolume.mountPath
      "audit_anchor_file" "/var/lib/hetero/audit-anchor" -}}
{{- if .Values.catalog -}}
{{- $_ := set $hetero "catalog_file" "/etc/jupyter-hetero/catalog.yaml" -}}
{{- end -}}
{{- if and (not .Values.store.dbUrlSecret.name) (not .Values.store.dbUrl) -}}
{{- $_ := set $hetero "db_url" "sqlite:////var/lib/hetero/hetero.sqlite" -}}
{{- else if not .Values.store.dbUrlSecret.name -}}
{{- $_ := set $hetero "db_url" .Values.store.dbUrl -}}
{{- end -}}
{{- if and .Values.hub.enabled .Values.hub.userRootTemplate -}}
{{- $_ := set $hetero "user_root_template" .Values.hub.userRootTemplate -}}
{{- end -}}
{{- $kube := dict -}}
{{- range $key, $value := .Values.kubernetes -}}
{{- if not (kindIs "invalid" $value) -}}
{{- $_ := set $kube $key $value -}}
{{- end -}}
{{- end -}}
{{- if kindIs "invalid" .Values.kubernetes.work_volume -}}
{{- if .Values.workVolume.hostPath -}}
{{- $_ := set $kube "work_volume" (dict "host_path" .Values.workVolume.hostPath) -}}
{{- else -}}
{{- $_ := set $kube "work_volume" (dict "claim" (default (include "jupyter-hetero.workClaim" .) .Values.workVolume.workloadClaim)) -}}
{{- end -}}
{{- end -}}
{{- if not .Values.kubernetes.server_url -}}
{{- $_ := set $kube "server_url" (printf "http://%s.%s.svc:%d%s" (include "jupyter-hetero.fullname" .) .Release.Namespace (int .Values.port) (include "jupyter-hetero.prefix" .)) -}}
{{- end -}}
{{- $config := dict "HeteroApp" $hetero "KubernetesConfig" $kube -}}
{{- toPrettyJson (mergeOverwrite $config (deepCopy .Values.server.extraConfig)) -}}
{{- end -}}
