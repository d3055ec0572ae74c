package main

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// set holds one group of documents (one rendered overlay) under check.
type set struct {
	docs      []*Doc
	workloads []*workload
	hpaFor    map[*Doc]*autoscalingv2.HorizontalPodAutoscaler // workload doc -> HPA scaling it
	findings  []Finding
}

// workload is anything with a pod template.
type workload struct {
	doc         *Doc
	template    *corev1.PodTemplateSpec
	selector    *metav1.LabelSelector // nil for CronJob/Job (generated)
	replicas    *int32                // nil when unset (or not applicable)
	path        string                // field path of the pod template
	longRunning bool                  // probes required (not for Jobs)
	claimNames  map[string]bool       // StatefulSet volumeClaimTemplates
}

func (w *workload) String() string { return w.doc.Kind + " " + w.doc.Name() }

// expectedReplicas is the smallest replica count the workload normally runs.
func (s *set) expectedReplicas(w *workload) int32 {
	if hpa, ok := s.hpaFor[w.doc]; ok {
		if hpa.Spec.MinReplicas != nil {
			return *hpa.Spec.MinReplicas
		}
		return 1
	}
	if w.replicas != nil {
		return *w.replicas
	}
	return 1
}

func (s *set) errorf(d *Doc, path, format string, args ...any) {
	s.findings = append(s.findings, Finding{Doc: d, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (s *set) fieldErrors(d *Doc, errs field.ErrorList) {
	for _, e := range errs {
		s.errorf(d, e.Field, "%s", e.ErrorBody())
	}
}

func (s *set) find(kind, namespace, name string) *Doc {
	for _, d := range s.docs {
		if d.Kind == kind && d.Name() == name && (clusterScoped[kind] || d.Namespace() == namespace) {
			return d
		}
	}
	return nil
}

func (s *set) all(kind string) []*Doc {
	var out []*Doc
	for _, d := range s.docs {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}

// selecting returns the workloads in namespace whose pod template labels match sel.
func (s *set) selecting(namespace string, sel labels.Selector) []*workload {
	var out []*workload
	for _, w := range s.workloads {
		if w.doc.Namespace() == namespace && sel.Matches(labels.Set(w.template.Labels)) {
			out = append(out, w)
		}
	}
	return out
}

func check(docs []*Doc) []Finding {
	s := &set{docs: docs, hpaFor: map[*Doc]*autoscalingv2.HorizontalPodAutoscaler{}}
	s.checkMetadata()
	s.collectWorkloads()
	for _, d := range s.all("HorizontalPodAutoscaler") {
		s.checkHPA(d)
	}
	for _, w := range s.workloads {
		s.checkWorkload(w)
	}
	for _, d := range s.all("Service") {
		s.checkService(d)
	}
	s.checkPDBs()
	for _, d := range s.all("Ingress") {
		s.checkIngress(d)
	}
	for _, d := range s.all("RoleBinding") {
		s.checkRoleBinding(d)
	}
	for _, d := range s.all("PodMonitor") {
		s.checkPodMonitor(d)
	}
	for _, w := range s.workloads {
		s.checkParley(w)
		s.checkNATS(w)
		s.checkCassandraCommitLog(w)
	}
	return s.findings
}

// ---------------------------------------------------------------- metadata

func (s *set) checkMetadata() {
	seen := map[string]*Doc{}
	namespaces := map[string]bool{}
	for _, d := range s.all("Namespace") {
		namespaces[d.Name()] = true
	}
	for _, d := range s.docs {
		nameFn := apivalidation.NameIsDNSSubdomain
		switch d.Kind {
		case "Service":
			nameFn = apivalidation.NameIsDNS1035Label
		case "Namespace":
			nameFn = apivalidation.NameIsDNSLabel
		}
		s.fieldErrors(d, apivalidation.ValidateObjectMetaAccessor(d.Obj, !clusterScoped[d.Kind], nameFn, field.NewPath("metadata")))
		if len(namespaces) > 0 && !clusterScoped[d.Kind] && d.Namespace() != "" && !namespaces[d.Namespace()] {
			s.errorf(d, "metadata.namespace", "namespace %q is not created by any Namespace document in this set", d.Namespace())
		}
		key := d.APIVersion + "/" + d.Kind + "/" + d.Namespace() + "/" + d.Name()
		if prev, dup := seen[key]; dup {
			s.errorf(d, "metadata.name", "duplicate object: same kind/namespace/name as doc %d", prev.Index)
		}
		seen[key] = d
	}
}

// ---------------------------------------------------------------- workloads

func (s *set) collectWorkloads() {
	for _, d := range s.docs {
		var w *workload
		switch o := d.Obj.(type) {
		case *appsv1.Deployment:
			w = &workload{template: &o.Spec.Template, selector: o.Spec.Selector, replicas: o.Spec.Replicas, path: "spec.template", longRunning: true}
		case *appsv1.StatefulSet:
			w = &workload{template: &o.Spec.Template, selector: o.Spec.Selector, replicas: o.Spec.Replicas, path: "spec.template", longRunning: true,
				claimNames: map[string]bool{}}
			for _, c := range o.Spec.VolumeClaimTemplates {
				w.claimNames[c.Name] = true
			}
		case *appsv1.DaemonSet:
			w = &workload{template: &o.Spec.Template, selector: o.Spec.Selector, path: "spec.template", longRunning: true}
		case *batchv1.Job:
			w = &workload{template: &o.Spec.Template, selector: o.Spec.Selector, path: "spec.template"}
		case *batchv1.CronJob:
			w = &workload{template: &o.Spec.JobTemplate.Spec.Template, path: "spec.jobTemplate.spec.template"}
		default:
			continue
		}
		w.doc = d
		s.workloads = append(s.workloads, w)
	}
}

func (s *set) checkWorkload(w *workload) {
	d := w.doc
	tp := field.NewPath(w.path)
	s.fieldErrors(d, metav1validation.ValidateLabels(w.template.Labels, tp.Child("metadata", "labels")))
	if len(w.template.Labels) == 0 {
		s.errorf(d, w.path+".metadata.labels", "pod template needs labels (for selectors, Services and PDBs)")
	}

	switch d.Kind {
	case "Deployment", "StatefulSet", "DaemonSet":
		if w.selector == nil {
			s.errorf(d, "spec.selector", "required")
			break
		}
		s.fieldErrors(d, metav1validation.ValidateLabelSelector(w.selector, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "selector")))
		sel, err := metav1.LabelSelectorAsSelector(w.selector)
		if err != nil {
			s.errorf(d, "spec.selector", "%v", err)
		} else if sel.Empty() {
			s.errorf(d, "spec.selector", "must not be empty")
		} else if !sel.Matches(labels.Set(w.template.Labels)) {
			s.errorf(d, "spec.selector", "selector %q does not match the pod template labels %v", sel.String(), labels.Set(w.template.Labels))
		}
	}
	if w.replicas != nil && *w.replicas < 0 {
		s.errorf(d, "spec.replicas", "must not be negative")
	}
	if hpa, ok := s.hpaFor[d]; ok && w.replicas != nil {
		s.errorf(d, "spec.replicas", "set while HorizontalPodAutoscaler %q scales this %s: every apply would reset the replica count; leave it unset", hpa.Name, d.Kind)
	}

	if sts, ok := d.Obj.(*appsv1.StatefulSet); ok {
		s.checkStatefulSet(w, sts)
	}
	s.checkPodSpec(w, &w.template.Spec, w.path+".spec")
}

func (s *set) checkStatefulSet(w *workload, sts *appsv1.StatefulSet) {
	d := w.doc
	if sts.Spec.ServiceName == "" {
		s.errorf(d, "spec.serviceName", "required: name of the headless Service governing the StatefulSet")
	} else if svcDoc := s.find("Service", d.Namespace(), sts.Spec.ServiceName); svcDoc == nil {
		s.errorf(d, "spec.serviceName", "Service %q does not exist in namespace %q", sts.Spec.ServiceName, d.Namespace())
	} else {
		svc := svcDoc.Obj.(*corev1.Service)
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			s.errorf(d, "spec.serviceName", "Service %q must be headless (clusterIP: None) to give the pods stable DNS names", svc.Name)
		}
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(w.template.Labels)) || len(svc.Spec.Selector) == 0 {
			s.errorf(d, "spec.serviceName", "Service %q does not select this StatefulSet's pods", svc.Name)
		}
	}
	for i, c := range sts.Spec.VolumeClaimTemplates {
		p := fmt.Sprintf("spec.volumeClaimTemplates[%d]", i)
		if msgs := validation.IsDNS1123Label(c.Name); len(msgs) > 0 {
			s.errorf(d, p+".metadata.name", "%s", strings.Join(msgs, "; "))
		}
		if len(c.Spec.AccessModes) == 0 {
			s.errorf(d, p+".spec.accessModes", "required")
		}
		if _, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
			s.errorf(d, p+".spec.resources.requests.storage", "required")
		}
	}
}

var allowedFieldRefs = map[string]bool{
	"metadata.name": true, "metadata.namespace": true, "metadata.uid": true,
	"spec.nodeName": true, "spec.serviceAccountName": true,
	"status.hostIP": true, "status.hostIPs": true, "status.podIP": true, "status.podIPs": true,
}

func (s *set) checkPodSpec(w *workload, spec *corev1.PodSpec, path string) {
	d := w.doc
	ns := d.Namespace()

	if len(spec.Containers) == 0 {
		s.errorf(d, path+".containers", "at least one container is required")
	}
	if sa := spec.ServiceAccountName; sa != "" && sa != "default" && s.find("ServiceAccount", ns, sa) == nil {
		s.errorf(d, path+".serviceAccountName", "ServiceAccount %q does not exist in namespace %q", sa, ns)
	}

	// Pod Security Standard "restricted" (the parley Namespace enforces it).
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		s.errorf(d, path, "hostNetwork/hostPID/hostIPC are not allowed (restricted pod security)")
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}

	// Volumes.
	volumes := map[string]bool{}
	for i, v := range spec.Volumes {
		p := fmt.Sprintf("%s.volumes[%d]", path, i)
		if volumes[v.Name] {
			s.errorf(d, p+".name", "duplicate volume name %q", v.Name)
		}
		volumes[v.Name] = true
		switch {
		case v.HostPath != nil:
			s.errorf(d, p+".hostPath", "hostPath volumes are not allowed (restricted pod security)")
		case v.ConfigMap != nil:
			s.checkConfigMapRef(d, p+".configMap.name", ns, v.ConfigMap.Name, v.ConfigMap.Optional, keysOf(v.ConfigMap.Items))
		case v.Secret != nil:
			s.checkSecretRef(d, p+".secret.secretName", ns, v.Secret.SecretName, v.Secret.Optional)
		case v.PersistentVolumeClaim != nil:
			if s.find("PersistentVolumeClaim", ns, v.PersistentVolumeClaim.ClaimName) == nil {
				s.errorf(d, p+".persistentVolumeClaim.claimName", "PersistentVolumeClaim %q does not exist in namespace %q", v.PersistentVolumeClaim.ClaimName, ns)
			}
		}
	}

	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if spec.TerminationGracePeriodSeconds != nil {
		grace = *spec.TerminationGracePeriodSeconds
	}

	names := map[string]bool{}
	portNames := map[string]bool{}
	type group struct {
		list []corev1.Container
		key  string
		main bool
	}
	for _, g := range []group{{spec.InitContainers, "initContainers", false}, {spec.Containers, "containers", true}} {
		for i := range g.list {
			c := &g.list[i]
			p := fmt.Sprintf("%s.%s[%d]", path, g.key, i)
			if msgs := validation.IsDNS1123Label(c.Name); len(msgs) > 0 {
				s.errorf(d, p+".name", "%s", strings.Join(msgs, "; "))
			}
			if names[c.Name] {
				s.errorf(d, p+".name", "duplicate container name %q", c.Name)
			}
			names[c.Name] = true

			s.checkImage(d, p+".image", c.Image)
			s.checkResources(d, p+".resources", c.Resources)
			s.checkContainerSecurity(d, p, c, psc)

			for j, port := range c.Ports {
				pp := fmt.Sprintf("%s.ports[%d]", p, j)
				if msgs := validation.IsValidPortNum(int(port.ContainerPort)); len(msgs) > 0 {
					s.errorf(d, pp+".containerPort", "%s", strings.Join(msgs, "; "))
				}
				if port.Name != "" {
					if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
						s.errorf(d, pp+".name", "%q: %s", port.Name, strings.Join(msgs, "; "))
					}
					if portNames[port.Name] {
						s.errorf(d, pp+".name", "duplicate port name %q in the pod", port.Name)
					}
					portNames[port.Name] = true
				}
			}

			s.checkEnv(d, p, ns, c)

			mounts := map[string]bool{}
			for j, m := range c.VolumeMounts {
				mp := fmt.Sprintf("%s.volumeMounts[%d]", p, j)
				if !volumes[m.Name] && !w.claimNames[m.Name] {
					s.errorf(d, mp+".name", "volume %q is not defined in the pod's volumes (or the StatefulSet's volumeClaimTemplates)", m.Name)
				}
				if mounts[m.MountPath] {
					s.errorf(d, mp+".mountPath", "duplicate mountPath %q", m.MountPath)
				}
				mounts[m.MountPath] = true
			}

			if g.main && w.longRunning {
				s.checkProbe(d, p+".readinessProbe", c, c.ReadinessProbe, true)
				s.checkProbe(d, p+".livenessProbe", c, c.LivenessProbe, true)
				s.checkProbe(d, p+".startupProbe", c, c.StartupProbe, false)
			}
			if c.Lifecycle != nil {
				s.checkHandler(d, p+".lifecycle.preStop", c, c.Lifecycle.PreStop, grace)
				s.checkHandler(d, p+".lifecycle.postStart", c, c.Lifecycle.PostStart, grace)
			}
		}
	}
}

func keysOf(items []corev1.KeyToPath) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

func (s *set) checkConfigMapRef(d *Doc, path, ns, name string, optional *bool, keys []string) {
	if optional != nil && *optional {
		return
	}
	cmDoc := s.find("ConfigMap", ns, name)
	if cmDoc == nil {
		s.errorf(d, path, "ConfigMap %q does not exist in namespace %q (mark the reference optional if it is created elsewhere)", name, ns)
		return
	}
	cm := cmDoc.Obj.(*corev1.ConfigMap)
	for _, k := range keys {
		_, inData := cm.Data[k]
		_, inBinary := cm.BinaryData[k]
		if !inData && !inBinary {
			s.errorf(d, path, "ConfigMap %q has no key %q", name, k)
		}
	}
}

func (s *set) checkSecretRef(d *Doc, path, ns, name string, optional *bool) {
	if optional != nil && *optional {
		return
	}
	if s.find("Secret", ns, name) == nil {
		s.errorf(d, path, "Secret %q does not exist in namespace %q (mark the reference optional if it is created outside these manifests)", name, ns)
	}
}

func (s *set) checkImage(d *Doc, path, image string) {
	if image == "" {
		s.errorf(d, path, "required")
		return
	}
	if strings.Contains(image, "@sha256:") {
		return
	}
	last := image[strings.LastIndex(image, "/")+1:]
	i := strings.LastIndex(last, ":")
	if i < 0 {
		s.errorf(d, path, "image %q has no tag: pin a version (or a digest)", image)
		return
	}
	if tag := last[i+1:]; tag == "latest" || tag == "" {
		s.errorf(d, path, "image %q uses tag %q: pin a version (or a digest)", image, tag)
	}
}

func (s *set) checkResources(d *Doc, path string, r corev1.ResourceRequirements) {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := r.Requests[name]; !ok {
			s.errorf(d, path+".requests."+string(name), "required: every container must request cpu and memory")
		}
	}
	if _, ok := r.Limits[corev1.ResourceMemory]; !ok {
		s.errorf(d, path+".limits.memory", "required: every container must have a memory limit")
	}
	for name, req := range r.Requests {
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			s.errorf(d, path+".requests."+string(name), "request %s exceeds limit %s", req.String(), lim.String())
		}
	}
}

func (s *set) checkContainerSecurity(d *Doc, path string, c *corev1.Container, psc *corev1.PodSecurityContext) {
	csc := c.SecurityContext
	if csc == nil {
		s.errorf(d, path+".securityContext", "required (allowPrivilegeEscalation: false, capabilities.drop: [ALL])")
		csc = &corev1.SecurityContext{}
	}
	runAsNonRoot := psc.RunAsNonRoot
	if csc.RunAsNonRoot != nil {
		runAsNonRoot = csc.RunAsNonRoot
	}
	if runAsNonRoot == nil || !*runAsNonRoot {
		s.errorf(d, path+".securityContext.runAsNonRoot", "must be true (in the pod or container securityContext)")
	}
	runAsUser := psc.RunAsUser
	if csc.RunAsUser != nil {
		runAsUser = csc.RunAsUser
	}
	if runAsUser != nil && *runAsUser == 0 {
		s.errorf(d, path+".securityContext.runAsUser", "must not be 0 (root)")
	}
	seccomp := psc.SeccompProfile
	if csc.SeccompProfile != nil {
		seccomp = csc.SeccompProfile
	}
	if seccomp == nil || (seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault && seccomp.Type != corev1.SeccompProfileTypeLocalhost) {
		s.errorf(d, path+".securityContext.seccompProfile", "type RuntimeDefault (or Localhost) is required (in the pod or container securityContext)")
	}
	if csc.Privileged != nil && *csc.Privileged {
		s.errorf(d, path+".securityContext.privileged", "privileged containers are not allowed")
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		s.errorf(d, path+".securityContext.allowPrivilegeEscalation", "must be set to false")
	}
	dropsAll := false
	if csc.Capabilities != nil {
		for _, c := range csc.Capabilities.Drop {
			if c == "ALL" {
				dropsAll = true
			}
		}
		for _, c := range csc.Capabilities.Add {
			if c != "NET_BIND_SERVICE" {
				s.errorf(d, path+".securityContext.capabilities.add", "capability %q is not allowed (only NET_BIND_SERVICE)", c)
			}
		}
	}
	if !dropsAll {
		s.errorf(d, path+".securityContext.capabilities.drop", "must contain ALL")
	}
}

func (s *set) checkEnv(d *Doc, path, ns string, c *corev1.Container) {
	seen := map[string]bool{}
	for i, e := range c.Env {
		p := fmt.Sprintf("%s.env[%d]", path, i)
		if msgs := validation.IsEnvVarName(e.Name); len(msgs) > 0 {
			s.errorf(d, p+".name", "%q: %s", e.Name, strings.Join(msgs, "; "))
		}
		if seen[e.Name] {
			s.errorf(d, p+".name", "duplicate environment variable %q", e.Name)
		}
		seen[e.Name] = true
		vf := e.ValueFrom
		if vf == nil {
			continue
		}
		if e.Value != "" {
			s.errorf(d, p, "value and valueFrom are mutually exclusive")
		}
		n := 0
		if vf.FieldRef != nil {
			n++
			if !allowedFieldRefs[vf.FieldRef.FieldPath] && !strings.HasPrefix(vf.FieldRef.FieldPath, "metadata.labels[") && !strings.HasPrefix(vf.FieldRef.FieldPath, "metadata.annotations[") {
				s.errorf(d, p+".valueFrom.fieldRef.fieldPath", "unsupported field path %q", vf.FieldRef.FieldPath)
			}
		}
		if vf.ResourceFieldRef != nil {
			n++
		}
		if vf.ConfigMapKeyRef != nil {
			n++
			s.checkConfigMapRef(d, p+".valueFrom.configMapKeyRef", ns, vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Optional, []string{vf.ConfigMapKeyRef.Key})
		}
		if vf.SecretKeyRef != nil {
			n++
			s.checkSecretRef(d, p+".valueFrom.secretKeyRef", ns, vf.SecretKeyRef.Name, vf.SecretKeyRef.Optional)
		}
		if vf.FileKeyRef != nil {
			n++
		}
		if n != 1 {
			s.errorf(d, p+".valueFrom", "exactly one source must be set (found %d)", n)
		}
	}
	for i, ef := range c.EnvFrom {
		p := fmt.Sprintf("%s.envFrom[%d]", path, i)
		switch {
		case ef.ConfigMapRef != nil && ef.SecretRef != nil:
			s.errorf(d, p, "configMapRef and secretRef are mutually exclusive")
		case ef.ConfigMapRef != nil:
			s.checkConfigMapRef(d, p+".configMapRef.name", ns, ef.ConfigMapRef.Name, ef.ConfigMapRef.Optional, nil)
		case ef.SecretRef != nil:
			s.checkSecretRef(d, p+".secretRef.name", ns, ef.SecretRef.Name, ef.SecretRef.Optional)
		default:
			s.errorf(d, p, "configMapRef or secretRef is required")
		}
	}
}

// portResolves reports whether a probe/Service port refers to a port the
// container declares (by name, or by number).
// containerPortOf returns the number of the container port that port (a name or a number) refers to.
func containerPortOf(c *corev1.Container, port intstr.IntOrString) (int32, bool) {
	for _, cp := range c.Ports {
		if (port.Type == intstr.String && cp.Name == port.StrVal) || (port.Type == intstr.Int && cp.ContainerPort == port.IntVal) {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

func portResolves(c *corev1.Container, port intstr.IntOrString) bool {
	for _, cp := range c.Ports {
		if port.Type == intstr.String && cp.Name == port.StrVal {
			return true
		}
		if port.Type == intstr.Int && cp.ContainerPort == port.IntVal {
			return true
		}
	}
	return false
}

func (s *set) checkPort(d *Doc, path string, c *corev1.Container, port intstr.IntOrString) {
	if !portResolves(c, port) {
		s.errorf(d, path, "port %s is not declared in container %q's ports", port.String(), c.Name)
	}
}

func (s *set) checkProbe(d *Doc, path string, c *corev1.Container, p *corev1.Probe, required bool) {
	if p == nil {
		if required {
			s.errorf(d, path, "required for every long-running container")
		}
		return
	}
	n := 0
	if p.Exec != nil {
		n++
		if len(p.Exec.Command) == 0 {
			s.errorf(d, path+".exec.command", "must not be empty")
		}
	}
	if p.HTTPGet != nil {
		n++
		if !strings.HasPrefix(p.HTTPGet.Path, "/") {
			s.errorf(d, path+".httpGet.path", "must start with /")
		}
		s.checkPort(d, path+".httpGet.port", c, p.HTTPGet.Port)
	}
	if p.TCPSocket != nil {
		n++
		s.checkPort(d, path+".tcpSocket.port", c, p.TCPSocket.Port)
	}
	if p.GRPC != nil {
		n++
		s.checkPort(d, path+".grpc.port", c, intstr.FromInt32(p.GRPC.Port))
	}
	if n != 1 {
		s.errorf(d, path, "exactly one handler (exec, httpGet, tcpSocket, grpc) must be set (found %d)", n)
	}
	if p.TimeoutSeconds > 0 && p.PeriodSeconds > 0 && p.TimeoutSeconds > p.PeriodSeconds {
		s.errorf(d, path+".timeoutSeconds", "timeoutSeconds (%d) exceeds periodSeconds (%d)", p.TimeoutSeconds, p.PeriodSeconds)
	}
}

func (s *set) checkHandler(d *Doc, path string, c *corev1.Container, h *corev1.LifecycleHandler, grace int64) {
	if h == nil {
		return
	}
	n := 0
	if h.Exec != nil {
		n++
		if len(h.Exec.Command) == 0 {
			s.errorf(d, path+".exec.command", "must not be empty")
		}
	}
	if h.HTTPGet != nil {
		n++
		s.checkPort(d, path+".httpGet.port", c, h.HTTPGet.Port)
	}
	if h.TCPSocket != nil {
		n++
	}
	if h.Sleep != nil {
		n++
		if h.Sleep.Seconds <= 0 || h.Sleep.Seconds >= grace {
			s.errorf(d, path+".sleep.seconds", "must be > 0 and below terminationGracePeriodSeconds (%d)", grace)
		}
	}
	if n != 1 {
		s.errorf(d, path, "exactly one handler (exec, httpGet, sleep) must be set (found %d)", n)
	}
}

// ---------------------------------------------------------------- services

func (s *set) checkService(d *Doc) {
	svc := d.Obj.(*corev1.Service)
	spec := svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if spec.ClusterIP == corev1.ClusterIPNone && spec.Type != "" && spec.Type != corev1.ServiceTypeClusterIP {
		s.errorf(d, "spec.type", "a headless Service (clusterIP: None) must be of type ClusterIP")
	}
	if len(spec.Ports) == 0 {
		s.errorf(d, "spec.ports", "at least one port is required")
	}
	names := map[string]bool{}
	for i, p := range spec.Ports {
		pp := fmt.Sprintf("spec.ports[%d]", i)
		if len(spec.Ports) > 1 && p.Name == "" {
			s.errorf(d, pp+".name", "required when a Service has several ports")
		}
		if p.Name != "" {
			if msgs := validation.IsDNS1123Label(p.Name); len(msgs) > 0 {
				s.errorf(d, pp+".name", "%s", strings.Join(msgs, "; "))
			}
			if names[p.Name] {
				s.errorf(d, pp+".name", "duplicate port name %q", p.Name)
			}
			names[p.Name] = true
		}
		if msgs := validation.IsValidPortNum(int(p.Port)); len(msgs) > 0 {
			s.errorf(d, pp+".port", "%s", strings.Join(msgs, "; "))
		}
	}
	if len(spec.Selector) == 0 {
		s.errorf(d, "spec.selector", "required: every Service here must select pods")
		return
	}
	s.fieldErrors(d, metav1validation.ValidateLabels(spec.Selector, field.NewPath("spec", "selector")))
	matched := s.selecting(d.Namespace(), labels.SelectorFromSet(spec.Selector))
	if len(matched) == 0 {
		s.errorf(d, "spec.selector", "selector %v matches no workload's pod template in namespace %q", labels.Set(spec.Selector), d.Namespace())
		return
	}
	for i, p := range spec.Ports {
		target := p.TargetPort
		if target.Type == intstr.Int && target.IntVal == 0 {
			target = intstr.FromInt32(p.Port)
		}
		for _, w := range matched {
			found := false
			for j := range w.template.Spec.Containers {
				if portResolves(&w.template.Spec.Containers[j], target) {
					found = true
				}
			}
			if !found {
				s.errorf(d, fmt.Sprintf("spec.ports[%d].targetPort", i), "port %s is not declared by any container of %s", target.String(), w)
			}
			for j := range w.template.Spec.Containers {
				c := &w.template.Spec.Containers[j]
				if mp, ok := s.parleyMetricsPort(w.doc, c); ok {
					if cp, ok := containerPortOf(c, target); ok && cp == mp {
						s.errorf(d, fmt.Sprintf("spec.ports[%d].targetPort", i), "exposes PARLEY_METRICS_PORT %d of %s: /metrics must stay off Services (a load balancer's way in); Prometheus scrapes the pods", mp, w)
					}
				}
			}
		}
	}
}

// servicePort returns whether the Service exposes port (number) or any port when port == 0.
func servicePort(svc *corev1.Service, port int32) bool {
	for _, p := range svc.Spec.Ports {
		if port == 0 || p.Port == port {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------- HPA

func (s *set) checkHPA(d *Doc) {
	hpa := d.Obj.(*autoscalingv2.HorizontalPodAutoscaler)
	ref := hpa.Spec.ScaleTargetRef
	var target *Doc
	if ref.APIVersion != "apps/v1" || (ref.Kind != "Deployment" && ref.Kind != "StatefulSet") {
		s.errorf(d, "spec.scaleTargetRef", "must point to an apps/v1 Deployment or StatefulSet (got %s %s)", ref.APIVersion, ref.Kind)
	} else if target = s.find(ref.Kind, d.Namespace(), ref.Name); target == nil {
		s.errorf(d, "spec.scaleTargetRef.name", "%s %q does not exist in namespace %q", ref.Kind, ref.Name, d.Namespace())
	} else {
		if prev, ok := s.hpaFor[target]; ok {
			s.errorf(d, "spec.scaleTargetRef", "%s %q is already scaled by HorizontalPodAutoscaler %q", ref.Kind, ref.Name, prev.Name)
		}
		s.hpaFor[target] = hpa
	}
	min := int32(1)
	if hpa.Spec.MinReplicas != nil {
		min = *hpa.Spec.MinReplicas
	}
	if min < 1 {
		s.errorf(d, "spec.minReplicas", "must be at least 1")
	}
	if hpa.Spec.MaxReplicas < min {
		s.errorf(d, "spec.maxReplicas", "%d is below minReplicas %d", hpa.Spec.MaxReplicas, min)
	}
	if len(hpa.Spec.Metrics) == 0 {
		s.errorf(d, "spec.metrics", "at least one metric is required")
	}
	for i, m := range hpa.Spec.Metrics {
		p := fmt.Sprintf("spec.metrics[%d]", i)
		if m.Type != autoscalingv2.ResourceMetricSourceType {
			continue
		}
		if m.Resource == nil {
			s.errorf(d, p+".resource", "required for type Resource")
			continue
		}
		if m.Resource.Target.Type == autoscalingv2.UtilizationMetricType {
			if m.Resource.Target.AverageUtilization == nil || *m.Resource.Target.AverageUtilization <= 0 {
				s.errorf(d, p+".resource.target.averageUtilization", "required and positive for type Utilization")
			}
			if target != nil {
				for _, w := range s.workloads {
					if w.doc != target {
						continue
					}
					for _, c := range w.template.Spec.Containers {
						if _, ok := c.Resources.Requests[m.Resource.Name]; !ok {
							s.errorf(d, p, "utilization of %s needs a %s request on every container of %s (container %q has none)", m.Resource.Name, m.Resource.Name, w, c.Name)
						}
					}
				}
			}
		}
	}
}

// ---------------------------------------------------------------- PDB

func (s *set) checkPDBs() {
	covering := map[*workload][]string{}
	for _, d := range s.all("PodDisruptionBudget") {
		pdb := d.Obj.(*policyv1.PodDisruptionBudget)
		spec := pdb.Spec
		if (spec.MinAvailable == nil) == (spec.MaxUnavailable == nil) {
			s.errorf(d, "spec", "exactly one of minAvailable and maxUnavailable must be set")
		}
		if spec.Selector == nil {
			s.errorf(d, "spec.selector", "required")
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
		if err != nil {
			s.errorf(d, "spec.selector", "%v", err)
			continue
		}
		if sel.Empty() {
			s.errorf(d, "spec.selector", "must not be empty (it would cover every pod in the namespace)")
			continue
		}
		matched := s.selecting(d.Namespace(), sel)
		if len(matched) == 0 {
			s.errorf(d, "spec.selector", "selector %q matches no workload's pod template in namespace %q", sel.String(), d.Namespace())
		}
		for _, w := range matched {
			covering[w] = append(covering[w], pdb.Name)
			replicas := s.expectedReplicas(w)
			if mu := spec.MaxUnavailable; mu != nil && (mu.String() == "0" || mu.String() == "0%") {
				s.errorf(d, "spec.maxUnavailable", "0 blocks every voluntary eviction (node drains) of %s", w)
			}
			if ma := spec.MinAvailable; ma != nil {
				if (ma.Type == intstr.Int && ma.IntVal >= replicas) || ma.String() == "100%" {
					s.errorf(d, "spec.minAvailable", "%s with %d replica(s) would block every voluntary eviction (node drains) of %s", ma.String(), replicas, w)
				}
			}
		}
	}
	for _, w := range s.workloads {
		if len(covering[w]) > 1 {
			sort.Strings(covering[w])
			s.errorf(w.doc, w.path+".metadata.labels", "pods are selected by several PodDisruptionBudgets (%s): the eviction API refuses to evict them", strings.Join(covering[w], ", "))
		}
	}
}

// ---------------------------------------------------------------- Ingress, RBAC

func (s *set) checkIngress(d *Doc) {
	ing := d.Obj.(*networkingv1.Ingress)
	checkBackend := func(path string, b *networkingv1.IngressBackend) {
		if b == nil || b.Service == nil {
			return
		}
		svcDoc := s.find("Service", d.Namespace(), b.Service.Name)
		if svcDoc == nil {
			s.errorf(d, path+".service.name", "Service %q does not exist in namespace %q", b.Service.Name, d.Namespace())
			return
		}
		svc := svcDoc.Obj.(*corev1.Service)
		found := false
		for _, p := range svc.Spec.Ports {
			if (b.Service.Port.Name != "" && p.Name == b.Service.Port.Name) || (b.Service.Port.Number != 0 && p.Port == b.Service.Port.Number) {
				found = true
			}
		}
		if !found {
			s.errorf(d, path+".service.port", "Service %q has no such port", svc.Name)
		}
	}
	checkBackend("spec.defaultBackend", ing.Spec.DefaultBackend)
	for i, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for j := range r.HTTP.Paths {
			checkBackend(fmt.Sprintf("spec.rules[%d].http.paths[%d].backend", i, j), &r.HTTP.Paths[j].Backend)
		}
	}
}

func (s *set) checkRoleBinding(d *Doc) {
	rb := d.Obj.(*rbacv1.RoleBinding)
	if rb.RoleRef.Kind == "Role" && s.find("Role", d.Namespace(), rb.RoleRef.Name) == nil {
		s.errorf(d, "roleRef.name", "Role %q does not exist in namespace %q", rb.RoleRef.Name, d.Namespace())
	}
	for i, sub := range rb.Subjects {
		if sub.Kind != "ServiceAccount" {
			continue
		}
		ns := sub.Namespace
		if ns == "" {
			ns = d.Namespace()
		}
		if s.find("ServiceAccount", ns, sub.Name) == nil && sub.Name != "default" {
			s.errorf(d, fmt.Sprintf("subjects[%d].name", i), "ServiceAccount %q does not exist in namespace %q", sub.Name, ns)
		}
	}
}

// ---------------------------------------------------------------- Parley

// parleyRequired are the configuration variables every Parley process needs
// in cluster mode.
var parleyRequired = []string{
	"PARLEY_ROLE", "PARLEY_MODE", "PARLEY_HOST", "PARLEY_PORT",
	"PARLEY_NATS_URL", "PARLEY_REDIS_URL",
	"PARLEY_CASSANDRA_CONTACT_POINTS", "PARLEY_CASSANDRA_DC", "PARLEY_CASSANDRA_KEYSPACE",
	"PARLEY_CASSANDRA_REPLICATION_FACTOR", "PARLEY_SHARDS", "PARLEY_LOG_LEVEL", "PARLEY_SITE_URL",
}

// checkParley checks the containers that run Parley (those with PARLEY_ROLE
// in their env) against how Parley is configured and deployed.
func (s *set) checkParley(w *workload) {
	d := w.doc
	ns := d.Namespace()
	spec := &w.template.Spec
	for i := range spec.Containers {
		c := &spec.Containers[i]
		p := fmt.Sprintf("%s.spec.containers[%d]", w.path, i)
		isParley := false
		for _, e := range c.Env {
			if e.Name == "PARLEY_ROLE" {
				isParley = true
			}
		}
		if !isParley {
			continue
		}

		cfg := s.containerEnv(d, c)
		for _, k := range parleyRequired {
			if _, ok := cfg[k]; !ok {
				s.errorf(d, p+".env", "Parley container lacks %s (neither in env nor in an envFrom ConfigMap)", k)
			}
		}

		role := cfg["PARLEY_ROLE"]
		if role != "gateway" && role != "actors" {
			s.errorf(d, p+".env", "PARLEY_ROLE is %q: must be gateway or actors", role)
		}
		if v, ok := cfg["PARLEY_MODE"]; ok && v != "cluster" {
			s.errorf(d, p+".env", "PARLEY_MODE is %q: Kubernetes deployments run in cluster mode", v)
		}
		if v, ok := cfg["PARLEY_HOST"]; ok && (v == "127.0.0.1" || v == "localhost" || v == "::1") {
			s.errorf(d, p+".env", "PARLEY_HOST is %q: probes and Services cannot reach a loopback listener; use 0.0.0.0", v)
		}
		if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
			s.errorf(d, p+".securityContext.readOnlyRootFilesystem", "must be true for Parley containers (mount an emptyDir at /tmp)")
		}

		// The listening port must be declared and probed.
		if v, ok := cfg["PARLEY_PORT"]; ok {
			port, err := strconv.Atoi(v)
			if err != nil || port < 1 || port > 65535 {
				s.errorf(d, p+".env", "PARLEY_PORT %q is not a port number", v)
			} else {
				pp := intstr.FromInt(port)
				if !portResolves(c, pp) {
					s.errorf(d, p+".ports", "PARLEY_PORT %d is not declared as a containerPort", port)
				}
				s.checkParleyProbe(d, p+".readinessProbe", c, c.ReadinessProbe, "/readyz", int32(port))
				s.checkParleyProbe(d, p+".livenessProbe", c, c.LivenessProbe, "/healthz", int32(port))
			}
		}
		// /metrics: on a declared port of its own, which the scrape annotations name.
		if v, ok := cfg["PARLEY_METRICS_PORT"]; ok && v != "off" {
			port, err := strconv.Atoi(v)
			switch {
			case err != nil || port < 1 || port > 65535:
				s.errorf(d, p+".env", "PARLEY_METRICS_PORT %q is not a port number (or off)", v)
			case cfg["PARLEY_PORT"] == v:
				s.errorf(d, p+".env", "PARLEY_METRICS_PORT %d is the API port: /metrics needs a port of its own, off the load balancer's path", port)
			default:
				if !portResolves(c, intstr.FromInt(port)) {
					s.errorf(d, p+".ports", "PARLEY_METRICS_PORT %d is not declared as a containerPort", port)
				}
				ann := w.template.Annotations
				if ann["prometheus.io/scrape"] == "true" && ann["prometheus.io/port"] != v {
					s.errorf(d, w.path+".metadata.annotations", "prometheus.io/port %q is not PARLEY_METRICS_PORT %d", ann["prometheus.io/port"], port)
				}
			}
		}
		if v, ok := cfg["PARLEY_SHARDS"]; ok {
			if n, err := strconv.Atoi(v); err != nil || n < 1 {
				s.errorf(d, p+".env", "PARLEY_SHARDS %q must be a positive integer", v)
			}
		}
		if v, ok := cfg["PARLEY_SITE_URL"]; ok {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				s.errorf(d, p+".env", "PARLEY_SITE_URL %q must be an absolute http(s) URL", v)
			}
		}

		// Termination: drain (gateway) / shard hand-over (actors).
		grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
		if spec.TerminationGracePeriodSeconds != nil {
			grace = *spec.TerminationGracePeriodSeconds
		}
		switch role {
		case "gateway":
			if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
				s.errorf(d, p+".lifecycle.preStop", "gateway needs a preStop delay so that Services stop routing to it before it drains")
			}
		case "actors":
			if grace < 60 {
				s.errorf(d, w.path+".spec.terminationGracePeriodSeconds", "%d is too short for actor nodes to hand their shards over (use at least 60)", grace)
			}
		}

		// Data-store addresses must point at Services that exist here, when
		// they name in-cluster hosts.
		if v, ok := cfg["PARLEY_NATS_URL"]; ok {
			for _, one := range strings.Split(v, ",") {
				s.checkParleyURL(d, p, ns, "PARLEY_NATS_URL", strings.TrimSpace(one), []string{"nats", "tls"}, 4222)
			}
		}
		if v, ok := cfg["PARLEY_REDIS_URL"]; ok {
			s.checkParleyURL(d, p, ns, "PARLEY_REDIS_URL", v, []string{"redis", "rediss"}, 6379)
		}
		s.checkCassandra(d, p, ns, cfg)
	}
}

// containerEnv is a container's effective environment as far as this set
// shows it: envFrom ConfigMaps, then env (which wins). A value from another
// source (Secret, field reference) is a placeholder naming its source.
func (s *set) containerEnv(d *Doc, c *corev1.Container) map[string]string {
	ns := d.Namespace()
	cfg := map[string]string{}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		if cmDoc := s.find("ConfigMap", ns, ef.ConfigMapRef.Name); cmDoc != nil {
			for k, v := range cmDoc.Obj.(*corev1.ConfigMap).Data {
				cfg[ef.Prefix+k] = v
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			cfg[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil:
			if cmDoc := s.find("ConfigMap", ns, e.ValueFrom.ConfigMapKeyRef.Name); cmDoc != nil {
				cfg[e.Name] = cmDoc.Obj.(*corev1.ConfigMap).Data[e.ValueFrom.ConfigMapKeyRef.Key]
			}
		default:
			cfg[e.Name] = "(from " + d.Kind + " env source)"
		}
	}
	return cfg
}

func (s *set) checkParleyProbe(d *Doc, path string, c *corev1.Container, pr *corev1.Probe, wantPath string, port int32) {
	if pr == nil {
		return // already reported
	}
	if pr.HTTPGet == nil {
		s.errorf(d, path, "Parley probes must be httpGet %s", wantPath)
		return
	}
	if pr.HTTPGet.Path != wantPath {
		s.errorf(d, path+".httpGet.path", "is %q: Parley serves this probe at %s", pr.HTTPGet.Path, wantPath)
	}
	resolved := pr.HTTPGet.Port
	if resolved.Type == intstr.String {
		for _, cp := range c.Ports {
			if cp.Name == resolved.StrVal {
				resolved = intstr.FromInt32(cp.ContainerPort)
			}
		}
	}
	if resolved.Type != intstr.Int || resolved.IntVal != port {
		s.errorf(d, path+".httpGet.port", "%s does not resolve to PARLEY_PORT %d", pr.HTTPGet.Port.String(), port)
	}
}

// checkHost validates an in-cluster host:port reference. Hosts of the form
// "service", "service.<namespace>" and "pod.service" (StatefulSet pod DNS
// behind a headless Service) are checked against the documents; anything
// else is treated as external and accepted. It returns the StatefulSet the
// host belongs to, if any.
func (s *set) checkHost(d *Doc, path, ns, key, host string, port int32) *workload {
	parts := strings.Split(host, ".")
	var svcName, podName string
	switch {
	case len(parts) == 1:
		svcName = parts[0]
	case len(parts) == 2 && parts[1] == ns:
		svcName = parts[0]
	case len(parts) == 2 && s.find("Service", ns, parts[1]) != nil:
		podName, svcName = parts[0], parts[1]
	default:
		return nil // external or fully qualified: not checked
	}
	svcDoc := s.find("Service", ns, svcName)
	if svcDoc == nil {
		s.errorf(d, path+".env", "%s: host %q: Service %q does not exist in namespace %q", key, host, svcName, ns)
		return nil
	}
	svc := svcDoc.Obj.(*corev1.Service)
	if !servicePort(svc, port) {
		s.errorf(d, path+".env", "%s: Service %q does not expose port %d", key, svcName, port)
	}
	if podName == "" {
		return nil
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		s.errorf(d, path+".env", "%s: host %q: per-pod DNS names need a headless Service, %q is not", key, host, svcName)
		return nil
	}
	for _, w := range s.workloads {
		sts, ok := w.doc.Obj.(*appsv1.StatefulSet)
		if !ok || w.doc.Namespace() != ns || sts.Spec.ServiceName != svcName {
			continue
		}
		prefix := sts.Name + "-"
		ordinal, err := strconv.Atoi(strings.TrimPrefix(podName, prefix))
		if !strings.HasPrefix(podName, prefix) || err != nil || ordinal < 0 {
			continue
		}
		replicas := int32(1)
		if sts.Spec.Replicas != nil {
			replicas = *sts.Spec.Replicas
		}
		if int32(ordinal) >= replicas {
			s.errorf(d, path+".env", "%s: host %q: StatefulSet %q has only %d replica(s)", key, host, sts.Name, replicas)
		}
		return w
	}
	s.errorf(d, path+".env", "%s: host %q: no StatefulSet pod of that name behind Service %q", key, host, svcName)
	return nil
}

func (s *set) checkParleyURL(d *Doc, path, ns, key, raw string, schemes []string, defaultPort int32) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		s.errorf(d, path+".env", "%s %q is not a URL", key, raw)
		return
	}
	ok := false
	for _, sc := range schemes {
		if u.Scheme == sc {
			ok = true
		}
	}
	if !ok {
		s.errorf(d, path+".env", "%s %q: scheme must be one of %v", key, raw, schemes)
	}
	port := defaultPort
	if u.Port() != "" {
		n, err := strconv.Atoi(u.Port())
		if err != nil {
			s.errorf(d, path+".env", "%s %q: bad port", key, raw)
			return
		}
		port = int32(n)
	}
	s.checkHost(d, path, ns, key, u.Hostname(), port)
}

func (s *set) checkCassandra(d *Doc, path, ns string, cfg map[string]string) {
	points, ok := cfg["PARLEY_CASSANDRA_CONTACT_POINTS"]
	if !ok {
		return
	}
	var ring *workload
	for _, cp := range strings.Split(points, ",") {
		cp = strings.TrimSpace(cp)
		host, portStr := cp, "9042"
		if i := strings.LastIndex(cp, ":"); i >= 0 {
			host, portStr = cp[:i], cp[i+1:]
		}
		port, err := strconv.Atoi(portStr)
		if host == "" || err != nil {
			s.errorf(d, path+".env", "PARLEY_CASSANDRA_CONTACT_POINTS entry %q is not host[:port]", cp)
			continue
		}
		if w := s.checkHost(d, path, ns, "PARLEY_CASSANDRA_CONTACT_POINTS", host, int32(port)); w != nil {
			ring = w
		}
	}
	rfStr, ok := cfg["PARLEY_CASSANDRA_REPLICATION_FACTOR"]
	if !ok {
		return
	}
	rf, err := strconv.Atoi(rfStr)
	if err != nil || rf < 1 {
		s.errorf(d, path+".env", "PARLEY_CASSANDRA_REPLICATION_FACTOR %q must be a positive integer", rfStr)
		return
	}
	if ring == nil {
		return // external Cassandra: cannot check further
	}
	sts := ring.doc.Obj.(*appsv1.StatefulSet)
	replicas := int32(1)
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	if int32(rf) > replicas {
		s.errorf(d, path+".env", "PARLEY_CASSANDRA_REPLICATION_FACTOR %d exceeds the %d node(s) of StatefulSet %q: writes could never reach their replicas", rf, replicas, sts.Name)
	}
	if dc, ok := cfg["PARLEY_CASSANDRA_DC"]; ok {
		for _, c := range sts.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "CASSANDRA_DC" && e.ValueFrom == nil && e.Value != dc {
					s.errorf(d, path+".env", "PARLEY_CASSANDRA_DC %q differs from CASSANDRA_DC %q of StatefulSet %q", dc, e.Value, sts.Name)
				}
			}
		}
	}
}

// parleyMetricsPort returns the /metrics port of a Parley container (PARLEY_METRICS_PORT), if it has one.
func (s *set) parleyMetricsPort(d *Doc, c *corev1.Container) (int32, bool) {
	isParley := false
	for _, e := range c.Env {
		if e.Name == "PARLEY_ROLE" {
			isParley = true
		}
	}
	if !isParley {
		return 0, false
	}
	v, ok := s.containerEnv(d, c)["PARLEY_METRICS_PORT"]
	if !ok || v == "off" {
		return 0, false
	}
	port, err := strconv.Atoi(v)
	if err != nil {
		return 0, false
	}
	return int32(port), true
}

// ---------------------------------------------------------------- PodMonitor

// checkPodMonitor checks that a PodMonitor selects pods of this set and
// scrapes a port those pods declare (their /metrics port, for Parley pods).
func (s *set) checkPodMonitor(d *Doc) {
	pm := d.Obj.(*monitoringv1.PodMonitor)
	sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil {
		s.errorf(d, "spec.selector", "%v", err)
		return
	}
	if sel.Empty() {
		s.errorf(d, "spec.selector", "required: an empty selector scrapes every pod of the namespace")
		return
	}
	matched := s.selecting(d.Namespace(), sel)
	if len(matched) == 0 {
		s.errorf(d, "spec.selector", "selector %v matches no workload's pod template in namespace %q", sel, d.Namespace())
		return
	}
	if len(pm.Spec.PodMetricsEndpoints) == 0 {
		s.errorf(d, "spec.podMetricsEndpoints", "at least one endpoint is required")
	}
	for i, ep := range pm.Spec.PodMetricsEndpoints {
		p := fmt.Sprintf("spec.podMetricsEndpoints[%d]", i)
		if ep.Port == nil || *ep.Port == "" {
			s.errorf(d, p+".port", "required: the name of the pods' metrics port")
			continue
		}
		for _, w := range matched {
			found := false
			for j := range w.template.Spec.Containers {
				c := &w.template.Spec.Containers[j]
				if cp, ok := containerPortOf(c, intstr.FromString(*ep.Port)); ok {
					found = true
					if mp, isMetrics := s.parleyMetricsPort(w.doc, c); isMetrics && mp != cp {
						s.errorf(d, p+".port", "port %q of %s is %d, not its PARLEY_METRICS_PORT %d", *ep.Port, w, cp, mp)
					}
				}
			}
			if !found {
				s.errorf(d, p+".port", "port %q is not declared by any container of %s", *ep.Port, w)
			}
		}
		if ep.Path != "" && ep.Path != "/metrics" {
			s.errorf(d, p+".path", "Parley serves /metrics, not %q", ep.Path)
		}
	}
}
