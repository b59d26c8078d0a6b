{{/* A Ray pod template; call with (dict "root" $ "group" "head"|"worker" "spec" .Values.ray.head|workers) */}}
{{- define "skbqa.rayPodTemplate" -}}
{{- $root := .root -}}
{{- $ctx := dict "root" $root "component" "ray" -}}
{{- /* with shipped snapshots a Serve replica fetches each version it is asked at (the reranker service says where
it was shipped) into a copy beside its index: the object store's settings, and a writable index volume */ -}}
{{- $ships := include "skbqa.shipsSnapshots" $root -}}
{{- $resources := deepCopy .spec.resources -}}
{{- if and (eq .group "worker") (gt (int .spec.gpu) 0) -}}
{{- $limits := get $resources "limits" | default dict -}}
{{- $_ := set $limits "nvidia.com/gpu" (int .spec.gpu) -}}
{{- $_ := set $resources "limits" $limits -}}
{{- end -}}
metadata:
  labels:
    {{- include "skbqa.labels" $ctx | nindent 4 }}
    skbqa.io/ray-group: {{ .group }}
  {{- if $root.Values.metrics.podAnnotations }}
  annotations:
    prometheus.io/scrape: "true"
    prometheus.io/port: "8080"
    prometheus.io/path: /metrics
  {{- end }}
spec:
  {{- /* The head keeps KubeRay's own service account when the in-tree autoscaler (a sidecar that calls the API
  server) runs in it; every other Ray pod gets the chart's token-less account. */}}
  {{- if not (and (eq .group "head") $root.Values.ray.autoscaling) }}
  serviceAccountName: {{ include "skbqa.serviceAccountName" $ctx }}
  automountServiceAccountToken: {{ $root.Values.serviceAccount.automountToken }}
  {{- end }}
  {{- with include "skbqa.imagePullSecrets" $root }}{{ . | nindent 2 }}{{- end }}
  securityContext:
    {{- include "skbqa.podSecurityContext" $root | nindent 4 }}
  {{- /* Serve replicas open the index at start (args.index_dir): like the services, wait for the ingest Job. */}}
  {{- if or $root.Values.index.waitForIndex (eq $root.Values.index.delivery "objectStore") }}
  initContainers:
    {{- include "skbqa.waitForIndexWith" (dict "root" $root "image" (include "skbqa.imageRef" (dict "image" $root.Values.ray.image "root" $root)) "pullPolicy" $root.Values.ray.image.pullPolicy) | nindent 4 }}
  {{- end }}
  containers:
    - name: ray-{{ .group }}
      image: {{ include "skbqa.imageRef" (dict "image" $root.Values.ray.image "root" $root) }}
      imagePullPolicy: {{ $root.Values.ray.image.pullPolicy }}
      env:
        - name: HOME
          value: /tmp
        - name: SKBQA_INDEX
          value: {{ include "skbqa.indexPath" $root }}
        {{- with $root.Values.ray.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
        {{- if $ships }}
        {{- include "skbqa.s3EndpointEnv" $root | nindent 8 }}
        {{- end }}
        {{- with include "skbqa.encoderUrl" $root }}
        - name: SKBQA_ENCODER_URL
          value: {{ . }}
        {{- end }}
        {{- if $root.Values.llm.enabled }}
        - name: SKBQA_LLM_BASE_URL
          value: {{ $root.Values.llm.baseUrl | quote }}
        - name: SKBQA_LLM_URL
          value: {{ $root.Values.llm.baseUrl | quote }}
        - name: SKBQA_LLM_MODEL
          value: {{ $root.Values.llm.model | quote }}
        - name: SKBQA_LLM_CONTEXT
          value: {{ $root.Values.llm.context | quote }}
        - name: SKBQA_LLM_TIMEOUT
          value: {{ $root.Values.llm.timeoutSeconds | quote }}
        {{- if $root.Values.llm.existingSecret }}
        - name: SKBQA_LLM_API_KEY
          valueFrom:
            secretKeyRef:
              name: {{ $root.Values.llm.existingSecret }}
              key: {{ $root.Values.llm.apiKeyKey }}
        {{- end }}
        {{- end }}
      {{- if $ships }}
      {{- include "skbqa.objectStoreEnvFrom" $root | nindent 6 }}
      {{- end }}
      ports:
        {{- if eq .group "head" }}
        - name: gcs
          containerPort: 6379
          protocol: TCP
        - name: dashboard
          containerPort: 8265
          protocol: TCP
        - name: client
          containerPort: 10001
          protocol: TCP
        {{- end }}
        - name: serve
          containerPort: 8000
          protocol: TCP
        - name: metrics
          containerPort: 8080
          protocol: TCP
      resources:
        {{- toYaml $resources | nindent 8 }}
      securityContext:
        {{- include "skbqa.containerSecurityContext" $root | nindent 8 }}
      volumeMounts:
        - name: index
          mountPath: {{ $root.Values.index.mountPath }}
          {{- if not $ships }}
          readOnly: true
          {{- end }}
        - name: tmp
          mountPath: /tmp
        - name: shm
          mountPath: /dev/shm
  volumes:
    {{- include "skbqa.indexVolume" $root | nindent 4 }}
    - name: tmp
      emptyDir:
        sizeLimit: 4Gi
    - name: shm
      emptyDir:
        medium: Memory
        sizeLimit: {{ $root.Values.ray.shmSize }}
  {{- with .spec.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .spec.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
