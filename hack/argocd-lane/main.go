// Command argocd-lane renders what hack/argocd-lane/up.sh applies and runs:
// Kargo's chart and kargo-fleet's chart, rendered with the Helm SDK, split
// into the objects a control plane of processes needs (CRDs, namespaces,
// ServiceAccounts, RBAC, ConfigMaps, Secrets, webhook configurations pointed
// at 127.0.0.1) and, for every Deployment, the environment and arguments of
// its container, for the script to start the binary with. It also hashes the
// Kargo API server's admin password.
//
//	argocd-lane kargo -chart DIR -out DIR -ca FILE -api-port N -webhook-port N -password-hash H -signing-key K
//	argocd-lane fleet -out DIR -ca FILE -webhook-port N -steps-port N -metrics-port N -probes-port N
//	argocd-lane argocd-objects -manifests DIR -out FILE
//	argocd-lane argocd-env -manifests DIR -kubeconfig FILE -out DIR
//	argocd-lane bcrypt PASSWORD
package main

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/crypto/bcrypt"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kargo-fleet/kargo-fleet/internal/helmchart"
)

// dropped are the kinds a lane of processes has no use for: the workloads
// run as processes, nothing routes Services, certificates are the lane's.
var dropped = []string{"Deployment", "Service", "Ingress", "PodDisruptionBudget", "NetworkPolicy",
	"ServiceMonitor", "Certificate", "Issuer", "ClusterIssuer"}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: argocd-lane kargo|fleet|argocd-objects|argocd-env|bcrypt ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "kargo":
		err = kargo(os.Args[2:])
	case "fleet":
		err = fleet(os.Args[2:])
	case "argocd-objects":
		err = argocdObjects(os.Args[2:])
	case "argocd-env":
		err = argocdEnv(os.Args[2:])
	case "bcrypt":
		if len(os.Args) != 3 {
			err = errors.New("usage: argocd-lane bcrypt PASSWORD")
			break
		}
		var h []byte
		if h, err = bcrypt.GenerateFromPassword([]byte(os.Args[2]), bcrypt.DefaultCost); err == nil {
			fmt.Println(string(h))
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "argocd-lane:", err)
		os.Exit(1)
	}
}

func kargo(args []string) error {
	fs := flag.NewFlagSet("kargo", flag.ExitOnError)
	chart := fs.String("chart", "", "Kargo's chart folder (charts/kargo of the Kargo source)")
	out := fs.String("out", "", "output folder")
	caFile := fs.String("ca", "", "PEM CA certificate of the webhook servers")
	apiPort := fs.Int("api-port", 0, "port of Kargo's API server")
	webhookPort := fs.Int("webhook-port", 0, "port of Kargo's webhooks server")
	hash := fs.String("password-hash", "", "bcrypt hash of the admin password")
	key := fs.String("signing-key", "", "admin token signing key")
	_ = fs.Parse(args)
	ch, err := loader.Load(*chart)
	if err != nil {
		return fmt.Errorf("error loading %s: %w", *chart, err)
	}
	host := "127.0.0.1:" + strconv.Itoa(*apiPort)
	values := map[string]any{
		"api": map[string]any{
			"host": host,
			"tls":  map[string]any{"enabled": false},
			"adminAccount": map[string]any{"enabled": true, "passwordHash": *hash,
				"tokenSigningKey": *key, "tokenTTL": "720h"},
			"rollouts": map[string]any{"integrationEnabled": false},
		},
		"controller": map[string]any{
			"argocd":   map[string]any{"integrationEnabled": true, "namespace": "argocd"},
			"rollouts": map[string]any{"integrationEnabled": false},
			// The lane's Warehouses never poll: their Freight is created.
			"reconcilers": map[string]any{"warehouses": map[string]any{"minReconciliationInterval": "1h"}},
		},
		"externalWebhooksServer": map[string]any{"enabled": false},
		"garbageCollector":       map[string]any{"enabled": false},
	}
	vals, err := chartutil.ToRenderValues(ch, values,
		chartutil.ReleaseOptions{Name: "kargo", Namespace: "kargo", Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return err
	}
	files, err := new(engine.Engine).Render(ch, vals)
	if err != nil {
		return fmt.Errorf("error rendering Kargo's chart: %w", err)
	}
	var objs []*unstructured.Unstructured
	names := make([]string, 0, len(files))
	for n := range files {
		if strings.HasSuffix(n, ".yaml") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		o, err := decode(files[n])
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		objs = append(objs, o...)
	}
	return write(*out, "kargo", objs, *caFile, map[string]string{"kargo-webhooks-server": "127.0.0.1:" + strconv.Itoa(*webhookPort)})
}

func fleet(args []string) error {
	fs := flag.NewFlagSet("fleet", flag.ExitOnError)
	out := fs.String("out", "", "output folder")
	caFile := fs.String("ca", "", "PEM CA certificate of the webhook server")
	webhookPort := fs.Int("webhook-port", 0, "port of kargo-fleet's webhook server")
	stepsPort := fs.Int("steps-port", 0, "port of kargo-fleet's step server")
	metricsPort := fs.Int("metrics-port", 0, "port of kargo-fleet's metrics")
	probesPort := fs.Int("probes-port", 0, "port of kargo-fleet's probes")
	_ = fs.Parse(args)
	ca, err := os.ReadFile(*caFile)
	if err != nil {
		return err
	}
	objs, err := helmchart.Render(helmchart.Release{Name: "kargo-fleet", Namespace: "kargo-fleet", Values: map[string]any{
		"replicas":   1,
		"ports":      map[string]any{"steps": *stepsPort, "webhook": *webhookPort, "metrics": *metricsPort, "probes": *probesPort},
		"controller": map[string]any{"stepServerURL": fmt.Sprintf("https://127.0.0.1:%d", *stepsPort)},
		"webhook": map[string]any{"certificates": "secret", "secretName": "kargo-fleet-webhook-lane",
			"caBundle": base64.StdEncoding.EncodeToString(ca)},
		"steps":          map[string]any{"tls": map[string]any{"certificates": "secret", "secretName": "kargo-fleet-steps-lane"}},
		"serviceMonitor": map[string]any{"enabled": false},
		"metrics":        map[string]any{"secure": false},
	}})
	if err != nil {
		return err
	}
	return write(*out, "kargo-fleet", objs, *caFile, map[string]string{"kargo-fleet-webhook": "127.0.0.1:" + strconv.Itoa(*webhookPort)})
}

func decode(s string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for doc := range strings.SplitSeq(s, "\n---") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, err
		}
		if string(j) == "null" {
			continue
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(j); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// write splits objs into <name>-crds.yaml, <name>.yaml and, per Deployment,
// env/<deployment>.env (NAME=VALUE lines) and env/<deployment>.args (one
// argument a line). Webhook configurations are pointed at hosts: the
// Service's name to host:port on the loopback interface.
func write(out, name string, objs []*unstructured.Unstructured, caFile string, hosts map[string]string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(out, "env"), 0o755); err != nil {
		return err
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byName[o.GetKind()+"/"+o.GetName()] = o
	}
	var crds, rest []string
	for _, o := range objs {
		switch k := o.GetKind(); {
		case k == "CustomResourceDefinition":
			b, err := yaml.Marshal(o.Object)
			if err != nil {
				return err
			}
			crds = append(crds, string(b))
			continue
		case k == "Deployment":
			if err := envOf(out, o, byName); err != nil {
				return err
			}
			continue
		case slices.Contains(dropped, k):
			continue
		case k == "ValidatingWebhookConfiguration" || k == "MutatingWebhookConfiguration":
			if err := pointWebhooks(o, hosts, ca); err != nil {
				return err
			}
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		rest = append(rest, string(b))
	}
	if err := os.WriteFile(filepath.Join(out, name+"-crds.yaml"), []byte(strings.Join(crds, "---\n")), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, name+".yaml"), []byte(strings.Join(rest, "---\n")), 0o600)
}

func pointWebhooks(o *unstructured.Unstructured, hosts map[string]string, ca []byte) error {
	anns := o.GetAnnotations()
	delete(anns, "cert-manager.io/inject-ca-from")
	o.SetAnnotations(anns)
	hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
	for _, h := range hooks {
		hm := h.(map[string]any)
		cc, _ := hm["clientConfig"].(map[string]any)
		svc, _ := cc["service"].(map[string]any)
		if svc == nil {
			continue
		}
		svcName, _ := svc["name"].(string)
		host, ok := hosts[svcName]
		if !ok {
			return fmt.Errorf("webhook %v calls Service %q, which the lane does not serve", hm["name"], svcName)
		}
		path, _ := svc["path"].(string)
		hm["clientConfig"] = map[string]any{"url": "https://" + host + path, "caBundle": base64.StdEncoding.EncodeToString(ca)}
	}
	return unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
}

// envOf writes the first container's environment, ConfigMap and Secret
// references resolved against the rendered objects, and its arguments.
func envOf(out string, o *unstructured.Unstructured, byName map[string]*unstructured.Unstructured) error {
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
		return err
	}
	c := d.Spec.Template.Spec.Containers[0]
	var lines []string
	add := func(k, v string) {
		if !strings.ContainsAny(v, "\n") {
			lines = append(lines, k+"="+v)
		}
	}
	for _, ef := range c.EnvFrom {
		var m map[string]string
		switch {
		case ef.ConfigMapRef != nil:
			m = renderedData(byName, "ConfigMap", ef.ConfigMapRef.Name)
		case ef.SecretRef != nil:
			m = renderedData(byName, "Secret", ef.SecretRef.Name)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			add(ef.Prefix+k, m[k])
		}
	}
	for _, e := range c.Env {
		switch vf := e.ValueFrom; {
		case vf == nil:
			add(e.Name, e.Value)
		case vf.FieldRef != nil && vf.FieldRef.FieldPath == "metadata.namespace":
			add(e.Name, d.Namespace)
		case vf.FieldRef != nil && vf.FieldRef.FieldPath == "spec.serviceAccountName":
			add(e.Name, d.Spec.Template.Spec.ServiceAccountName)
		case vf.ConfigMapKeyRef != nil:
			if v, ok := renderedData(byName, "ConfigMap", vf.ConfigMapKeyRef.Name)[vf.ConfigMapKeyRef.Key]; ok {
				add(e.Name, v)
			}
		case vf.SecretKeyRef != nil:
			if v, ok := renderedData(byName, "Secret", vf.SecretKeyRef.Name)[vf.SecretKeyRef.Key]; ok {
				add(e.Name, v)
			}
		}
	}
	lines = append(lines, "SERVICE_ACCOUNT="+d.Spec.Template.Spec.ServiceAccountName)
	if err := os.WriteFile(filepath.Join(out, "env", d.Name+".env"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "env", d.Name+".args"), []byte(strings.Join(binaryArgs(c), "\n")+"\n"), 0o644)
}

// binaryArgs are the arguments of the binary: what follows the binary's own
// path in the command (Kargo's run it behind tini), then the container's
// args.
func binaryArgs(c corev1.Container) []string {
	var args []string
	for i, w := range c.Command {
		if filepath.Base(w) == "kargo" || filepath.Base(w) == "kargo-fleet" {
			args = slices.Clone(c.Command[i+1:])
		}
	}
	return append(args, c.Args...)
}

// renderedData is the data of the rendered ConfigMap or Secret kind/name;
// empty when it was not rendered.
func renderedData(byName map[string]*unstructured.Unstructured, kind, name string) map[string]string {
	obj := byName[kind+"/"+name]
	out := map[string]string{}
	if obj == nil {
		return out
	}
	switch kind {
	case "ConfigMap":
		cm := &corev1.ConfigMap{}
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, cm)
		return cm.Data
	default:
		s := &corev1.Secret{}
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, s)
		for k, v := range s.Data {
			out[k] = string(v)
		}
		for k, v := range s.StringData {
			out[k] = v
		}
	}
	return out
}
