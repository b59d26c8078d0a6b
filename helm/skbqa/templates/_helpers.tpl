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

{{/* (dict "root" $ "name" "parser") -> YAML of the merged settings ("updater": see skbqa.updaterSettings) */}}
{{- define "skbqa.serviceSettings" -}}
{{- if eq .name "updater" -}}
{{- include "skbqa.updaterSettings" .root -}}
{{- else -}}
{{- $over := get .root.Values.services .name | default dict -}}
{{- include "skbqa.deepMerge" (dict "base" .root.Values.serviceDefaults "over" $over) -}}
{{- end -}}
{{- end -}}

{{/* The updater's settings: serviceDefaults, with what `updates` sets (an empty map or list there inherits), and
what the index's one writer must be: one pod, so no HPA, no PodDisruptionBudget (with one pod it could only block
node drains or allow everything) and no spread. */}}
{{- define "skbqa.updaterSettings" -}}
{{- $u := .Values.updates -}}
{{- $over := dict "enabled" $u.enabled "replicas" 1 "autoscaling" (dict "enabled" false) "pdb" (dict "enabled" false) "topologySpread" (dict "enabled" false) -}}
{{- range $key := list "resources" "terminationGracePeriodSeconds" "nodeSelector" "tolerations" "affinity" "extraEnv" "extraArgs" -}}
{{- $value := get $u $key -}}
{{- if or (kindIs "float64" $value) (kindIs "int" $value) (kindIs "int64" $value) (not (empty $value)) -}}
{{- $_ := set $over $key $value -}}
{{- end -}}
{{- end -}}
{{- include "skbqa.deepMerge" (dict "base" .Values.serviceDefaults "over" $over) -}}
{{- end -}}

{{/* The six pipeline services in pipeline order. */}}
{{- define "skbqa.serviceNames" -}}
gateway parser symbols grounding ranking reranker
{{- end -}}

{{/* Every component rendered as a service (Deployment, Service, NetworkPolicy, …, by services.yaml and
networkpolicy.yaml): the six pipeline services and, with updates.enabled, the updater (`skbqa serve --role
updater`, the index's one writer: docs/updates.md). */}}
{{- define "skbqa.servedNames" -}}
{{- include "skbqa.serviceNames" . -}}
{{- if .Values.updates.enabled }} updater{{ end -}}
{{- end -}}

{{/* Components that encode texts, so call the encoder (Triton when configured): the parser, symbols and ranking
for questions, the updater for the texts a change adds or alters. */}}
{{- define "skbqa.encoderClients" -}}
parser symbols ranking{{ if .Values.updates.enabled }} updater{{ end }}
{{- end -}}

{{/* Components that search vectors, so call Milvus when configured: symbols and ranking, and with updates.enabled
the updater, which loads each knowledge-base version's collections before it announces the version. */}}
{{- define "skbqa.vectorsClients" -}}
symbols ranking{{ if .Values.updates.enabled }} updater{{ end }}
{{- end -}}

{{/* "true" when live updates ship snapshots through the object store (updates.enabled with index.delivery
objectStore): the updater pushes each snapshot to index.objectStore.url and every stage, whose index is a copy of
its own, fetches the versions it announces (docs/updates.md "Shipped snapshots"). */}}
{{- define "skbqa.shipsSnapshots" -}}
{{- if and .Values.updates.enabled (eq .Values.index.delivery "objectStore") }}true{{ end -}}
{{- end -}}

{{/* The index directory of a service: (dict "root" $ "name" NAME). With shipped snapshots the updater's is on a
volume of its own, under the ingest generation, so a re-ingest (a new generation) starts it from the newly
published index instead of the knowledge base it kept. */}}
{{- define "skbqa.indexPathOf" -}}
{{- $root := .root -}}
{{- if and (eq .name "updater") (include "skbqa.shipsSnapshots" $root) -}}
{{- printf "%s/generation-%v/%s" (trimSuffix "/" $root.Values.index.mountPath) $root.Values.ingest.generation $root.Values.index.subdir -}}
{{- else -}}
{{- include "skbqa.indexPath" $root -}}
{{- end -}}
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
    - {{ .index | default (include "skbqa.indexPath" $root) }}
    - --wait
    {{- if .keep }}
    - --keep
    {{- end }}
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
{{- include "skbqa.s3EndpointEnv" . }}
{{- end -}}

{{- define "skbqa.s3EndpointEnv" -}}
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
{{- include "skbqa.indexVolumeOf" (dict "root" . "writable" false) -}}
{{- end -}}

{{/* The same, for a pod that reads it or (writable: the updater) writes it: (dict "root" $ "writable" bool). */}}
{{- define "skbqa.indexVolumeOf" -}}
{{- $root := .root -}}
- name: index
{{- if and .writable (include "skbqa.shipsSnapshots" $root) }}
  persistentVolumeClaim:
    claimName: {{ include "skbqa.componentName" (dict "root" $root "component" "updater-index") }}
{{- else if eq $root.Values.index.delivery "objectStore" }}
  emptyDir:
    sizeLimit: {{ $root.Values.index.objectStore.sizeLimit }}
{{- else }}
  persistentVolumeClaim:
    claimName: {{ include "skbqa.indexClaim" $root }}
    {{- if not .writable }}
    readOnly: true
    {{- end }}
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

{{/* ---------------------------------------------------------------------------------------------------------
Live updates (updates.enabled): what cannot work is refused here, before anything is rendered (docs/updates.md,
docs/deploy.md "Live updates"). A ReadWriteOnce index volume is not refused: every pod that mounts it must then
run on one node, which is the operator's call (NOTES.txt says so).
--------------------------------------------------------------------------------------------------------- */}}
{{- define "skbqa.checkUpdates" -}}
{{- $u := .Values.updates -}}
{{- /* the single-partition topics, whether or not updates are on: every stage and gateway reads skbqa.versions */}}
{{- if and .Values.kafka.enabled .Values.kafka.provisioning.enabled }}
{{- $listed := dict }}
{{- range .Values.kafka.provisioning.topics }}
{{- if has .name (list "skbqa.changes" "skbqa.versions") }}
{{- $_ := set $listed .name true }}
{{- if ne (int .partitions) 1 }}
{{- fail (printf "kafka.provisioning.topics lists %s with %v partitions: it must have exactly 1 (live updates rely on one ordered stream: versions are given out in that order)" .name .partitions) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and $u.enabled (not (hasKey $listed "skbqa.changes")) }}
{{- fail "updates.enabled with the bundled Kafka needs skbqa.changes in kafka.provisioning.topics with partitions: 1 (the updater takes change batches in the one order of a single partition)" }}
{{- end }}
{{- end }}
{{- if $u.enabled }}
{{- $fixed := list }}
{{- if .Values.nebula.enabled }}{{ $fixed = append $fixed "NebulaGraph (nebula.enabled)" }}{{ end }}
{{- if and (not .Values.nebula.enabled) .Values.externalNebula.url }}{{ $fixed = append $fixed "NebulaGraph (externalNebula.url)" }}{{ end }}
{{- if $fixed }}
{{- fail (printf "updates.enabled cannot work with %s: the services using them serve copies of the index there that do not follow changes (docs/updates.md), so the gateway would refuse every ApplyChanges with FAILED_PRECONDITION. Switch those off, or leave updates off" (join ", " $fixed)) }}
{{- end }}
{{- if and .Values.gateway.auth.enabled (not $u.adminTokens.existingSecret) }}
{{- fail "updates.enabled with gateway.auth.enabled needs updates.adminTokens.existingSecret: on a gateway that checks tokens only an admin token may call ApplyChanges, so without one no change could ever be applied" }}
{{- end }}
{{- if and $u.adminTokens.existingSecret (not .Values.gateway.auth.enabled) }}
{{- fail "updates.adminTokens.existingSecret needs gateway.auth.enabled: admin tokens turn the gateway's token check on, so every call without an admin token would be refused UNAUTHENTICATED. Turn gateway.auth on (the askers' tokens), or leave adminTokens empty (then anyone who reaches the gateway may change the knowledge base: restrict networkPolicy.clients)" }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The gateway's admin tokens (ApplyChanges) with updates.enabled: the Secret's mount and the variable naming it.
"env", "mount" or "volume"; call with (dict "root" $ "part" "env"). Renders nothing when there are none. */}}
{{- define "skbqa.adminTokens" -}}
{{- $u := .root.Values.updates -}}
{{- if and $u.enabled $u.adminTokens.existingSecret -}}
{{- if eq .part "env" }}
- name: SKBQA_ADMIN_TOKENS_FILE
  value: /etc/skbqa/admin/{{ $u.adminTokens.tokensKey }}
{{- else if eq .part "mount" }}
- name: admin
  mountPath: /etc/skbqa/admin
  readOnly: true
{{- else if eq .part "volume" }}
- name: admin
  secret:
    secretName: {{ $u.adminTokens.existingSecret }}
    defaultMode: 0440
{{- end }}
{{- end -}}
{{- end -}}
