{{/* The name every object takes: the release's, as deploy/switchyard.yaml names them. */}}
{{- define "switchyard.fullname" -}}
{{- .Release.Name | trunc 53 | trimSuffix "-" -}}
{{- end -}}

{{- define "switchyard.labels" -}}
app.kubernetes.io/name: switchyard
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Selector of the pods that run NGINX: the all-in-one pods, or in split mode the appliers. */}}
{{- define "switchyard.dataPlaneSelector" -}}
{{ include "switchyard.labels" . }}
{{- if eq .Values.mode "split" }}
app.kubernetes.io/component: applier
{{- end }}
{{- end -}}

{{/* The flags every process of the controller shares: `run`'s, or every split-mode stage's. */}}
{{- define "switchyard.commonArgs" -}}
{{- $name := include "switchyard.fullname" . }}
{{- $c := .Values.controller }}
- --http-addr=0.0.0.0:8080,[::]:8080
- --https-addr=0.0.0.0:8443,[::]:8443
- --state-dir=/var/lib/switchyard
- --configmap={{ .Release.Namespace }}/{{ $name }}
{{- if .Values.tcp }}
- --tcp-services-configmap={{ .Release.Namespace }}/{{ $name }}-tcp
{{- end }}
{{- if .Values.udp }}
- --udp-services-configmap={{ .Release.Namespace }}/{{ $name }}-udp
{{- end }}
{{- if $c.publishService.enabled }}
- --publish-service={{ .Release.Namespace }}/{{ $name }}
{{- end }}
- --ingress-class={{ $c.ingressClass }}
- --controller-class={{ $c.ingressClassResource.controllerValue }}
- --election-id={{ $c.electionID }}
{{- if $c.watchIngressWithoutClass }}
- --watch-ingress-without-class
{{- end }}
{{- if $c.ingressClassByName }}
- --ingress-class-by-name
{{- end }}
- --log-format=json
{{- end -}}

{{/* The webhook's flags, with the certificate the admission-create Job makes. */}}
{{- define "switchyard.webhookArgs" -}}
- --validating-webhook=0.0.0.0:{{ .Values.controller.admissionWebhooks.port }}
- --validating-webhook-certificate=/etc/switchyard/webhook/tls.crt
- --validating-webhook-key=/etc/switchyard/webhook/tls.key
{{- end -}}

{{/* extraArgs as flags. */}}
{{- define "switchyard.extraArgs" -}}
{{- range $k, $v := .Values.controller.extraArgs }}
- --{{ $k }}{{ if not (eq (toString $v) "") }}={{ $v }}{{ end }}
{{- end }}
{{- end -}}

{{/* The environment of every controller process. */}}
{{- define "switchyard.env" -}}
- name: POD_NAMESPACE
  valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
- name: POD_NAME
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
# Soft limit of the controller's Go runtime. NGINX runs in this
# container too and is not counted: a container memory limit must
# leave room for both.
- name: GOMEMLIMIT
  value: {{ .Values.controller.goMemLimit | quote }}
{{- with .Values.controller.extraEnvs }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The pod and container security settings every controller pod keeps. */}}
{{- define "switchyard.podSecurity" -}}
{{- with .Values.controller.podSecurityContext -}}
{{- /* controller.podSecurityContext, over these defaults. */ -}}
{{- toYaml (merge (deepCopy .) (dict "runAsNonRoot" true "runAsUser" 101 "runAsGroup" 101 "fsGroup" 101 "seccompProfile" (dict "type" "RuntimeDefault"))) }}
{{- else -}}
runAsNonRoot: true
runAsUser: 101
runAsGroup: 101
fsGroup: 101
seccompProfile: {type: RuntimeDefault}
{{- end }}
{{- end -}}
{{- define "switchyard.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: ["ALL"]}
{{- end -}}

{{/* Where and how the pods run: nodeSelector, tolerations, priority,
topology spread, image pull Secrets. */}}
{{- define "switchyard.placement" -}}
{{- with .Values.controller.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.controller.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.controller.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.controller.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* ingress-nginx values that would change how traffic is served and that
this chart does not implement: rendering fails, naming the key, rather than
installing something other than what the values file asks for. README, "In a
cluster", lists every ingress-nginx key that does not carry over. */}}
{{- define "switchyard.refuseUnsupported" -}}
{{- $c := .Values.controller }}
{{- $refused := list
  (list (ne (default "Deployment" $c.kind) "Deployment") "controller.kind" "only a Deployment is supported; remove it")
  (list (dig "hostNetwork" false $c) "controller.hostNetwork" "NGINX is reached through the Service; remove it")
  (list (dig "hostPort" "enabled" false $c) "controller.hostPort.enabled" "NGINX is reached through the Service (type NodePort with controller.service.nodePorts); remove it")
  (list (dig "scope" "enabled" false $c) "controller.scope.enabled" "set controller.extraArgs.watch-namespace instead")
  (list (ne (dig "scope" "namespaceSelector" "" $c) "") "controller.scope.namespaceSelector" "set controller.extraArgs.watch-namespace-selector instead")
  (list (ne (dig "customTemplate" "configMapName" "" $c) "") "controller.customTemplate" "Switchyard renders its own configuration and takes no NGINX template; remove it")
  (list (dig "service" "internal" "enabled" false $c) "controller.service.internal.enabled" "a second, internal Service is not made; create it yourself")
  (list (not (dig "service" "enableHttp" true $c)) "controller.service.enableHttp" "the Service always has the http port; remove it")
  (list (not (dig "service" "enableHttps" true $c)) "controller.service.enableHttps" "the Service always has the https port; remove it")
  (list (ne (dig "publishService" "pathOverride" "" $c) "") "controller.publishService.pathOverride" "set controller.extraArgs.publish-service instead, with controller.publishService.enabled false")
  (list (dig "defaultBackend" "enabled" false (.Values | toYaml | fromYaml)) "defaultBackend.enabled" "deploy the backend yourself and set controller.extraArgs.default-backend-service: NAMESPACE/NAME")
  (list (dig "autoscaling" "enabled" false $c) "controller.autoscaling.enabled" "no HorizontalPodAutoscaler is made; set controller.replicaCount")
  (list (dig "keda" "enabled" false $c) "controller.keda.enabled" "no ScaledObject is made; set controller.replicaCount")
}}
{{- range $refused }}
{{- if index . 0 }}
{{- fail (printf "%s is not supported by Switchyard's chart: %s" (index . 1) (index . 2)) }}
{{- end }}
{{- end }}
{{- end -}}
