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
app.kubernetes.io/version: {{ default .Chart.AppVersion .Values.image.tag | trunc 63 | trimSuffix "-" | quote }}
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

{{- define "model-gateway.configMapName" -}}
{{- default (printf "%s-config" (include "model-gateway.fullname" .)) .Values.existingConfigMap }}
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
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
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
{{- int (default .root.Values.terminationGracePeriodSeconds .svc.terminationGracePeriodSeconds) }}
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
{{- $secret := include "model-gateway.secretName" $root -}}
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
    secretKeyRef:
      name: {{ $secret }}
      key: internal-token
{{- range $peer := $svc.peers }}
- name: {{ printf "%s_URL" ($peer | replace "-" "_" | upper) }}
  value: {{ include "model-gateway.serviceUrl" (dict "root" $root "name" $peer) | quote }}
{{- end }}
{{- if $svc.database }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ printf "%s-database-url" $name }}
      optional: {{ eq $svc.database "optional" }}
{{- end }}
{{- if or $svc.redis (and $svc.bus (eq $root.Values.bus.type "redis")) }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: redis-url
{{- end }}
{{- if $svc.bus }}
- name: BUS
  value: {{ $root.Values.bus.type | quote }}
{{- if eq $root.Values.bus.type "kafka" }}
- name: KAFKA_BROKERS
  value: {{ $root.Values.bus.kafka.brokers | quote }}
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
    secretKeyRef:
      name: {{ $secret }}
      key: admin-token
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
    secretKeyRef:
      name: {{ $secret }}
      key: media-s3-access-key-id
      optional: true
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: media-s3-secret-access-key
      optional: true
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

{{/* Refuses values that cannot work, naming the field. Included once, by deployment.yaml. */}}
{{- define "model-gateway.validate" -}}
{{- $root := . }}
{{- if not (has .Values.bus.type (list "redis" "kafka")) }}
{{- fail (printf "bus.type must be \"redis\" or \"kafka\", not %q (the in-memory bus does not cross pods)" (toString .Values.bus.type)) }}
{{- end }}
{{- if and (eq .Values.bus.type "kafka") (not .Values.bus.kafka.brokers) }}
{{- fail "bus.kafka.brokers is required when bus.type is kafka (comma-separated host:port list)" }}
{{- end }}
{{- $external := .Values.secrets.existingSecret }}
{{- if and (not $external) (not .Values.secrets.internalToken) }}
{{- fail "secrets.internalToken is required (or set secrets.existingSecret); e.g. --set secrets.internalToken=$(openssl rand -hex 32)" }}
{{- end }}
{{- range $k, $v := (default (dict) .Values.providerKeys.keys) }}
{{- if not (regexMatch "^[A-Za-z_][A-Za-z0-9_]*$" $k) }}
{{- fail (printf "providerKeys.keys.%s: not a valid environment variable name" $k) }}
{{- end }}
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
{{- range $peer := (default (list) $svc.peers) }}
{{- $p := get $root.Values.services $peer }}
{{- if not (and $p $p.enabled) }}
{{- fail (printf "services.%s.peers: %q is not an enabled service (enable it or remove it from the list)" $name $peer) }}
{{- end }}
{{- end }}
{{- if dig "autoscaling" "enabled" false $svc }}
{{- if not (or $svc.autoscaling.targetCPUUtilizationPercentage $svc.autoscaling.targetMemoryUtilizationPercentage) }}
{{- fail (printf "services.%s.autoscaling: set targetCPUUtilizationPercentage or targetMemoryUtilizationPercentage" $name) }}
{{- end }}
{{- end }}
{{- if not $external }}
{{- if and (eq (toString $svc.database) "required") (not (get (default (dict) $root.Values.secrets.databaseUrls) $name)) }}
{{- fail (printf "secrets.databaseUrls.%s is required: %s owns its tables in its own PostgreSQL database (postgres://user:password@host:5432/db)" $name $name) }}
{{- end }}
{{- if and (or $svc.redis (and $svc.bus (eq $root.Values.bus.type "redis"))) (not $root.Values.secrets.redisUrl) }}
{{- fail (printf "secrets.redisUrl is required (services.%s uses Redis): redis://[:password@]host:6379/0" $name) }}
{{- end }}
{{- if and $svc.adminToken (lt (len (toString (default "" $root.Values.secrets.adminToken))) 8) }}
{{- fail "secrets.adminToken is required, at least 8 characters (GATEWAY_ADMIN_TOKEN of the admin API)" }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- if .Values.ingress.enabled }}
{{- $edge := .Values.services.edge }}
{{- if not (and $edge $edge.enabled) }}
{{- fail "ingress.enabled needs services.edge enabled: the ingress points at edge" }}
{{- end }}
{{- end }}
{{- end }}
