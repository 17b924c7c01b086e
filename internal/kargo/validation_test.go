package kargo

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

func TestIsFreightNotAvailable(t *testing.T) {
	t.Parallel()
	gk := schema.GroupKind{Group: GroupVersion.Group, Kind: "Promotion"}
	refused := apierrors.NewInvalid(gk, "p1", field.ErrorList{
		field.Invalid(field.NewPath("spec", "freight"), "f1", FreightNotAvailable)})
	other := apierrors.NewInvalid(gk, "p1", field.ErrorList{field.Required(field.NewPath("spec", "stage"), "")})
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"Kargo's refusal", refused, true},
		{"wrapped", fmt.Errorf("creating: %w", refused), true},
		{"another Invalid", other, false},
		{"the message, not Invalid", apierrors.NewForbidden(schema.GroupResource{Group: gk.Group, Resource: "promotions"}, "p1", errors.New(FreightNotAvailable)), false},
		{"nil", nil, false},
	} {
		if got := IsFreightNotAvailable(tc.err); got != tc.want {
			t.Errorf("%s: IsFreightNotAvailable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
