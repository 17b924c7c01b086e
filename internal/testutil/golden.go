package testutil

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Golden compares got with the file testdata/name of the test's package, or
// writes got there when update is set (each package's -update flag); rerun
// is the command that rewrites the package's golden files.
func Golden(t testing.TB, name string, got []byte, update bool, rerun string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file: run "+rerun)
	require.Equal(t, string(want), string(got))
}
