package kargofleet

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLicense: the embedded text is the LICENSE file, Apache 2.0, with the
// project's copyright line; callers get their own copy.
func TestLicense(t *testing.T) {
	t.Parallel()
	onDisk, err := os.ReadFile(LicenseFile)
	require.NoError(t, err)
	got := License()
	require.Equal(t, onDisk, got)
	text := string(got)
	require.Contains(t, text, "Apache License\n                           Version 2.0, January 2004")
	require.Contains(t, text, "Copyright 2026 The kargo-fleet Authors")
	require.False(t, strings.Contains(text, "[yyyy]"), "the appendix's placeholder is filled in")
	got[0] = 'X'
	require.NotEqual(t, got[0], License()[0], "License returns a copy")
}
