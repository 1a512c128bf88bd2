{{- /*
checkpointd.readYAML: one object out of a file of the chart (dict "root" $
"file" path), as JSON, so that the caller gets it back with fromJson. A file
that is missing, is not YAML or holds more than one document fails the
render.
*/ -}}
{{- define "checkpointd.readYAML" -}}
{{- $raw := .root.Files.Get .file }}
{{- if not $raw }}
  {{- fail (printf "%s: missing or empty" .file) }}
{{- end }}
{{- $docs := 0 }}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" $raw -1 }}
  {{- if regexMatch "(?m)^[^#\\s]" $doc }}
    {{- $docs = add1 $docs }}
  {{- end }}
{{- end }}
{{- if ne $docs 1 }}
  {{- fail (printf "%s: %d YAML documents; the chart reads one object per file" .file $docs) }}
{{- end }}
{{- $obj := fromYaml $raw }}
{{- if hasKey $obj "Error" }}
  {{- fail (printf "%s: %s" .file $obj.Error) }}
{{- end }}
{{- mustToJson $obj }}
{{- end }}

{{- /*
checkpointd.kustomizeHash: the suffix kustomize gives a generated ConfigMap
(sigs.k8s.io/kustomize/api/hasher) of the data .data: the first 10 hex
digits of the SHA-256 of {"data":…,"kind":"ConfigMap","name":""} as Go's
encoding/json writes it, with 0, 1, 3, a and e replaced so that it never
reads as a number or a word. The name is empty because kustomize's hasher
looks it up as one field called "metadata/name", which finds nothing;
TestHelmDefaultsEqualKustomize notices if that ever changes.
*/ -}}
{{- define "checkpointd.kustomizeHash" -}}
{{- sha256sum (mustToJson (dict "data" .data "kind" "ConfigMap" "name" "")) | trunc 10 | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t" }}
{{- end }}

{{- /* checkpointd.enabled: "true" if the values keep the object. */ -}}
{{- define "checkpointd.enabled" -}}
{{- $v := .root.Values }}
{{- if eq .obj.kind "HorizontalPodAutoscaler" }}
  {{- $v.autoscaling.enabled }}
{{- else if eq .obj.kind "ServiceMonitor" }}
  {{- $v.monitoring.serviceMonitor.enabled }}
{{- else if eq .obj.kind "PrometheusRule" }}
  {{- $v.monitoring.prometheusRule.enabled }}
{{- else }}
  {{- true }}
{{- end }}
{{- end }}

{{- /*
checkpointd.patch: changes an object (dict "obj" "root" "generated") in place
as the values ask; a value left null keeps the base's.
*/ -}}
{{- define "checkpointd.patch" -}}
{{- if eq .obj.kind "Deployment" }}
  {{- include "checkpointd.patch.Deployment" . }}
{{- else if eq .obj.kind "HorizontalPodAutoscaler" }}
  {{- include "checkpointd.patch.HorizontalPodAutoscaler" . }}
{{- end }}
{{- end }}

{{- define "checkpointd.patch.Deployment" -}}
{{- $v := .root.Values }}
{{- $spec := .obj.spec }}
{{- $pod := $spec.template.spec }}
{{- if not (kindIs "invalid" $v.replicas) }}
  {{- $_ := set $spec "replicas" $v.replicas }}
{{- end }}
{{- if ne (len $pod.containers) 1 }}
  {{- fail (printf "Deployment %s: the chart expects one container in the base, not %d" .obj.metadata.name (len $pod.containers)) }}
{{- end }}
{{- $c := index $pod.containers 0 }}

{{- /* image: repository and tag of the base's, each replaceable. */}}
{{- $repo := $c.image }}
{{- $tag := "" }}
{{- if regexMatch ":[^:/]+$" $c.image }}
  {{- $repo = regexReplaceAll ":[^:/]+$" $c.image "" }}
  {{- $tag = trimPrefix (printf "%s:" $repo) $c.image }}
{{- end }}
{{- $repo = $v.image.repository | default $repo }}
{{- $tag = $v.image.tag | default $tag }}
{{- $_ := set $c "image" (ternary (printf "%s:%s" $repo $tag) $repo (ne $tag "")) }}
{{- if $v.image.pullPolicy }}
  {{- $_ := set $c "imagePullPolicy" $v.image.pullPolicy }}
{{- end }}

{{- if not (kindIs "invalid" $v.resources) }}
  {{- $_ := set $c "resources" $v.resources }}
{{- end }}

{{- /* environment: GOMEMLIMIT, then extraEnv (replacing a base variable of the same name). */}}
{{- $env := $c.env | default list }}
{{- $extra := deepCopy ($v.extraEnv | default list) }}
{{- if $v.goMemLimit }}
  {{- $extra = prepend $extra (dict "name" "GOMEMLIMIT" "value" $v.goMemLimit) }}
{{- end }}
{{- range $e := $extra }}
  {{- $replaced := false }}
  {{- range $i, $old := $env }}
    {{- if eq $old.name $e.name }}
      {{- $env = concat (slice $env 0 $i) (list $e) (slice $env (add1 $i)) }}
      {{- $replaced = true }}
    {{- end }}
  {{- end }}
  {{- if not $replaced }}
    {{- $env = append $env $e }}
  {{- end }}
{{- end }}
{{- if $env }}
  {{- $_ := set $c "env" $env }}
{{- end }}

{{- /* secrets.sasl: the Secret behind envFrom, renamed or dropped. */}}
{{- if not (kindIs "invalid" $v.secrets.sasl) }}
  {{- $envFrom := list }}
  {{- $found := 0 }}
  {{- range $e := $c.envFrom | default list }}
    {{- if $e.secretRef }}
      {{- $found = add1 $found }}
      {{- if $v.secrets.sasl }}
        {{- $_ := set $e.secretRef "name" $v.secrets.sasl }}
        {{- $envFrom = append $envFrom $e }}
      {{- end }}
    {{- else }}
      {{- $envFrom = append $envFrom $e }}
    {{- end }}
  {{- end }}
  {{- if ne $found 1 }}
    {{- fail (printf "secrets.sasl: the base's container has %d Secrets in envFrom, the chart expects one" $found) }}
  {{- end }}
  {{- if $envFrom }}
    {{- $_ := set $c "envFrom" $envFrom }}
  {{- else }}
    {{- $_ := unset $c "envFrom" }}
  {{- end }}
{{- end }}

{{- /* secrets.tls: Secrets mounted as files. */}}
{{- $volumes := $pod.volumes | default list }}
{{- $mounts := $c.volumeMounts | default list }}
{{- range $i, $s := $v.secrets.tls }}
  {{- $vol := printf "tls-%d" $i }}
  {{- $volumes = append $volumes (dict "name" $vol "secret" (dict "secretName" $s.name)) }}
  {{- $mounts = append $mounts (dict "name" $vol "mountPath" $s.mountPath "readOnly" true) }}
{{- end }}
{{- if $v.secrets.tls }}
  {{- $_ := set $pod "volumes" $volumes }}
  {{- $_ := set $c "volumeMounts" $mounts }}
{{- end }}

{{- /* Pod scheduling and pulling, where set. */}}
{{- range $field := list "imagePullSecrets" "nodeSelector" "tolerations" "affinity" "priorityClassName" }}
  {{- $value := get $v $field }}
  {{- if $value }}
    {{- if hasKey $pod $field }}
      {{- fail (printf "%s: the base's pod spec sets it already; the chart would overwrite it" $field) }}
    {{- end }}
    {{- $_ := set $pod $field $value }}
  {{- end }}
{{- end }}
{{- if $v.podAnnotations }}
  {{- $meta := $spec.template.metadata }}
  {{- $_ := set $meta "annotations" (mergeOverwrite (dict) ($meta.annotations | default dict) $v.podAnnotations) }}
{{- end }}

{{- /* Generated ConfigMaps under their hashed names, as kustomize's name references do. */}}
{{- $gen := .generated }}
{{- range $vol := $pod.volumes | default list }}
  {{- if and $vol.configMap (hasKey $gen $vol.configMap.name) }}
    {{- $_ := set $vol.configMap "name" (get $gen $vol.configMap.name) }}
  {{- end }}
{{- end }}
{{- range $e := $c.envFrom | default list }}
  {{- if and $e.configMapRef (hasKey $gen $e.configMapRef.name) }}
    {{- $_ := set $e.configMapRef "name" (get $gen $e.configMapRef.name) }}
  {{- end }}
{{- end }}
{{- range $e := $c.env | default list }}
  {{- if and $e.valueFrom $e.valueFrom.configMapKeyRef (hasKey $gen $e.valueFrom.configMapKeyRef.name) }}
    {{- $_ := set $e.valueFrom.configMapKeyRef "name" (get $gen $e.valueFrom.configMapKeyRef.name) }}
  {{- end }}
{{- end }}
{{- end }}

{{- define "checkpointd.patch.HorizontalPodAutoscaler" -}}
{{- $v := .root.Values }}
{{- $spec := .obj.spec }}
{{- if not (kindIs "invalid" $v.autoscaling.minReplicas) }}
  {{- $_ := set $spec "minReplicas" $v.autoscaling.minReplicas }}
{{- else if not (kindIs "invalid" $v.replicas) }}
  {{- $_ := set $spec "minReplicas" $v.replicas }}
{{- end }}
{{- if not (kindIs "invalid" $v.autoscaling.maxReplicas) }}
  {{- $_ := set $spec "maxReplicas" $v.autoscaling.maxReplicas }}
{{- end }}
{{- if and $v.autoscaling.enabled (gt (int $spec.minReplicas) (int $spec.maxReplicas)) }}
  {{- fail (printf "HorizontalPodAutoscaler %s: minReplicas %v above maxReplicas %v; set autoscaling.maxReplicas" .obj.metadata.name $spec.minReplicas $spec.maxReplicas) }}
{{- end }}
{{- end }}
