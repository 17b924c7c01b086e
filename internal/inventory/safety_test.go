package inventory

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kargo-fleet/kargo-fleet/internal/plan"
)

func TestCheckExpressions_boundsMessage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100<<10)
	tests := []struct {
		name   string
		target plan.Target
	}{
		{name: "long name", target: plan.Target{Name: long + ExpressionMarker, Source: "Inline"}},
		{name: "long param key", target: plan.Target{Name: long, Source: "Inline", Params: map[string]string{long: ExpressionMarker}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckExpressions([]plan.Target{tt.target})
			require.Error(t, err)
			require.LessOrEqual(t, len(err.Error()), 1024)
			require.Contains(t, err.Error(), "which Kargo would evaluate as an expression")
		})
	}
}
