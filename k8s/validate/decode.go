package main

import (
	"encoding/json"
	"fmt"
	"regexp"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// registry maps "apiVersion/kind" to a constructor of the typed API object.
// A document whose apiVersion/kind is not listed here is rejected: add a kind
// here (with its real k8s.io/api type) before using it in k8s/.
var registry = map[string]func() metav1.Object{
	"v1/Namespace":             func() metav1.Object { return &corev1.Namespace{} },
	"v1/ServiceAccount":        func() metav1.Object { return &corev1.ServiceAccount{} },
	"v1/ConfigMap":             func() metav1.Object { return &corev1.ConfigMap{} },
	"v1/Secret":                func() metav1.Object { return &corev1.Secret{} },
	"v1/Service":               func() metav1.Object { return &corev1.Service{} },
	"v1/PersistentVolumeClaim": func() metav1.Object { return &corev1.PersistentVolumeClaim{} },

	"apps/v1/Deployment":  func() metav1.Object { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet": func() metav1.Object { return &appsv1.StatefulSet{} },
	"apps/v1/DaemonSet":   func() metav1.Object { return &appsv1.DaemonSet{} },

	"batch/v1/Job":     func() metav1.Object { return &batchv1.Job{} },
	"batch/v1/CronJob": func() metav1.Object { return &batchv1.CronJob{} },

	"autoscaling/v2/HorizontalPodAutoscaler": func() metav1.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":          func() metav1.Object { return &policyv1.PodDisruptionBudget{} },

	"networking.k8s.io/v1/Ingress":       func() metav1.Object { return &networkingv1.Ingress{} },
	"networking.k8s.io/v1/NetworkPolicy": func() metav1.Object { return &networkingv1.NetworkPolicy{} },

	"rbac.authorization.k8s.io/v1/Role":        func() metav1.Object { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding": func() metav1.Object { return &rbacv1.RoleBinding{} },

	// The Prometheus Operator's scrape configuration (k8s/monitoring).
	"monitoring.coreos.com/v1/PodMonitor": func() metav1.Object { return &monitoringv1.PodMonitor{} },
}

// clusterScoped lists the registered kinds that have no namespace.
var clusterScoped = map[string]bool{"Namespace": true}

// Doc is one decoded document.
type Doc struct {
	File       string
	Index      int // 1-based position in the whole input set
	Line       int // line of the document's first line in File
	APIVersion string
	Kind       string
	Obj        metav1.Object // pointer to the typed k8s.io/api struct
}

func (d *Doc) Name() string      { return d.Obj.GetName() }
func (d *Doc) Namespace() string { return d.Obj.GetNamespace() }

func (d *Doc) String() string {
	id := d.Name()
	if d.Namespace() != "" {
		id = d.Namespace() + "/" + id
	}
	return fmt.Sprintf("%s %s %s (doc %d, %s:%d)", d.APIVersion, d.Kind, id, d.Index, d.File, d.Line)
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// decode converts one YAML document to JSON and decodes it strictly into its
// typed struct. It returns (nil, nil) for an empty document.
func decode(file string, index, line int, text []byte) (*Doc, []Finding) {
	fail := func(path, format string, args ...any) []Finding {
		return []Finding{{Path: path, Msg: fmt.Sprintf("doc %d: ", index) + fmt.Sprintf(format, args...)}}
	}

	// YAMLToJSONStrict rejects duplicate keys at the YAML level.
	js, err := yaml.YAMLToJSONStrict(text)
	if err != nil {
		// Make the parser's document-relative line numbers file-relative.
		msg := yamlLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
			n, _ := strconv.Atoi(yamlLine.FindStringSubmatch(m)[1])
			return fmt.Sprintf("line %d", n+line-1)
		})
		return nil, fail("", "invalid YAML: %s", msg)
	}
	trimmed := strings.TrimSpace(string(js))
	if trimmed == "null" || trimmed == "" {
		return nil, nil
	}
	if !strings.HasPrefix(trimmed, "{") {
		return nil, fail("", "document is not a mapping (a Kubernetes object)")
	}

	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, fail("", "cannot read apiVersion/kind: %v", err)
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return nil, fail("", "apiVersion and kind are required (got apiVersion %q, kind %q)", tm.APIVersion, tm.Kind)
	}
	key := tm.APIVersion + "/" + tm.Kind
	newObj, ok := registry[key]
	if !ok {
		return nil, fail("", "unknown kind %q (apiVersion %q): not in the validator's registry; known: %s",
			tm.Kind, tm.APIVersion, strings.Join(knownKinds(), ", "))
	}
	obj := newObj()

	// Case-sensitive decoding (like the API server) into the real type; strict
	// errors list every unknown or duplicate field with its full path.
	strictErrs, err := kjson.UnmarshalStrict(js, obj)
	doc := &Doc{File: file, Index: index, Line: line, APIVersion: tm.APIVersion, Kind: tm.Kind, Obj: obj}
	var findings []Finding
	if err != nil {
		findings = append(findings, Finding{Doc: doc, Msg: fmt.Sprintf("does not decode as %s: %v", key, err)})
	}
	for _, se := range strictErrs {
		findings = append(findings, Finding{Doc: doc, Msg: strictMessage(se)})
	}
	return doc, findings
}

// strictMessage turns `unknown field "spec.replcas"` into a message that
// leads with the field path.
func strictMessage(err error) string {
	fe, ok := err.(kjson.FieldError)
	if !ok {
		return err.Error()
	}
	path := strings.TrimPrefix(fe.FieldPath(), ".")
	kind := strings.TrimSuffix(err.Error(), " "+strconv.Quote(fe.FieldPath()))
	if kind == "unknown field" {
		return fmt.Sprintf("%s: unknown field (not part of the Kubernetes API type: misspelled, wrongly cased or misplaced)", path)
	}
	return fmt.Sprintf("%s: %s", path, kind)
}

func knownKinds() []string {
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
