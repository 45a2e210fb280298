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
- --http-addr=0.0.0.0:8080
- --https-addr=0.0.0.0:8443
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
runAsNonRoot: true
runAsUser: 101
runAsGroup: 101
fsGroup: 101
seccompProfile: {type: RuntimeDefault}
{{- end -}}
{{- define "switchyard.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: ["ALL"]}
{{- end -}}

{{/* Where the pods may run: nodeSelector, tolerations. */}}
{{- define "switchyard.placement" -}}
{{- with .Values.controller.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.controller.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
