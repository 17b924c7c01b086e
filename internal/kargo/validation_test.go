package kargo

import (
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateTaskSteps(t *testing.T) {
	t.Parallel()
	task := &PromotionTaskRef{Kind: ClusterPromotionTaskKind, Name: "fleet-rollback"}
	cfg := &apiextensionsv1.JSON{Raw: []byte(`{"a":1}`)}
	tests := []struct {
		name  string
		steps []PromotionStep
		want  []string
	}{
		{name: "task without if or config", steps: []PromotionStep{{Task: task, As: "rollback"}}},
		{name: "uses with if", steps: []PromotionStep{{Uses: "http", If: "${{ failure() }}", Config: cfg}}},
		{
			name:  "task with if",
			steps: []PromotionStep{{Uses: "http"}, {Task: task, If: "${{ failure() }}"}},
			want:  []string{"steps[1].if: Forbidden: " + TaskStepIfForbidden},
		},
		{
			name:  "task with if and config",
			steps: []PromotionStep{{Task: task, If: "${{ always() }}", Config: cfg}},
			want:  []string{"steps[0].if: Forbidden: " + TaskStepIfForbidden, "steps[0].config: Forbidden: " + TaskStepConfigForbidden},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, e := range ValidateTaskSteps(field.NewPath("steps"), tt.steps) {
				got = append(got, e.Error())
			}
			require.Equal(t, tt.want, got)
		})
	}
}
