package render

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// FuzzBaseFromInline: an inline Stage spec's promotion template and
// verification either fail with an error naming the field, or convert to a
// base whose template is one JSON document, has steps that each use exactly
// one of uses and task, and survives a strict round trip; the verification
// is carried byte for byte.
func FuzzBaseFromInline(f *testing.F) {
	f.Add(`{"spec":{"steps":[{"uses":"argocd-update","config":{"apps":[{"name":"x"}]}}]}}`, `{"analysisTemplates":[{"name":"a"}]}`)
	f.Add(`{"spec":{"steps":[{"task":{"name":"fleet-wave","kind":"ClusterPromotionTask"},"as":"w"}]}}`, ``)
	f.Add(`{"spec":{"steps":[{"task":{"name":"fleet-rollback"},"if":"${{ failure() }}"}]}}`, ``)
	f.Add(`{"spec":{"vars":[{"name":"a","value":"b"}],"steps":[{"uses":"x","retry":{"timeout":"5m"}}]}}`, `{}`)
	f.Add(`{"spec":{"steps":[]}}`, ``)
	f.Add(`{"spec":{"stepz":[]}}`, ``)
	f.Add(``, `null`)
	f.Fuzz(func(t *testing.T, template, verification string) {
		in := &fleetv1alpha1.InlineStageSpec{
			RequestedFreight: []fleetv1alpha1.RequestedFreight{{Origin: fleetv1alpha1.FreightOrigin{Kind: "Warehouse", Name: "w"},
				Sources: fleetv1alpha1.FreightSources{Stages: []string{"a"}}}},
			PromotionTemplate: runtime.RawExtension{Raw: []byte(template)},
			Vars:              []fleetv1alpha1.Var{{Name: "v", Value: "1"}},
		}
		if verification != "" {
			in.Verification = &runtime.RawExtension{Raw: []byte(verification)}
		}
		b, err := BaseFromInline(in)
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "spec.stage.inline."), "the error names the field: %v", err)
			require.Nil(t, b.PromotionTemplate)
			return
		}
		require.True(t, json.Valid([]byte(template)), "an accepted template is one JSON document: %q", template)
		require.NotNil(t, b.PromotionTemplate)
		require.NotEmpty(t, b.PromotionTemplate.Spec.Steps)
		for _, s := range b.PromotionTemplate.Spec.Steps {
			require.NotEqual(t, s.Uses == "", s.Task == nil, "exactly one of uses and task")
		}
		raw, err := json.Marshal(b.PromotionTemplate)
		require.NoError(t, err)
		again := &kargo.PromotionTemplate{}
		require.NoError(t, strictUnmarshal(raw, again))
		require.Equal(t, b.PromotionTemplate, again, "the template survives a round trip")
		require.Len(t, b.RequestedFreight, 1)
		require.Equal(t, []string{"a"}, b.RequestedFreight[0].Sources.Stages)
		require.Equal(t, []kargo.ExpressionVariable{{Name: "v", Value: "1"}}, b.Vars)
		if verification == "" {
			require.Nil(t, b.Verification)
		} else {
			require.Equal(t, verification, string(b.Verification.Raw))
		}
	})
}
