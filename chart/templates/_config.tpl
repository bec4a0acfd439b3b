{{/*
eco.toml, rendered from the values. Only keys of config.example.toml;
every key is explained there and in docs/configuration.md. Values left empty leave eco's default.
*/}}
{{- define "eco.config" -}}
{{- $p := include "eco.paths" . | fromYaml -}}
{{- $v := .Values -}}
# eco.toml rendered by the Helm chart {{ include "eco.chart" . }} for release {{ .Release.Name }}.
# Every key: config.example.toml; check with `eco config check`.

[cluster]
name = {{ include "eco.clusterName" . | include "eco.toml" }}

[provider]
kind = "statefulset"
refresh_interval = {{ $v.refreshInterval | include "eco.toml" }}

[provider.statefulset]
service = {{ include "eco.headlessService" . | include "eco.toml" }}
# The desired size, from the ConfigMap {{ include "eco.fullname" . }}-replicas mounted as a
# directory: `helm upgrade --set replicas=N` reaches every running pod
# without a restart.
replicas_file = {{ printf "%s/replicas" $p.replicasDir | include "eco.toml" }}
set = {{ include "eco.fullname" . | include "eco.toml" }}
namespace = {{ .Release.Namespace | include "eco.toml" }}
cluster_domain = {{ $v.clusterDomain | include "eco.toml" }}

[etcd]
data_dir = {{ $p.dataDir | include "eco.toml" }}
client_port = {{ int $v.ports.client }}
peer_port = {{ int $v.ports.peer }}
metrics_port = {{ int $v.ports.etcdMetrics }}
client_http_port = {{ int $v.ports.clientHttp }}
quota_backend_bytes = {{ int64 $v.etcd.quotaBackendBytes }}
auto_compaction_mode = {{ $v.etcd.autoCompactionMode | include "eco.toml" }}
auto_compaction_retention = {{ $v.etcd.autoCompactionRetention | toString | include "eco.toml" }}
heartbeat_interval = {{ $v.etcd.heartbeatInterval | include "eco.toml" }}
election_timeout = {{ $v.etcd.electionTimeout | include "eco.toml" }}
{{- with $v.etcd.extraFlags }}
extra_flags = {{ include "eco.tomlList" . }}
{{- end }}
{{- if eq $v.tls.mode "plaintext" }}

# tls.mode = plaintext: etcd's traffic in the clear, on purpose.
[etcd.tls]
plaintext = true
{{- else if eq $v.tls.mode "generated" }}

# tls.mode = generated: certificates from the cluster's own CA, kept in the
# snapshot store with its key sealed under the gossip keys; files in
# {{ $p.generatedTlsDir }} (ca.crt, member.crt, eco.crt and their keys).
[etcd.tls.generated]
{{- $svc := include "eco.clientService" . }}
{{- $names := list $svc (printf "%s.%s" $svc .Release.Namespace) (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.%s" $svc .Release.Namespace $v.clusterDomain) }}
extra_names = {{ concat $names $v.tls.generated.extraNames | uniq | include "eco.tomlList" }}
validity = {{ $v.tls.generated.validity | include "eco.toml" }}
renew_before = {{ $v.tls.generated.renewBefore | include "eco.toml" }}
{{- else if eq $v.tls.mode "existingSecret" }}
{{- $d := $p.tlsDir }}

# tls.mode = existingSecret: the Secret {{ $v.tls.existingSecret.name }} (ca.crt, tls.crt, tls.key)
# mounted in {{ $d }}; renewals in place are read without a restart.
[etcd.tls.client]
cert_file = {{ printf "%s/tls.crt" $d | include "eco.toml" }}
key_file = {{ printf "%s/tls.key" $d | include "eco.toml" }}
trusted_ca_file = {{ printf "%s/ca.crt" $d | include "eco.toml" }}
client_cert_auth = {{ $v.tls.existingSecret.clientCertAuth }}

[etcd.tls.peer]
cert_file = {{ printf "%s/tls.crt" $d | include "eco.toml" }}
key_file = {{ printf "%s/tls.key" $d | include "eco.toml" }}
trusted_ca_file = {{ printf "%s/ca.crt" $d | include "eco.toml" }}
client_cert_auth = true

[etcd.tls.eco]
cert_file = {{ printf "%s/tls.crt" $d | include "eco.toml" }}
key_file = {{ printf "%s/tls.key" $d | include "eco.toml" }}
{{- end }}

[gossip]
port = {{ int $v.ports.gossip }}
key_file = {{ printf "%s/gossip.keys" $p.gossipDir | include "eco.toml" }}

[snapshot]
store = {{ $v.store.kind | include "eco.toml" }}
interval = {{ $v.snapshot.interval | include "eco.toml" }}
max_age = {{ $v.snapshot.maxAge | include "eco.toml" }}
keep_last = {{ int $v.snapshot.keepLast }}
keep_hourly = {{ int $v.snapshot.keepHourly }}
keep_daily = {{ int $v.snapshot.keepDaily }}
{{- if eq $v.store.kind "s3" }}
{{- $s3 := $v.store.s3 }}

[snapshot.s3]
bucket = {{ $s3.bucket | include "eco.toml" }}
prefix = {{ $s3.prefix | include "eco.toml" }}
{{- with $s3.region }}
region = {{ include "eco.toml" . }}
{{- end }}
{{- with $s3.endpoint }}
endpoint = {{ include "eco.toml" . }}
{{- end }}
force_path_style = {{ $s3.forcePathStyle }}
encryption = {{ $s3.encryption | include "eco.toml" }}
{{- with $s3.kmsKeyId }}
kms_key_id = {{ include "eco.toml" . }}
{{- end }}
{{- else if eq $v.store.kind "gcs" }}
{{- $gcs := $v.store.gcs }}

[snapshot.gcs]
bucket = {{ $gcs.bucket | include "eco.toml" }}
prefix = {{ $gcs.prefix | include "eco.toml" }}
{{- with $gcs.endpoint }}
endpoint = {{ include "eco.toml" . }}
{{- end }}
{{- if $gcs.credentials.existingSecret }}
# The key of the Secret {{ $gcs.credentials.existingSecret }}, mounted as a file.
credentials_file = {{ printf "%s/%s" $p.storeCredentialsDir $gcs.credentials.key | include "eco.toml" }}
{{- end }}
{{- else if eq $v.store.kind "azure" }}
{{- $azure := $v.store.azure }}

[snapshot.azure]
account = {{ $azure.account | include "eco.toml" }}
container = {{ $azure.container | include "eco.toml" }}
prefix = {{ $azure.prefix | include "eco.toml" }}
{{- with $azure.endpoint }}
endpoint = {{ include "eco.toml" . }}
{{- end }}
{{- if $azure.credentials.existingSecret }}
# The key of the Secret {{ $azure.credentials.existingSecret }}, mounted as a file.
access_key_file = {{ printf "%s/%s" $p.storeCredentialsDir $azure.credentials.key | include "eco.toml" }}
{{- end }}
{{- else if eq $v.store.kind "dir" }}

# The ReadWriteMany claim {{ $v.store.dir.existingClaim }}, mounted in every pod.
[snapshot.dir]
path = {{ $p.snapshotsDir | include "eco.toml" }}
{{- end }}
{{- $enc := $v.snapshot.encryption }}
{{- if and $enc $enc.recipients }}

# Snapshots and segments encrypted to these recipients (age).
[snapshot.encryption]
recipients = {{ $enc.recipients | include "eco.tomlList" }}
{{- if $enc.identity.existingSecret }}
# The key of the Secret {{ $enc.identity.existingSecret }}, mounted as a file.
identity_file = {{ printf "%s/%s" $p.snapshotIdentityDir $enc.identity.key | include "eco.toml" }}
{{- end }}
{{- end }}

[recovery]
quorum_loss_timeout = {{ $v.recovery.quorumLossTimeout | include "eco.toml" }}
# Well above the time a pod's volume takes to re-attach on another node.
unhealthy_member_ttl = {{ $v.recovery.unhealthyMemberTtl | include "eco.toml" }}
learner_timeout = {{ $v.recovery.learnerTimeout | include "eco.toml" }}
{{- with $v.recovery.acceptLossAfter }}
accept_loss_after = {{ include "eco.toml" . }}
{{- end }}
{{- with $v.recovery.bootstrapFrom }}
bootstrap_from = {{ include "eco.toml" . }}
{{- end }}

[api]
port = {{ int $v.ports.api }}
{{- if $v.api.tls.enabled }}

[api.tls]
enabled = true
{{- end }}

[log]
level = {{ $v.log.level | include "eco.toml" }}
format = {{ $v.log.format | include "eco.toml" }}
{{- with $v.extraConfig }}

# extraConfig
{{ trim . }}
{{- end }}
{{- end }}
