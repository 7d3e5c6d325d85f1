{{/* The objects' name: the release's if it holds the chart's name. */}}
{{- define "schedstatd.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the pods. */}}
{{- define "schedstatd.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object. */}}
{{- define "schedstatd.labels" -}}
{{ include "schedstatd.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The runtime's socket directory and socket, from runtime.type. */}}
{{- define "schedstatd.runtimeDir" -}}
{{- $dirs := dict "containerd" "/run/containerd" "crio" "/run/crio" "k3s" "/run/k3s/containerd" "rke2" "/run/k3s/containerd" -}}
{{- $t := .Values.runtime.type -}}
{{- if and (not (hasKey $dirs $t)) (ne $t "none") -}}
{{- fail (printf "runtime.type %q: want containerd, crio, k3s, rke2 or none" $t) -}}
{{- end -}}
{{- .Values.runtime.socketDir | default (get $dirs $t) -}}
{{- end -}}

{{- define "schedstatd.runtimeSocket" -}}
{{- $socks := dict "containerd" "containerd.sock" "crio" "crio.sock" "k3s" "containerd.sock" "rke2" "containerd.sock" -}}
{{- printf "%s/%s" (include "schedstatd.runtimeDir" .) (.Values.runtime.socket | default (get $socks .Values.runtime.type)) -}}
{{- end -}}

{{/* Whether the API server takes recursiveReadOnly (1.30 and later). */}}
{{- define "schedstatd.recursiveReadOnly" -}}
{{- if and .Values.recursiveReadOnly (semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version) -}}
{{- .Values.recursiveReadOnly -}}
{{- end -}}
{{- end -}}
