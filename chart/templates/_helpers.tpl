{{/*
Names. The StatefulSet's name is the pods' prefix (<set>-<ordinal>), at most
52 characters: Kubernetes adds a controller-revision-hash label of the name
plus 11 characters, which must fit in 63.
*/}}
{{- define "eco.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 52 | trimSuffix "-" }}
{{- end }}

{{- define "eco.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The headless service: the pods' DNS names are <pod>.<this>.<namespace>.svc.<cluster domain>. */}}
{{- define "eco.headlessService" -}}
{{- printf "%s-headless" (include "eco.fullname" .) }}
{{- end }}

{{/* The client service (etcd's client port). */}}
{{- define "eco.clientService" -}}
{{- include "eco.fullname" . }}
{{- end }}

{{- define "eco.clusterName" -}}
{{- default (include "eco.fullname" .) .Values.clusterName }}
{{- end }}

{{- define "eco.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "eco.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "eco.gossipSecretName" -}}
{{- default (printf "%s-gossip" (include "eco.fullname" .)) .Values.gossip.existingSecret }}
{{- end }}

{{- define "eco.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "eco.selectorLabels" -}}
app.kubernetes.io/name: {{ include "eco.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "eco.labels" -}}
helm.sh/chart: {{ include "eco.chart" . }}
{{ include "eco.selectorLabels" . }}
app.kubernetes.io/version: {{ include "eco.imageTag" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "eco.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "eco.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "eco.imageTag" .) }}
{{- end }}

{{/*
Where the pod's files are: kept in one place so the config, the mounts and
NOTES agree.
*/}}
{{- define "eco.paths" -}}
config: /etc/eco/eco.toml
replicasDir: /etc/eco/replicas
gossipDir: /etc/eco/gossip
tlsDir: /etc/eco/tls
dataRoot: /var/lib/eco
dataDir: /var/lib/eco/etcd
generatedTlsDir: /var/lib/eco/tls
snapshotsDir: /var/lib/eco-snapshots
storeCredentialsDir: /etc/eco/store-credentials
snapshotIdentityDir: /etc/eco/snapshot-identity
{{- end }}

{{/* The API's scheme, for probes and scraping. */}}
{{- define "eco.apiScheme" -}}
{{- if .Values.api.tls.enabled }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/*
maxUnavailable of the PodDisruptionBudget: the members that may be gone
while a quorum remains, floor((replicas - 1) / 2); 1 for one or two
replicas (such a cluster survives no disruption; NOTES says so).
*/}}
{{- define "eco.pdbMaxUnavailable" -}}
{{- $n := int .Values.replicas }}
{{- if le $n 2 }}1{{ else }}{{ div (sub $n 1) 2 }}{{ end }}
{{- end }}

{{/* A TOML basic string: a JSON string is one (Go's encoder emits no "\/"). */}}
{{- define "eco.toml" -}}
{{- toJson . }}
{{- end }}

{{/* A TOML array of strings, one line: ["a", "b"]. */}}
{{- define "eco.tomlList" -}}
{{- $items := list }}
{{- range . }}{{ $items = append $items (toJson (toString .)) }}{{ end }}
{{- printf "[%s]" (join ", " $items) }}
{{- end }}

{{/* The desired size eco reads: desiredReplicas, else replicas; never above replicas. */}}
{{- define "eco.desiredReplicas" -}}
{{- $n := int .Values.replicas }}
{{- if kindIs "invalid" .Values.desiredReplicas }}{{ $n }}
{{- else if gt (int .Values.desiredReplicas) $n }}
{{- fail (printf "desiredReplicas (%d) is above replicas (%d): eco would wait for pods that do not exist" (int .Values.desiredReplicas) $n) }}
{{- else }}{{ int .Values.desiredReplicas }}
{{- end }}
{{- end }}

{{/*
The Secret and key of the GCS or Azure store's credentials file, as YAML
(secret, key); empty when the store is another kind or uses the
environment's identity.
*/}}
{{- define "eco.storeCredentials" -}}
{{- $kind := .Values.store.kind -}}
{{- if or (eq $kind "gcs") (eq $kind "azure") -}}
{{- $c := (index .Values.store $kind).credentials -}}
{{- if $c.existingSecret -}}
secret: {{ $c.existingSecret }}
key: {{ $c.key }}
{{- end -}}
{{- end -}}
{{- end }}
