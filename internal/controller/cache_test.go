package controller

import (
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

func TestSlimPromotionKeepsWhatIsRead(t *testing.T) {
	t.Parallel()
	full := &kargo.Promotion{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", Labels: map[string]string{"l": "v"},
			Annotations:   map[string]string{kargo.AbortAnnotation: "terminate"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kargo"}},
		},
		Spec: kargo.PromotionSpec{
			Stage: "fleet.c-1", Freight: "f1",
			Vars:  []kargo.ExpressionVariable{{Name: "x", Value: "y"}},
			Steps: []kargo.PromotionStep{{Uses: "http"}},
		},
		Status: kargo.PromotionStatus{
			Phase: kargo.PromotionFailed, Message: "step failed",
			State:                 &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)},
			StepExecutionMetadata: []kargo.StepExecutionMetadata{{Alias: "a"}},
			FreightCollection:     &kargo.FreightCollection{ID: "c"},
		},
	}
	got, err := slimPromotion(full.DeepCopy())
	require.NoError(t, err)
	want := full.DeepCopy()
	want.ManagedFields = nil
	want.Spec.Vars, want.Spec.Steps = nil, nil
	want.Status.State, want.Status.StepExecutionMetadata, want.Status.FreightCollection = nil, nil, nil
	require.Equal(t, want, got)

	other := &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	same, err := slimPromotion(other)
	require.NoError(t, err)
	require.Same(t, other, same, "other kinds pass through")
}
