package inventory

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

func clusterSecret(name string, data map[string]string, labels, annotations map[string]string) corev1.Secret {
	s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "argocd", Labels: labels, Annotations: annotations},
		Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestFromArgoCDSecrets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		secrets     []corev1.Secret
		annotations []string
		want        []plan.Target
		wantSkipped []SkippedObject
	}{
		{
			name: "name, server, project, labels and selected annotations; never credentials",
			secrets: []corev1.Secret{clusterSecret("cluster-prod-eu-1-2f4e",
				map[string]string{"name": "Prod_EU_1", "server": "https://eu-1.example.com", "project": "payments",
					"config": `{"bearerToken":"secret"}`},
				map[string]string{ArgoCDSecretTypeLabel: "cluster", "region": "eu"},
				map[string]string{"example.com/cell": "7", "example.com/ignored": "x", "server": "annotation-loses",
					"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"config":"{\"bearerToken\":\"secret\"}"}}`})},
			annotations: []string{"example.com/cell", "server", "example.com/absent", "kubectl.kubernetes.io/last-applied-configuration"},
			want: []plan.Target{{
				ID: "prod-eu-1", Name: "Prod_EU_1", Source: "ArgoCDCluster",
				Labels: map[string]string{ArgoCDSecretTypeLabel: "cluster", "region": "eu"},
				Params: map[string]string{"server": "https://eu-1.example.com", "project": "payments", "example.com/cell": "7"},
			}},
		},
		{
			name: "the Secret's name stands in for a missing cluster name; output sorted by ID",
			secrets: []corev1.Secret{
				clusterSecret("zz", map[string]string{"server": "https://z"}, nil, nil),
				clusterSecret("aa", map[string]string{"server": "https://a"}, nil, nil),
			},
			want: []plan.Target{
				{ID: "aa", Name: "aa", Source: "ArgoCDCluster", Params: map[string]string{"server": "https://a"}},
				{ID: "zz", Name: "zz", Source: "ArgoCDCluster", Params: map[string]string{"server": "https://z"}},
			},
		},
		{
			name:        "no server: skipped with a reason",
			secrets:     []corev1.Secret{clusterSecret("broken", map[string]string{"name": "broken"}, nil, nil)},
			want:        []plan.Target{},
			wantSkipped: []SkippedObject{{Source: "ArgoCDCluster", Namespace: "argocd", Name: "broken", Reason: "cluster Secret has no server"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, skipped := FromArgoCDSecrets(tt.secrets, tt.annotations)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantSkipped, skipped)
		})
	}
}

func TestFromKargoTargets(t *testing.T) {
	t.Parallel()
	obj := kargo.Target{
		ObjectMeta: metav1.ObjectMeta{Name: "store-0042", Labels: map[string]string{"region": "us"},
			Annotations: map[string]string{"example.com/owner": "retail"}},
		Spec: kargo.TargetSpec{Params: map[string]apiextensionsv1.JSON{
			"url":     {Raw: []byte(`"https://store-42.example.com"`)},
			"cells":   {Raw: []byte(`3`)},
			"canary":  {Raw: []byte(`true`)},
			"zones":   {Raw: []byte(`[ "a", "b" ]`)},
			"nothing": {Raw: []byte(`null`)},
			"broken":  {Raw: []byte(`{not json`)},
		}},
	}
	got := FromKargoTargets([]kargo.Target{obj}, []string{"example.com/owner"})
	require.Equal(t, []plan.Target{{
		ID: "store-0042", Name: "store-0042", Source: "KargoTarget",
		Labels: map[string]string{"region": "us"},
		Params: map[string]string{
			"url": "https://store-42.example.com", "cells": "3", "canary": "true", "zones": `["a","b"]`,
			"nothing": "", "broken": "{not json", "example.com/owner": "retail",
		},
	}}, got)
}

func TestFromClusterProfiles(t *testing.T) {
	t.Parallel()
	objs := []ClusterProfile{{
		ObjectMeta: metav1.ObjectMeta{Name: "member-2", Labels: map[string]string{"x-k8s.io/cluster-manager": "ocm"}},
		Spec:       ClusterProfileSpec{DisplayName: "Member 2", ClusterManager: ClusterManager{Name: "ocm"}},
		Status: ClusterProfileStatus{
			Version:    ClusterVersion{Kubernetes: "1.33.1"},
			Properties: []ClusterProperty{{Name: "clusterset.k8s.io", Value: "prod"}, {Name: "displayName", Value: "loses"}},
		},
	}, {ObjectMeta: metav1.ObjectMeta{Name: "bare"}}}
	got := FromClusterProfiles(objs, nil)
	require.Equal(t, []plan.Target{
		{ID: "bare", Name: "bare", Source: "ClusterProfile"},
		{
			ID: "member-2", Name: "member-2", Source: "ClusterProfile",
			Labels: map[string]string{"x-k8s.io/cluster-manager": "ocm"},
			Params: map[string]string{"clusterset.k8s.io": "prod", "displayName": "Member 2",
				"clusterManager": "ocm", "kubernetesVersion": "1.33.1"},
		},
	}, got)
}

func TestFromInline(t *testing.T) {
	t.Parallel()
	items := []fleetv1alpha1.InlineTarget{
		{Name: "Edge Router 7", Labels: map[string]string{"site": "lyon"}, Params: map[string]string{"ip": "10.0.0.7"}},
		{Name: "a"},
	}
	got := FromInline(items)
	require.Equal(t, []plan.Target{
		{ID: "a", Name: "a", Source: "Inline"},
		{ID: "edge-router-7", Name: "Edge Router 7", Source: "Inline",
			Labels: map[string]string{"site": "lyon"}, Params: map[string]string{"ip": "10.0.0.7"}},
	}, got)
	got[1].Labels["site"] = "changed"
	require.Equal(t, "lyon", items[0].Labels["site"], "targets never alias the spec's maps")
}

func TestClusterProfile_DeepCopy(t *testing.T) {
	t.Parallel()
	in := &ClusterProfileList{Items: []ClusterProfile{{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}},
		Status:     ClusterProfileStatus{Properties: []ClusterProperty{{Name: "p", Value: "1"}}},
	}}}
	out, ok := in.DeepCopyObject().(*ClusterProfileList)
	require.True(t, ok)
	require.Equal(t, in, out)
	out.Items[0].Labels["k"] = "changed"
	out.Items[0].Status.Properties[0].Value = "2"
	require.Equal(t, "v", in.Items[0].Labels["k"])
	require.Equal(t, "1", in.Items[0].Status.Properties[0].Value)
	var nilProfile *ClusterProfile
	require.Nil(t, nilProfile.DeepCopy())
	var nilList *ClusterProfileList
	require.Nil(t, nilList.DeepCopy())
}
