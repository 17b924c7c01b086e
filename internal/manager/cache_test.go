package manager

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/stepserver"
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

func TestSlimStageKeepsWhatIsRead(t *testing.T) {
	t.Parallel()
	coll := func(name string, verifications int) kargo.FreightCollection {
		c := kargo.FreightCollection{ID: name, Items: map[string]kargo.FreightReference{"Warehouse/apps": {Name: name}}}
		for i := range verifications {
			c.VerificationHistory = append(c.VerificationHistory, kargo.VerificationInfo{ID: fmt.Sprint(i), Phase: kargo.VerificationSuccessful})
		}
		return c
	}
	full := &kargo.Stage{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet.c-1", Labels: map[string]string{"l": "v"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kargo"}}},
		Spec: kargo.StageSpec{Vars: []kargo.ExpressionVariable{{Name: "fleetTarget", Value: "c-1"}}},
		Status: kargo.StageStatus{
			Health:         &kargo.Health{Status: kargo.HealthHealthy},
			FreightHistory: []kargo.FreightCollection{coll("f3", 3), coll("f2", 2), coll("f1", 1)},
			LastPromotion:  &kargo.PromotionReference{Name: "p", Status: &kargo.PromotionStatus{Phase: kargo.PromotionSucceeded}},
		},
	}
	got, err := slimStage(full.DeepCopy())
	require.NoError(t, err)
	st := got.(*kargo.Stage)
	require.Nil(t, st.ManagedFields)
	require.Equal(t, full.Spec, st.Spec, "the spec is what the FleetStage controller compares: kept whole")
	require.Equal(t, full.Labels, st.Labels)
	require.Equal(t, []string{"f3"}, st.CurrentFreightNames())
	require.Equal(t, "0", st.LastVerification().ID)
	require.Len(t, st.Status.FreightHistory, 2)
	require.Len(t, st.Status.FreightHistory[1].VerificationHistory, 1)
	require.Equal(t, kargo.HealthHealthy, st.Status.Health.Status)
	require.Equal(t, "p", st.Status.LastPromotion.Name)
	require.Nil(t, st.Status.LastPromotion.Status)
}

func TestSlimFreightKeepsApprovals(t *testing.T) {
	t.Parallel()
	full := &kargo.Freight{
		ObjectMeta: metav1.ObjectMeta{Name: "f1", Namespace: "ns", Labels: map[string]string{"l": "v"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kargo"}}},
		Origin: kargo.FreightOrigin{Kind: "Warehouse", Name: "apps"},
		Status: kargo.FreightStatus{
			ApprovedFor: map[string]kargo.ApprovedStage{"fleet.wave-canary": {}},
			VerifiedIn:  map[string]kargo.VerifiedStage{"fleet.wave-pilot": {}},
			CurrentlyIn: map[string]kargo.CurrentStage{"fleet.c-1": {}},
		},
	}
	got, err := slimFreight(full.DeepCopy())
	require.NoError(t, err)
	want := full.DeepCopy()
	want.ManagedFields = nil
	want.Status.VerifiedIn, want.Status.CurrentlyIn = nil, nil
	require.Equal(t, want, got)
	require.True(t, got.(*kargo.Freight).IsApprovedFor("fleet.wave-canary"))

	other := &kargo.Stage{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	same, err := slimFreight(other)
	require.NoError(t, err)
	require.Same(t, other, same, "other kinds pass through")
}

func Test_secretNamespaces(t *testing.T) {
	t.Parallel()
	key := stepserver.Options{SigningKeySecret: types.NamespacedName{Namespace: "fleet-system", Name: "k"}}
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{name: "default inventory namespace", opts: Options{StepServer: &key}, want: []string{"argocd"}},
		{name: "listed", opts: Options{InventoryNamespaces: []string{"gitops", "argocd"}, StepServer: &key},
			want: []string{"argocd", "gitops"}},
		{name: "none listed: the controller's own, never all", opts: Options{InventoryNamespaces: []string{}, StepServer: &key},
			want: []string{"fleet-system"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := secretNamespaces(tt.opts)
			require.Equal(t, tt.want, got)
			for obj, by := range CacheOptions(got).ByObject {
				if _, ok := obj.(*corev1.Secret); ok {
					require.ElementsMatch(t, tt.want, slices.Collect(maps.Keys(by.Namespaces)),
						"Secrets are cached only where the controller may read them")
					require.Equal(t, "argocd.argoproj.io/secret-type=cluster", by.Label.String())
				}
			}
		})
	}
}
