package kargo

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is Kargo's API group and version.
var GroupVersion = schema.GroupVersion{Group: "kargo.akuity.io", Version: "v1alpha1"}

var (
	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers the mirrored Kargo kinds with a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&Project{}, &ProjectList{},
		&ProjectConfig{}, &ProjectConfigList{},
		&Warehouse{}, &WarehouseList{},
		&Freight{}, &FreightList{},
		&Stage{}, &StageList{},
		&Promotion{}, &PromotionList{},
		&PromotionTask{}, &PromotionTaskList{},
		&ClusterPromotionTask{}, &ClusterPromotionTaskList{},
		&Target{}, &TargetList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
