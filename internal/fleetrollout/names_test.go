package fleetrollout

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestRollbackAttemptName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 62)
	seen := map[string]bool{}
	for _, of := range []string{"prod-1234567890", long} {
		for n := 1; n <= MaxRollbackAttempts; n++ {
			name := RollbackAttemptName(of, n)
			require.Empty(t, validation.IsValidLabelValue(name), name)
			require.Empty(t, validation.IsDNS1123Subdomain(name), name)
			require.False(t, seen[name], "attempt names are distinct: %s", name)
			seen[name] = true
			require.Equal(t, n, RollbackAttempt(name, of))
		}
		require.Equal(t, RollbackName(of), RollbackAttemptName(of, 1), "the first attempt keeps the rollback's name")
	}
	require.Equal(t, "prod-1-rb2", RollbackAttemptName("prod-1", 2))
	require.Zero(t, RollbackAttempt("prod-1-rb", "prod-2"))
	require.Zero(t, RollbackAttempt("prod-1", "prod-1"))
}
