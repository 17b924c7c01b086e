package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// argocdWorkloads are the components of Argo CD's install.yaml the lane runs
// as processes, by the kind and name of their workload.
var argocdWorkloads = map[string]string{
	"application-controller":    "StatefulSet/argocd-application-controller",
	"repo-server":               "Deployment/argocd-repo-server",
	"applicationset-controller": "Deployment/argocd-applicationset-controller",
}

func installYAML(manifests string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(filepath.Join(manifests, "install.yaml"))
	if err != nil {
		return nil, err
	}
	return decode(string(b))
}

// argocdObjects writes Argo CD's install.yaml without what runs as
// processes or routes traffic in a cluster: workloads, Services and
// NetworkPolicies.
func argocdObjects(args []string) error {
	fs := flag.NewFlagSet("argocd-objects", flag.ExitOnError)
	manifests := fs.String("manifests", "", "Argo CD's manifests folder (install.yaml, crds/)")
	out := fs.String("out", "", "output file")
	_ = fs.Parse(args)
	objs, err := installYAML(*manifests)
	if err != nil {
		return err
	}
	var docs []string
	for _, o := range objs {
		if slices.Contains([]string{"Deployment", "StatefulSet", "Service", "NetworkPolicy"}, o.GetKind()) {
			continue
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		docs = append(docs, string(b))
	}
	return os.WriteFile(*out, []byte(strings.Join(docs, "---\n")), 0o644)
}

// argocdEnv writes, for each component the lane runs, the container
// environment of its workload in install.yaml with the ConfigMap and Secret
// references resolved against the live argocd namespace, as the kubelet
// would: <out>/<component>.env, NAME=VALUE lines.
func argocdEnv(args []string) error {
	fs := flag.NewFlagSet("argocd-env", flag.ExitOnError)
	manifests := fs.String("manifests", "", "Argo CD's manifests folder (install.yaml, crds/)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster holding the argocd namespace")
	out := fs.String("out", "", "output folder")
	_ = fs.Parse(args)
	objs, err := installYAML(*manifests)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	lookup := argocdKeys(context.Background(), c)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	for component, ref := range argocdWorkloads {
		spec, err := workloadPodSpec(objs, ref)
		if err != nil {
			return err
		}
		lines := envLines(spec, lookup)
		if err := os.WriteFile(filepath.Join(*out, component+".env"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// argocdKeys reads keys of ConfigMaps and Secrets in the argocd namespace,
// each object once; a missing object has no keys.
func argocdKeys(ctx context.Context, c client.Client) func(secret bool, name, key string) (string, bool) {
	cms, secrets := map[string]map[string]string{}, map[string]map[string]string{}
	return func(secret bool, name, key string) (string, bool) {
		cache := cms
		if secret {
			cache = secrets
		}
		m, ok := cache[name]
		if !ok {
			m = map[string]string{}
			if secret {
				s := &corev1.Secret{}
				if c.Get(ctx, client.ObjectKey{Namespace: "argocd", Name: name}, s) == nil {
					for k, v := range s.Data {
						m[k] = string(v)
					}
				}
			} else {
				cm := &corev1.ConfigMap{}
				if c.Get(ctx, client.ObjectKey{Namespace: "argocd", Name: name}, cm) == nil {
					m = cm.Data
				}
			}
			cache[name] = m
		}
		v, ok := m[key]
		return v, ok
	}
}

// workloadPodSpec finds the pod template of workload ref (Kind/name: a
// Deployment or a StatefulSet) in install.yaml.
func workloadPodSpec(objs []*unstructured.Unstructured, ref string) (*corev1.PodSpec, error) {
	kind, name, _ := strings.Cut(ref, "/")
	var spec *corev1.PodSpec
	for _, o := range objs {
		if o.GetKind() != kind || o.GetName() != name {
			continue
		}
		switch kind {
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				return nil, err
			}
			spec = &d.Spec.Template.Spec
		default:
			s := &appsv1.StatefulSet{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, s); err != nil {
				return nil, err
			}
			spec = &s.Spec.Template.Spec
		}
	}
	if spec == nil {
		return nil, fmt.Errorf("%s not found in install.yaml", ref)
	}
	return spec, nil
}

// envLines resolves the first container's environment as the kubelet
// would, NAME=VALUE; a reference to a missing key sets nothing.
func envLines(spec *corev1.PodSpec, lookup func(secret bool, name, key string) (string, bool)) []string {
	var lines []string
	for _, e := range spec.Containers[0].Env {
		vf := e.ValueFrom
		switch {
		case vf == nil:
			lines = append(lines, e.Name+"="+e.Value)
		case vf.FieldRef != nil:
			lines = append(lines, e.Name+"=argocd")
		case vf.ConfigMapKeyRef != nil:
			if v, ok := lookup(false, vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key); ok {
				lines = append(lines, e.Name+"="+v)
			}
		case vf.SecretKeyRef != nil:
			if v, ok := lookup(true, vf.SecretKeyRef.Name, vf.SecretKeyRef.Key); ok {
				lines = append(lines, e.Name+"="+v)
			}
		}
	}
	return lines
}
