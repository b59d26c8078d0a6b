{{/* ---------------------------------------------------------------------------------------------------------
Names and labels
--------------------------------------------------------------------------------------------------------- */}}

{{- define "skbqa.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "skbqa.fullname" -}}
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

{{/* "<fullname>-<component>"; call with (dict "root" $ "component" "gateway") */}}
{{- define "skbqa.componentName" -}}
{{- printf "%s-%s" (include "skbqa.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "skbqa.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of one component; call with (dict "root" $ "component" "gateway") */}}
{{- define "skbqa.selectorLabels" -}}
app.kubernetes.io/name: {{ include "skbqa.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Selector of every pod of the release (used by the default-deny and DNS policies). */}}
{{- define "skbqa.releaseSelector" -}}
app.kubernetes.io/name: {{ include "skbqa.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* All labels of one component's objects; call with (dict "root" $ "component" "gateway"); component may be "" */}}
{{- define "skbqa.labels" -}}
helm.sh/chart: {{ include "skbqa.chart" .root }}
app.kubernetes.io/name: {{ include "skbqa.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- if .component }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
app.kubernetes.io/part-of: skbqa
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* ---------------------------------------------------------------------------------------------------------
Images
--------------------------------------------------------------------------------------------------------- */}}

{{/* (dict "image" .Values.image "root" $) -> repository:tag or repository@digest */}}
{{- define "skbqa.imageRef" -}}
{{- $tag := .image.tag | default .root.Chart.AppVersion -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "skbqa.image" -}}
{{- include "skbqa.imageRef" (dict "image" .Values.image "root" .) -}}
{{- end -}}

{{/* ---------------------------------------------------------------------------------------------------------
Service settings: serviceDefaults deep-merged with services.<name>. Helm's mergeOverwrite ignores false, 0 and ""
in the override, so an explicit `enabled: false` would be lost; this merge keeps every explicit value.
--------------------------------------------------------------------------------------------------------- */}}

{{- define "skbqa.deepMerge" -}}
{{- $base := deepCopy .base -}}
{{- range $key, $value := .over -}}
{{- $current := get $base $key -}}
{{- if and (kindIs "map" $value) (kindIs "map" $current) -}}
{{- $_ := set $base $key (fromYaml (include "skbqa.deepMerge" (dict "base" $current "over" $value))) -}}
{{- else -}}
{{- $_ := set $base $key $value -}}
{{- end -}}
{{- end -}}
{{- toYaml $base -}}
{{- end -}}

{{/* (dict "root" $ "name" "parser") -> YAML of the merged settings */}}
{{- define "skbqa.serviceSettings" -}}
{{- $over := get .root.Values.services .name | default dict -}}
{{- include "skbqa.deepMerge" (dict "base" .root.Values.serviceDefaults "over" $over) -}}
{{- end -}}

{{/* The six pipeline services in pipeline order. */}}
{{- define "skbqa.serviceNames" -}}
gateway parser symbols grounding ranking reranker
{{- end -}}

{{/* Topic each stage consumes (the gateway consumes answers and is not lag-scaled). */}}
{{- define "skbqa.inputTopic" -}}
{{- $topics := dict "gateway" "skbqa.answer" "parser" "skbqa.query" "symbols" "skbqa.parsed" "grounding" "skbqa.symbols" "ranking" "skbqa.grounded" "reranker" "skbqa.ranked" -}}
{{- get $topics . -}}
{{- end -}}

{{/* Kafka consumer group of a stage (StageWorker's default `skbqa-<role>`; the `group` label of skbqa_kafka_lag, which
carries no topic prefix). */}}
{{- define "skbqa.consumerGroup" -}}
{{- printf "skbqa-%s" . -}}
{{- end -}}

{{/* ---------------------------------------------------------------------------------------------------------
Backend endpoints
--------------------------------------------------------------------------------------------------------- */}}

{{- define "skbqa.kafkaBootstrap" -}}
{{- if .Values.kafka.enabled -}}
{{- printf "%s-kafka:9092" .Release.Name -}}
{{- else -}}
{{- required "externalKafka.bootstrap is required when kafka.enabled is false" .Values.externalKafka.bootstrap -}}
{{- end -}}
{{- end -}}

{{- define "skbqa.vectorsUrl" -}}
{{- if .Values.milvus.enabled -}}
{{- printf "milvus://%s-milvus:19530" .Release.Name -}}
{{- else -}}
{{- .Values.externalMilvus.url -}}
{{- end -}}
{{- end -}}

{{- define "skbqa.graphUrl" -}}
{{- if .Values.nebula.enabled -}}
{{- printf "nebula://nebula-graphd-svc:9669/%s" .Values.nebula.space -}}
{{- else -}}
{{- .Values.externalNebula.url -}}
{{- end -}}
{{- end -}}

{{- define "skbqa.encoderUrl" -}}
{{- if .Values.triton.enabled -}}
{{- printf "triton://%s:8001/%s" (include "skbqa.componentName" (dict "root" . "component" "triton")) .Values.triton.modelName -}}
{{- else -}}
{{- .Values.externalTriton.url -}}
{{- end -}}
{{- end -}}

{{- define "skbqa.rayAddress" -}}
{{- if .Values.ray.enabled -}}
{{- printf "ray://%s-head-svc:10001" (include "skbqa.componentName" (dict "root" . "component" "ray")) -}}
{{- end -}}
{{- end -}}

{{- define "skbqa.indexPath" -}}
{{- printf "%s/%s" (trimSuffix "/" .Values.index.mountPath) .Values.index.subdir -}}
{{- end -}}

{{- define "skbqa.indexClaim" -}}
{{- .Values.index.existingClaim | default (include "skbqa.componentName" (dict "root" . "component" "index")) -}}
{{- end -}}

{{/* Loader flags of the backends: "host:port[,host:port]" and the space of the graph URL, the Milvus URI. */}}
{{- define "skbqa.graphAddr" -}}
{{- regexReplaceAll "/.*$" (trimPrefix "nebula://" (include "skbqa.graphUrl" .)) "" -}}
{{- end -}}

{{- define "skbqa.graphSpace" -}}
{{- regexReplaceAll "^[^/]*/" (trimPrefix "nebula://" (include "skbqa.graphUrl" .)) "" -}}
{{- end -}}

{{/* `skbqa load-milvus --uri` takes pymilvus' http:// form of the chart's milvus:// URL. */}}
{{- define "skbqa.milvusUri" -}}
{{- printf "http://%s" (trimPrefix "milvus://" (include "skbqa.vectorsUrl" .)) -}}
{{- end -}}

{{/* ---------------------------------------------------------------------------------------------------------
Backend credentials: only ever env vars from existing Secrets (secretKeyRef), never values or URL userinfo.
Call with (dict "root" $ "kafka" bool "milvus" bool "nebula" bool); renders env list items (or nothing).
--------------------------------------------------------------------------------------------------------- */}}
{{- define "skbqa.backendCredentialsEnv" -}}
{{- $c := .root.Values.credentials -}}
{{- if and .kafka $c.kafka.existingSecret }}
- name: SKBQA_KAFKA_SECURITY_PROTOCOL
  value: {{ $c.kafka.securityProtocol | quote }}
- name: SKBQA_KAFKA_SASL_MECHANISM
  value: {{ $c.kafka.saslMechanism | quote }}
- name: SKBQA_KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ $c.kafka.existingSecret }}
      key: {{ $c.kafka.usernameKey }}
- name: SKBQA_KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $c.kafka.existingSecret }}
      key: {{ $c.kafka.passwordKey }}
{{- end }}
{{- if and .milvus $c.milvus.existingSecret }}
- name: SKBQA_MILVUS_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ $c.milvus.existingSecret }}
      key: {{ $c.milvus.tokenKey }}
{{- end }}
{{- if and .nebula $c.nebula.existingSecret }}
- name: SKBQA_NEBULA_USER
  valueFrom:
    secretKeyRef:
      name: {{ $c.nebula.existingSecret }}
      key: {{ $c.nebula.usernameKey }}
- name: SKBQA_NEBULA_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $c.nebula.existingSecret }}
      key: {{ $c.nebula.passwordKey }}
{{- end }}
{{- end -}}

{{/* ---------------------------------------------------------------------------------------------------------
Pod pieces shared by every skbqa pod
--------------------------------------------------------------------------------------------------------- */}}

{{- define "skbqa.podSecurityContext" -}}
{{ toYaml .Values.podSecurityContext }}
{{- end -}}

{{- define "skbqa.containerSecurityContext" -}}
{{ toYaml .Values.containerSecurityContext }}
{{- end -}}

{{/* "imagePullSecrets: [...]" or nothing; call as {{- with include "skbqa.imagePullSecrets" $ }}{{ . | nindent N }}{{- end }} */}}
{{- define "skbqa.imagePullSecrets" -}}
{{- if .Values.imagePullSecrets -}}
imagePullSecrets:
{{- range .Values.imagePullSecrets }}
  - name: {{ . }}
{{- end }}
{{- end -}}
{{- end -}}

{{- define "skbqa.serviceAccountName" -}}
{{- if .root.Values.serviceAccount.create -}}
{{- include "skbqa.componentName" . -}}
{{- else -}}
default
{{- end -}}
{{- end -}}

{{/* The init container that waits for the ingest Job's manifest: it mounts the volume root (not the index
directory) so it sees the directory the Job swaps in. */}}
{{- define "skbqa.waitForIndex" -}}
{{- include "skbqa.waitForIndexWith" (dict "root" . "image" (include "skbqa.image" .) "pullPolicy" .Values.image.pullPolicy) -}}
{{- end -}}

{{/* The same, in another image that has Python (the Ray pods pull only the Ray image):
(dict "root" $ "image" ref "pullPolicy" policy). With index.delivery objectStore it is the init container that
fetches the published index onto the pod's own volume instead (waiting until the ingest Job has published one). */}}
{{- define "skbqa.waitForIndexWith" -}}
{{- $root := .root -}}
{{- if eq $root.Values.index.delivery "objectStore" -}}
{{- include "skbqa.fetchIndex" . -}}
{{- else -}}
- name: wait-for-index
  image: {{ .image }}
  imagePullPolicy: {{ .pullPolicy }}
  command: ["python", "-c"]
  args:
    - |
      import os, sys, time
      path = os.path.join({{ include "skbqa.indexPath" $root | quote }}, "manifest.json")
      waited = 0
      while not os.path.isfile(path):
          if waited % 60 == 0:
              print(f"waiting for {path} (the ingest Job writes it)", flush=True)
          time.sleep(5)
          waited += 5
      print(f"index ready: {path}", flush=True)
  resources:
    requests:
      cpu: 10m
      memory: 32Mi
    limits:
      cpu: 100m
      memory: 64Mi
  securityContext:
    {{- include "skbqa.containerSecurityContext" $root | nindent 4 }}
  volumeMounts:
    - name: index
      mountPath: {{ $root.Values.index.mountPath }}
      readOnly: true
{{- end -}}
{{- end -}}

{{/* `skbqa index pull`: the published index onto this pod's emptyDir, every file checked against the manifest
(index.delivery objectStore). It waits for a publication, so a pod that starts before the ingest Job has finished
waits here, as with a volume. */}}
{{- define "skbqa.fetchIndex" -}}
{{- $root := .root -}}
- name: fetch-index
  image: {{ .image }}
  imagePullPolicy: {{ .pullPolicy }}
  command: ["skbqa"]
  args:
    - index
    - pull
    - --from
    - {{ $root.Values.index.objectStore.url | quote }}
    - --index
    - {{ include "skbqa.indexPath" $root }}
    - --wait
  env:
    {{- include "skbqa.objectStoreEnv" $root | nindent 4 }}
  {{- include "skbqa.objectStoreEnvFrom" $root | nindent 2 }}
  resources:
    requests:
      cpu: 100m
      memory: 256Mi
    limits:
      cpu: "1"
      memory: 1Gi
  securityContext:
    {{- include "skbqa.containerSecurityContext" $root | nindent 4 }}
  volumeMounts:
    - name: index
      mountPath: {{ $root.Values.index.mountPath }}
    - name: tmp
      mountPath: /tmp
{{- end -}}

{{/* `skbqa index push`: the ingest Job's last step with index.delivery objectStore. */}}
{{- define "skbqa.publishIndexContainer" -}}
- name: publish-index
  image: {{ include "skbqa.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args:
    - index
    - push
    - --index
    - {{ include "skbqa.indexPath" . }}
    - --to
    - {{ .Values.index.objectStore.url | quote }}
  env:
    {{- include "skbqa.objectStoreEnv" . | nindent 4 }}
  {{- include "skbqa.objectStoreEnvFrom" . | nindent 2 }}
  resources:
    requests:
      cpu: 100m
      memory: 256Mi
    limits:
      cpu: "1"
      memory: 1Gi
  securityContext:
    {{- include "skbqa.containerSecurityContext" . | nindent 4 }}
  volumeMounts:
    - name: index
      mountPath: {{ .Values.index.mountPath }}
      readOnly: true
    - name: tmp
      mountPath: /tmp
{{- end -}}

{{- define "skbqa.objectStoreEnv" -}}
- name: HOME
  value: /tmp
{{- with .Values.index.objectStore.endpointUrl }}
- name: SKBQA_S3_ENDPOINT_URL
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{- define "skbqa.objectStoreEnvFrom" -}}
{{- with .Values.index.objectStore.existingSecret -}}
envFrom:
  - secretRef:
      name: {{ . }}
{{- end -}}
{{- end -}}

{{/* The index volume of a pod that reads it: the PVC, or (objectStore) the emptyDir its fetch-index fills. */}}
{{- define "skbqa.indexVolume" -}}
- name: index
{{- if eq .Values.index.delivery "objectStore" }}
  emptyDir:
    sizeLimit: {{ .Values.index.objectStore.sizeLimit }}
{{- else }}
  persistentVolumeClaim:
    claimName: {{ include "skbqa.indexClaim" . }}
    readOnly: true
{{- end }}
{{- end -}}

{{/* One NetworkPolicy egress rule (as a one-item YAML list) to a backend: (dict "peers" [...] "ports" [...]).
No peers = any destination, still restricted to the ports. */}}
{{- define "skbqa.egressRule" -}}
{{- $ports := list -}}
{{- range .ports -}}
{{- $ports = append $ports (dict "protocol" "TCP" "port" .) -}}
{{- end -}}
{{- $rule := dict "ports" $ports -}}
{{- if .peers -}}
{{- $_ := set $rule "to" .peers -}}
{{- end -}}
{{- toYaml (list $rule) -}}
{{- end -}}

{{/* One NetworkPolicy ingress rule (as a one-item YAML list): (dict "peers" [...] "ports" [...]); no peers = any source. */}}
{{- define "skbqa.ingressRule" -}}
{{- $ports := list -}}
{{- range .ports -}}
{{- $ports = append $ports (dict "protocol" "TCP" "port" .) -}}
{{- end -}}
{{- $rule := dict "ports" $ports -}}
{{- if .peers -}}
{{- $_ := set $rule "from" .peers -}}
{{- end -}}
{{- toYaml (list $rule) -}}
{{- end -}}

{{/* Egress to the LLM endpoint: ipBlocks of llm.egress.cidrs (minus `except`) and any extra peers. */}}
{{- define "skbqa.llmEgress" -}}
- to:
    {{- range .Values.llm.egress.cidrs }}
    - ipBlock:
        cidr: {{ . }}
        {{- with $.Values.llm.egress.except }}
        except:
          {{- toYaml . | nindent 10 }}
        {{- end }}
    {{- end }}
    {{- with .Values.llm.egress.peers }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    {{- range .Values.llm.egress.ports }}
    - protocol: TCP
      port: {{ . }}
    {{- end }}
{{- end -}}


{{/* ---------------------------------------------------------------------------------------------------------
The ingest Job's containers
--------------------------------------------------------------------------------------------------------- */}}

{{/* `skbqa ingest BUNDLE --index DIR`: the only writer of the index volume. */}}
{{- define "skbqa.ingestContainer" -}}
{{- $bundle := .Values.ingest.bundle.imagePath -}}
{{- if .Values.ingest.bundle.existingClaim -}}
{{- $bundle = "/bundle" -}}
{{- end -}}
- name: ingest
  image: {{ include "skbqa.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args:
    - ingest
    - {{ $bundle }}
    - --index
    - {{ include "skbqa.indexPath" . }}
    - --no-progress
    {{- range .Values.ingest.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  env:
    - name: HOME
      value: /tmp
    - name: TMPDIR
      value: /tmp
  resources:
    {{- toYaml .Values.ingest.resources | nindent 4 }}
  securityContext:
    {{- include "skbqa.containerSecurityContext" . | nindent 4 }}
  volumeMounts:
    - name: index
      mountPath: {{ .Values.index.mountPath }}
    - name: tmp
      mountPath: /tmp
    {{- if .Values.ingest.bundle.existingClaim }}
    - name: bundle
      mountPath: /bundle
      readOnly: true
      {{- with .Values.ingest.bundle.subPath }}
      subPath: {{ . }}
      {{- end }}
    {{- end }}
{{- end -}}

{{/* `skbqa load-milvus` and/or `skbqa load-nebula` over the finished index (read-only), one container each: they
are independent, so they run side by side. Credentials reach the CLI flags through Kubernetes' $(VAR) expansion
of env vars that come from the Secret, so no value or rendered manifest ever holds them. */}}
{{- define "skbqa.backendLoaders" -}}
{{- $vectors := include "skbqa.vectorsUrl" . -}}
{{- $graph := include "skbqa.graphUrl" . -}}
{{- $c := .Values.credentials -}}
{{- range $loader := list "milvus" "nebula" }}
{{- if or (and (eq $loader "milvus") $vectors) (and (eq $loader "nebula") $graph) }}
- name: load-{{ $loader }}
  image: {{ include "skbqa.image" $ }}
  imagePullPolicy: {{ $.Values.image.pullPolicy }}
  args:
    - load-{{ $loader }}
    - --index
    - {{ include "skbqa.indexPath" $ }}
    {{- if eq $loader "milvus" }}
    - --uri
    - {{ include "skbqa.milvusUri" $ }}
    - --index-type
    - {{ $.Values.ingest.load.milvusIndexType }}
    {{- if $c.milvus.existingSecret }}
    - --token
    - $(SKBQA_MILVUS_TOKEN)
    {{- end }}
    {{- else }}
    - --addr
    - {{ include "skbqa.graphAddr" $ }}
    - --space
    - {{ include "skbqa.graphSpace" $ }}
    {{- if $c.nebula.existingSecret }}
    - --user
    - $(SKBQA_NEBULA_USER)
    - --password
    - $(SKBQA_NEBULA_PASSWORD)
    {{- end }}
    {{- end }}
  env:
    - name: HOME
      value: /tmp
    - name: TMPDIR
      value: /tmp
    {{- include "skbqa.backendCredentialsEnv" (dict "root" $ "milvus" (eq $loader "milvus") "nebula" (eq $loader "nebula")) | nindent 4 }}
  resources:
    {{- toYaml $.Values.ingest.load.resources | nindent 4 }}
  securityContext:
    {{- include "skbqa.containerSecurityContext" $ | nindent 4 }}
  volumeMounts:
    - name: index
      mountPath: {{ $.Values.index.mountPath }}
      readOnly: true
    - name: tmp
      mountPath: /tmp
{{- end }}
{{- end }}
{{- end -}}

{{/* A bounded load-generator run's id: its Jobs are named `<fullname>-loadgen-<id>` (NOTES.txt prints it). */}}
{{- define "skbqa.loadgenRunId" -}}
{{- toJson (dict "loadgen" .Values.loadgen "image" (include "skbqa.imageRef" (dict "image" .Values.loadgen.image "root" .))) | sha256sum | trunc 8 -}}
{{- end -}}
