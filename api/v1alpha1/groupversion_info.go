package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of kargo-fleet objects.
var GroupVersion = schema.GroupVersion{Group: "fleet.kargo-fleet.io", Version: "v1alpha1"}

var (
	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers the kargo-fleet kinds with a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&FleetStage{}, &FleetStageList{},
		&FleetRollout{}, &FleetRolloutList{},
		&FreightPolicy{}, &FreightPolicyList{},
		&FleetAuditSegment{}, &FleetAuditSegmentList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
