{{/*
Naming, labels and the pieces shared by the per-service templates.
Per-service templates are called with a context dict: (dict "root" $ "name" <service key> "svc" <service values>).
*/}}

{{- define "model-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-wide base name, at most 63 characters. */}}
{{- define "model-gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "model-gateway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "model-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "model-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "model-gateway.labels" -}}
helm.sh/chart: {{ include "model-gateway.chart" . }}
{{ include "model-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ include "model-gateway.imageTag" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: model-gateway
{{- end }}

{{/* Name of one service's Deployment and Service: <fullname>-<key>, the key kept whole. Context: dict root, name. */}}
{{- define "model-gateway.componentFullname" -}}
{{- $suffix := printf "-%s" .name }}
{{- $base := include "model-gateway.fullname" .root | trunc (int (sub 63 (len $suffix))) | trimSuffix "-" }}
{{- printf "%s%s" $base $suffix }}
{{- end }}

{{- define "model-gateway.componentSelectorLabels" -}}
{{ include "model-gateway.selectorLabels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{- define "model-gateway.componentLabels" -}}
{{ include "model-gateway.labels" .root }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{- define "model-gateway.secretName" -}}
{{- default (include "model-gateway.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{- define "model-gateway.providerKeysSecretName" -}}
{{- default (printf "%s-provider-keys" (include "model-gateway.fullname" .)) .Values.providerKeys.existingSecret }}
{{- end }}

{{/* The config file rendered from gatewayConfig: the ConfigMap's content, and what its name is a hash of. */}}
{{- define "model-gateway.configYaml" -}}
{{- toYaml .Values.gatewayConfig }}
{{- end }}

{{/*
The chart's ConfigMap is named after its content: a new config is a new ConfigMap, so pods of an older ReplicaSet
(a rollback, a restart during a rollout) keep mounting the config they were started with.
*/}}
{{- define "model-gateway.configMapName" -}}
{{- if .Values.existingConfigMap }}
{{- .Values.existingConfigMap }}
{{- else }}
{{- printf "%s-config-%s" (include "model-gateway.fullname" . | trunc 45 | trimSuffix "-") (include "model-gateway.configYaml" . | sha256sum | trunc 10) }}
{{- end }}
{{- end }}

{{/*
A value's kind as Helm reads values files: numbers arrive as float64, so a whole number is printed without a
decimal point or an exponent (image.tag: 20240101 is the tag "20240101", not "2.0240101e+07").
*/}}
{{- define "model-gateway.scalar" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) }}
{{- int64 . }}
{{- else }}
{{- toString . }}
{{- end }}
{{- end }}

{{- define "model-gateway.imageTag" -}}
{{- if or (kindIs "invalid" .Values.image.tag) (eq (toString .Values.image.tag) "") }}
{{- .Chart.AppVersion }}
{{- else }}
{{- include "model-gateway.scalar" .Values.image.tag }}
{{- end }}
{{- end }}

{{/* A count where 0 means 0 (default would turn it into the fallback). Context: list value fallback. */}}
{{- define "model-gateway.count" -}}
{{- $v := index . 0 }}
{{- if kindIs "invalid" $v }}
{{- index . 1 }}
{{- else }}
{{- $v }}
{{- end }}
{{- end }}

{{/*
A secretKeyRef for one key of the chart's Secret contract (admin-token, billing-database-url, ...): from
secrets.keyRefs.<key> when given, else the release's Secret (or existingSecret). Context: dict root, key, optional.
*/}}
{{- define "model-gateway.secretKeyRef" -}}
{{- $ref := get (default (dict) .root.Values.secrets.keyRefs) .key -}}
secretKeyRef:
  name: {{ if $ref }}{{ $ref.name }}{{ else }}{{ include "model-gateway.secretName" .root }}{{ end }}
  key: {{ if $ref }}{{ $ref.key }}{{ else }}{{ .key }}{{ end }}
  {{- if hasKey . "optional" }}
  optional: {{ .optional }}
  {{- end }}
{{- end }}

{{/* Whether a key of the Secret contract has a source: keyRefs, existingSecret, or the value. Context: dict root, key, value. */}}
{{- define "model-gateway.hasSecret" -}}
{{- if or (hasKey (default (dict) .root.Values.secrets.keyRefs) .key) .root.Values.secrets.existingSecret .value }}true{{ end }}
{{- end }}

{{/* TRUST_PROXY of edge: trustProxy, else "1" behind the chart's ingress (one proxy hop), else unset. */}}
{{- define "model-gateway.trustProxy" -}}
{{- if ne (toString .Values.trustProxy) "" }}
{{- include "model-gateway.scalar" .Values.trustProxy }}
{{- else if .Values.ingress.enabled }}
{{- "1" }}
{{- end }}
{{- end }}

{{/* Whether a service of the values is enabled. Context: dict root, name. */}}
{{- define "model-gateway.enabled" -}}
{{- $svc := get .root.Values.services .name }}
{{- if and $svc $svc.enabled }}true{{ end }}
{{- end }}

{{/*
Where media keeps its bytes: "s3", "pvc" or "emptyDir" (mediaStorage in values.yaml).
*/}}
{{- define "model-gateway.mediaStore" -}}
{{- if .Values.mediaStorage.s3.bucket }}s3{{ else if .Values.mediaStorage.persistence.enabled }}pvc{{ else }}emptyDir{{ end }}
{{- end }}

{{- define "model-gateway.mediaClaimName" -}}
{{- default (printf "%s-media" (include "model-gateway.fullname" .)) .Values.mediaStorage.persistence.existingClaim }}
{{- end }}

{{/* The Deployment strategy of one service. Context: dict root, name, svc. */}}
{{- define "model-gateway.strategy" -}}
{{- if .svc.strategy }}
{{- toYaml .svc.strategy }}
{{- else if and (eq .name "media") (eq (include "model-gateway.mediaStore" .root) "pvc") (not (has "ReadWriteMany" .root.Values.mediaStorage.persistence.accessModes)) }}
{{- toYaml (dict "type" "Recreate") }}
{{- else }}
{{- toYaml .root.Values.strategy }}
{{- end }}
{{- end }}

{{- define "model-gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "model-gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "model-gateway.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "model-gateway.imageTag" .) }}
{{- end }}
{{- end }}

{{/* GATEWAY_PUBLIC_URL: publicUrl, else the first ingress host, else empty. */}}
{{- define "model-gateway.publicUrl" -}}
{{- if .Values.publicUrl }}
{{- trimSuffix "/" .Values.publicUrl }}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts }}
{{- $host := (first .Values.ingress.hosts).host }}
{{- if $host }}
{{- $tls := false }}
{{- range .Values.ingress.tls }}
{{- if has $host (default (list) .hosts) }}
{{- $tls = true }}
{{- end }}
{{- end }}
{{- printf "%s://%s" (ternary "https" "http" $tls) $host }}
{{- end }}
{{- end }}
{{- end }}

{{/* In-cluster URL of a service. Context: dict root, name. */}}
{{- define "model-gateway.serviceUrl" -}}
{{- $svc := get .root.Values.services .name }}
{{- printf "http://%s:%d" (include "model-gateway.componentFullname" .) (int $svc.port) }}
{{- end }}

{{/* Grace period of one service's pods, in seconds. Context: dict root, svc. */}}
{{- define "model-gateway.gracePeriodSeconds" -}}
{{- int (include "model-gateway.count" (list .svc.terminationGracePeriodSeconds .root.Values.terminationGracePeriodSeconds)) }}
{{- end }}

{{/* DRAIN_TIMEOUT_MS: the time from SIGTERM to SIGKILL, i.e. the grace period minus the preStop sleep. Context: dict root, svc. */}}
{{- define "model-gateway.drainTimeoutMs" -}}
{{- mul (sub (int (include "model-gateway.gracePeriodSeconds" .)) (int (default 0 .root.Values.preStopSleepSeconds))) 1000 }}
{{- end }}

{{/* The container environment of one service. Context: dict root, name, svc. */}}
{{- define "model-gateway.env" -}}
{{- $root := .root }}
{{- $name := .name }}
{{- $svc := .svc }}
{{- $kafka := $root.Values.bus.kafka -}}
- name: PORT
  value: {{ int $svc.port | quote }}
- name: METRICS_PORT
  value: {{ int $svc.metricsPort | quote }}
- name: HOST
  value: "0.0.0.0"
- name: DRAIN_TIMEOUT_MS
  value: {{ include "model-gateway.drainTimeoutMs" . | quote }}
- name: LOG_LEVEL
  value: {{ default $root.Values.logLevel $svc.logLevel | quote }}
{{- with include "model-gateway.publicUrl" $root }}
- name: GATEWAY_PUBLIC_URL
  value: {{ . | quote }}
{{- end }}
{{- with $root.Values.otel.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: GATEWAY_INTERNAL_TOKEN
  valueFrom:
    {{- include "model-gateway.secretKeyRef" (dict "root" $root "key" "internal-token") | nindent 4 }}
{{- if include "model-gateway.hasSecret" (dict "root" $root "key" "internal-token-accepted" "value" $root.Values.secrets.internalTokenAccepted) }}
- name: GATEWAY_INTERNAL_TOKEN_ACCEPTED
  valueFrom:
    {{- include "model-gateway.secretKeyRef" (dict "root" $root "key" "internal-token-accepted" "optional" true) | nindent 4 }}
{{- end }}
{{- range $peer := $svc.peers }}
{{- if include "model-gateway.enabled" (dict "root" $root "name" $peer) }}
- name: {{ printf "%s_URL" ($peer | replace "-" "_" | upper) }}
  value: {{ include "model-gateway.serviceUrl" (dict "root" $root "name" $peer) | quote }}
{{- end }}
{{- end }}
{{- if $svc.database }}
- name: DATABASE_URL
  valueFrom:
    {{- include "model-gateway.secretKeyRef" (dict "root" $root "key" (printf "%s-database-url" $name) "optional" (eq $svc.database "optional")) | nindent 4 }}
{{- end }}
{{- if or $svc.redis (and $svc.bus (eq $root.Values.bus.type "redis")) }}
- name: REDIS_URL
  valueFrom:
    {{- include "model-gateway.secretKeyRef" (dict "root" $root "key" "redis-url") | nindent 4 }}
{{- end }}
{{- if $svc.bus }}
- name: BUS
  value: {{ $root.Values.bus.type | quote }}
{{- if eq $root.Values.bus.type "kafka" }}
- name: KAFKA_BROKERS
  value: {{ $kafka.brokers | quote }}
{{- with $kafka.topicPrefix }}
- name: KAFKA_TOPIC_PREFIX
  value: {{ . | quote }}
{{- end }}
{{- if $kafka.tls }}
- name: KAFKA_SSL
  value: "true"
{{- end }}
{{- if include "model-gateway.kafkaCa" $root }}
- name: KAFKA_SSL_CA_FILE
  value: {{ printf "%s/%s" (include "model-gateway.kafkaCaDir" $root) $kafka.ca.key | quote }}
{{- end }}
{{- with (dig "topics" "partitions" nil $kafka) }}
- name: KAFKA_TOPIC_PARTITIONS
  value: {{ int . | quote }}
{{- end }}
{{- with (dig "topics" "replication" nil $kafka) }}
- name: KAFKA_TOPIC_REPLICATION
  value: {{ int . | quote }}
{{- end }}
{{- with (dig "sasl" "mechanism" "" $kafka) }}
- name: KAFKA_SASL_MECHANISM
  value: {{ . | quote }}
- name: KAFKA_SASL_USERNAME
  value: {{ $kafka.sasl.username | quote }}
- name: KAFKA_SASL_PASSWORD
  valueFrom:
    {{- include "model-gateway.secretKeyRef" (dict "root" $root "key" "kafka-sasl-password") | nindent 4 }}
{{- end }}
{{- end }}
{{- end }}
{{- if $svc.config }}
- name: GATEWAY_CONFIG
  value: /etc/gateway/config.yaml
{{- end }}
{{- if $root.Values.demoCatalogue }}
- name: GATEWAY_DEMO_CATALOGUE
  value: "true"
{{- end }}
{{- if $svc.adminToken }}
- name: GATEWAY_ADMIN_TOKEN
  valueFrom:
    {{- include "model-gateway.secretKeyRef" (dict "root" $root "key" "admin-token") | nindent 4 }}
{{- end }}
{{- if eq $name "edge" }}
{{- with include "model-gateway.trustProxy" $root }}
{{- /* Behind a proxy every client shares its address: the anonymous meter must see the client's. */}}
- name: TRUST_PROXY
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- if eq $name "mcp" }}
{{- /* The MCP tools call the gateway's public routes through the edge, with each caller's key. */}}
- name: EDGE_URL
  value: {{ include "model-gateway.serviceUrl" (dict "root" $root "name" "edge") | quote }}
{{- end }}
{{- if eq $name "catalogue" }}
{{- /* The status monitor's api check calls the public API through edge, inside the cluster. */}}
- name: STATUS_API_URL
  value: {{ include "model-gateway.serviceUrl" (dict "root" $root "name" "edge") | quote }}
{{- end }}
{{- if eq $name "media" }}
- name: GATEWAY_DATA_DIR
  value: /data
{{- with $root.Values.mediaStorage.s3 }}
{{- if .bucket }}
- name: MEDIA_S3_BUCKET
  value: {{ .bucket | quote }}
{{- with .prefix }}
- name: MEDIA_S3_PREFIX
  value: {{ . | quote }}
{{- end }}
{{- with .region }}
- name: MEDIA_S3_REGION
  value: {{ . | quote }}
{{- end }}
{{- with .endpoint }}
- name: MEDIA_S3_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: MEDIA_S3_FORCE_PATH_STYLE
  value: {{ .forcePathStyle | toString | quote }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    {{- include "model-gateway.secretKeyRef" (dict "root" $root "key" "media-s3-access-key-id" "optional" true) | nindent 4 }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    {{- include "model-gateway.secretKeyRef" (dict "root" $root "key" "media-s3-secret-access-key" "optional" true) | nindent 4 }}
{{- end }}
{{- end }}
{{- end }}
{{- with $root.Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- with $svc.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* envFrom of one service (may be empty). Context: dict root, name, svc. */}}
{{- define "model-gateway.envFrom" -}}
{{- $out := list }}
{{- if .svc.providerKeys }}
{{- $out = append $out (dict "secretRef" (dict "name" (include "model-gateway.providerKeysSecretName" .root))) }}
{{- end }}
{{- $out = concat $out (default (list) .root.Values.extraEnvFrom) (default (list) .svc.extraEnvFrom) }}
{{- if $out }}
{{- toYaml $out }}
{{- end }}
{{- end }}

{{/* api_key_env names the gateway config uses that providerKeys.keys does not set (chart-created Secret only). */}}
{{- define "model-gateway.missingProviderKeys" -}}
{{- $missing := list }}
{{- if and (not .Values.providerKeys.existingSecret) (not .Values.existingConfigMap) }}
{{- range (default (list) .Values.gatewayConfig.providers) }}
{{- if and .api_key_env (not (hasKey (default (dict) $.Values.providerKeys.keys) .api_key_env)) }}
{{- $missing = append $missing .api_key_env }}
{{- end }}
{{- end }}
{{- end }}
{{- join ", " $missing }}
{{- end }}

{{/* "true" when the pods trust the brokers by a CA of their own (bus.kafka.ca): the kafka bus, TLS on, a Secret or ConfigMap named. */}}
{{- define "model-gateway.kafkaCa" -}}
{{- $k := .Values.bus.kafka }}
{{- if and (eq .Values.bus.type "kafka") $k.tls (or (dig "ca" "secretName" "" $k) (dig "ca" "configMapName" "" $k)) }}true{{- end }}
{{- end }}

{{/* Where the brokers' CA is mounted in a pod that uses the bus. */}}
{{- define "model-gateway.kafkaCaDir" -}}/etc/kafka-ca{{- end }}

{{/* Refuses values that cannot work, naming the field. Included once, by deployment.yaml. */}}
{{- define "model-gateway.validate" -}}
{{- $root := . }}
{{- $s := .Values.secrets }}
{{- if not (has .Values.bus.type (list "redis" "kafka")) }}
{{- fail (printf "bus.type must be \"redis\" or \"kafka\", not %q (the in-memory bus does not cross pods)" (toString .Values.bus.type)) }}
{{- end }}
{{- if and (eq .Values.bus.type "kafka") (not .Values.bus.kafka.brokers) }}
{{- fail "bus.kafka.brokers is required when bus.type is kafka (comma-separated host:port list)" }}
{{- end }}
{{- if and (eq .Values.bus.type "kafka") (dig "sasl" "mechanism" "" .Values.bus.kafka) }}
{{- if not .Values.bus.kafka.sasl.username }}
{{- fail "bus.kafka.sasl.username is required with bus.kafka.sasl.mechanism" }}
{{- end }}
{{- if not (include "model-gateway.hasSecret" (dict "root" . "key" "kafka-sasl-password" "value" $s.kafkaSaslPassword)) }}
{{- fail "secrets.kafkaSaslPassword (or secrets.keyRefs.kafka-sasl-password, or existingSecret) is required with bus.kafka.sasl.mechanism" }}
{{- end }}
{{- end }}
{{- $ca := dig "ca" (dict) .Values.bus.kafka }}
{{- if and (dig "secretName" "" $ca) (dig "configMapName" "" $ca) }}
{{- fail "bus.kafka.ca: set secretName or configMapName, not both" }}
{{- end }}
{{- if and (eq .Values.bus.type "kafka") (or (dig "secretName" "" $ca) (dig "configMapName" "" $ca)) (not .Values.bus.kafka.tls) }}
{{- fail "bus.kafka.ca needs bus.kafka.tls: true (the CA is only read for TLS to the brokers)" }}
{{- end }}
{{- if not (include "model-gateway.hasSecret" (dict "root" . "key" "internal-token" "value" $s.internalToken)) }}
{{- fail "secrets.internalToken is required (or set secrets.existingSecret); e.g. --set secrets.internalToken=$(openssl rand -hex 32)" }}
{{- end }}
{{- /* The services refuse a shorter one at start (readFleetEnv): refuse it here, before any pod crash-loops. */}}
{{- range $field, $value := dict "internalToken" $s.internalToken "internalTokenAccepted" $s.internalTokenAccepted }}
{{- if and $value (lt (len (toString $value)) 16) }}
{{- fail (printf "secrets.%s must be at least 16 characters (every service refuses a shorter one at start); e.g. $(openssl rand -hex 32)" $field) }}
{{- end }}
{{- end }}
{{- range $key, $ref := (default (dict) $s.keyRefs) }}
{{- if not (and $ref $ref.name $ref.key) }}
{{- fail (printf "secrets.keyRefs.%s needs both name and key (the Secret and the key in it)" $key) }}
{{- end }}
{{- end }}
{{- range $k, $v := (default (dict) .Values.providerKeys.keys) }}
{{- if not (regexMatch "^[A-Za-z_][A-Za-z0-9_]*$" $k) }}
{{- fail (printf "providerKeys.keys.%s: not a valid environment variable name" $k) }}
{{- end }}
{{- end }}
{{- $edge := .Values.services.edge }}
{{- if and $edge $edge.enabled (not (include "model-gateway.enabled" (dict "root" . "name" "billing"))) }}
{{- fail "services.billing must be enabled with edge: edge verifies every key with billing" }}
{{- end }}
{{- range $name, $svc := .Values.services }}
{{- if and $svc $svc.enabled }}
{{- if not (regexMatch "^[a-z]([-a-z0-9]*[a-z0-9])?$" $name) }}
{{- fail (printf "services.%s: the key must be a lowercase DNS label (it names the Deployment and Service)" $name) }}
{{- end }}
{{- if not $svc.port }}
{{- fail (printf "services.%s.port is required" $name) }}
{{- end }}
{{- if not $svc.metricsPort }}
{{- fail (printf "services.%s.metricsPort is required (probes and /metrics listen there, never on the public port)" $name) }}
{{- end }}
{{- if eq (int $svc.metricsPort) (int $svc.port) }}
{{- fail (printf "services.%s.metricsPort must differ from its port" $name) }}
{{- end }}
{{- if not $svc.bus }}
{{- fail (printf "services.%s.bus must be true: every fleet process refuses to start without BUS" $name) }}
{{- end }}
{{- if lt (int (include "model-gateway.drainTimeoutMs" (dict "root" $root "svc" $svc))) 10000 }}
{{- fail (printf "services.%s: terminationGracePeriodSeconds must exceed preStopSleepSeconds by 10 s at least (the drain keeps its last 5 s for settles and closing the bus)" $name) }}
{{- end }}
{{- if not $svc.command }}
{{- fail (printf "services.%s.command is required" $name) }}
{{- end }}
{{- if not (has (toString (default "" $svc.database)) (list "" "required" "optional")) }}
{{- fail (printf "services.%s.database must be \"required\", \"optional\" or \"\"" $name) }}
{{- end }}
{{- /* edge routes to whichever services run and answers the others' routes 404; a service needs its peers. */}}
{{- if ne $name "edge" }}
{{- range $peer := (default (list) $svc.peers) }}
{{- if not (include "model-gateway.enabled" (dict "root" $root "name" $peer)) }}
{{- fail (printf "services.%s.peers: %q is not an enabled service (enable it or remove it from the list)" $name $peer) }}
{{- end }}
{{- end }}
{{- end }}
{{- if dig "autoscaling" "enabled" false $svc }}
{{- if not (or $svc.autoscaling.targetCPUUtilizationPercentage $svc.autoscaling.targetMemoryUtilizationPercentage) }}
{{- fail (printf "services.%s.autoscaling: set targetCPUUtilizationPercentage or targetMemoryUtilizationPercentage" $name) }}
{{- end }}
{{- end }}
{{- if and (eq (toString $svc.database) "required") (not (include "model-gateway.hasSecret" (dict "root" $root "key" (printf "%s-database-url" $name) "value" (get (default (dict) $s.databaseUrls) $name)))) }}
{{- fail (printf "secrets.databaseUrls.%s is required: %s owns its tables in its own PostgreSQL database (postgres://user:password@host:5432/db)" $name $name) }}
{{- end }}
{{- if and (or $svc.redis (and $svc.bus (eq $root.Values.bus.type "redis"))) (not (include "model-gateway.hasSecret" (dict "root" $root "key" "redis-url" "value" $s.redisUrl))) }}
{{- fail (printf "secrets.redisUrl is required (services.%s uses Redis): redis://[:password@]host:6379/0" $name) }}
{{- end }}
{{- if and $svc.adminToken (not $s.existingSecret) (not (hasKey (default (dict) $s.keyRefs) "admin-token")) (lt (len (toString (default "" $s.adminToken))) 8) }}
{{- fail "secrets.adminToken is required, at least 8 characters (GATEWAY_ADMIN_TOKEN of the admin API)" }}
{{- end }}
{{- end }}
{{- end }}
{{- $media := .Values.services.media }}
{{- if and $media $media.enabled (not (dig "autoscaling" "enabled" false $media)) (gt (int (include "model-gateway.count" (list $media.replicas 1))) 1) }}
{{- $store := include "model-gateway.mediaStore" . }}
{{- if or (eq $store "emptyDir") (and (eq $store "pvc") (not (has "ReadWriteMany" .Values.mediaStorage.persistence.accessModes))) }}
{{- fail (printf "services.media.replicas is %d, but media keeps its files on one %s: set mediaStorage.s3.bucket, or a ReadWriteMany claim (mediaStorage.persistence.accessModes), or run one replica" (int $media.replicas) (ternary "ReadWriteOnce volume" "pod's emptyDir" (eq $store "pvc"))) }}
{{- end }}
{{- end }}
{{- if .Values.ingress.enabled }}
{{- if not (and $edge $edge.enabled) }}
{{- fail "ingress.enabled needs services.edge enabled: the ingress points at edge" }}
{{- end }}
{{- end }}
{{- end }}
