package inventory

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ClusterProfileGroupVersion is the SIG-Multicluster Cluster Inventory API
// group and version kargo-fleet reads.
var ClusterProfileGroupVersion = schema.GroupVersion{Group: "multicluster.x-k8s.io", Version: "v1alpha1"}

// addClusterProfileToScheme registers the ClusterProfile mirror with a
// scheme.
func addClusterProfileToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(ClusterProfileGroupVersion, &ClusterProfile{}, &ClusterProfileList{})
	metav1.AddToGroupVersion(s, ClusterProfileGroupVersion)
	return nil
}

// ClusterProfile mirrors just the fields of the SIG-Multicluster
// ClusterProfile (multicluster.x-k8s.io/v1alpha1) that kargo-fleet reads. The
// upstream Go module is not a dependency: the mirror pins exactly the
// contract relied on. Objects are only read, never written, so fields not
// mirrored are never lost.
type ClusterProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec is the desired state the cluster manager declared.
	Spec ClusterProfileSpec `json:"spec,omitempty"`
	// Status is what the cluster manager observed.
	Status ClusterProfileStatus `json:"status,omitempty"`
}

// ClusterProfileSpec holds the fields of the spec kargo-fleet reads.
type ClusterProfileSpec struct {
	// DisplayName is a human-readable name of the cluster.
	DisplayName string `json:"displayName,omitempty"`
	// ClusterManager names the system managing the cluster.
	ClusterManager ClusterManager `json:"clusterManager,omitempty"`
}

// ClusterManager names the system that manages a cluster.
type ClusterManager struct {
	// Name is the cluster manager's name, e.g. "open-cluster-management".
	Name string `json:"name,omitempty"`
}

// ClusterProfileStatus holds the fields of the status kargo-fleet reads.
type ClusterProfileStatus struct {
	// Version is the cluster's version.
	Version ClusterVersion `json:"version,omitempty"`
	// Properties are name/value facts about the cluster.
	Properties []ClusterProperty `json:"properties,omitempty"`
}

// ClusterVersion is a cluster's version.
type ClusterVersion struct {
	// Kubernetes is the Kubernetes version, e.g. "1.33.1".
	Kubernetes string `json:"kubernetes,omitempty"`
}

// ClusterProperty is one named fact about a cluster.
type ClusterProperty struct {
	// Name is the property's name, e.g. "clusterset.k8s.io".
	Name string `json:"name"`
	// Value is the property's value.
	Value string `json:"value"`
}

// ClusterProfileList is a list of ClusterProfiles.
type ClusterProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ClusterProfiles.
	Items []ClusterProfile `json:"items"`
}

// DeepCopyInto copies the receiver into out.
func (in *ClusterProfile) DeepCopyInto(out *ClusterProfile) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = in.Spec
	out.Status = in.Status
	if in.Status.Properties != nil {
		out.Status.Properties = make([]ClusterProperty, len(in.Status.Properties))
		copy(out.Status.Properties, in.Status.Properties)
	}
}

// DeepCopy returns a deep copy of the receiver.
func (in *ClusterProfile) DeepCopy() *ClusterProfile {
	if in == nil {
		return nil
	}
	out := new(ClusterProfile)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *ClusterProfile) DeepCopyObject() runtime.Object {
	return in.DeepCopy()
}

// DeepCopyInto copies the receiver into out.
func (in *ClusterProfileList) DeepCopyInto(out *ClusterProfileList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]ClusterProfile, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of the receiver.
func (in *ClusterProfileList) DeepCopy() *ClusterProfileList {
	if in == nil {
		return nil
	}
	out := new(ClusterProfileList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *ClusterProfileList) DeepCopyObject() runtime.Object {
	return in.DeepCopy()
}
