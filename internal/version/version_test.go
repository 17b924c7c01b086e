package version

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	info := func(version string, settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: version}, Settings: settings}
	}
	require.Equal(t, "v0.1.0", fromBuildInfo(info("v0.1.0")), "go install ...@v0.1.0")
	require.Equal(t, "dev", fromBuildInfo(info("(devel)")), "no VCS information")
	require.Equal(t, "dev+1a2b3c4d5e6f", fromBuildInfo(info("(devel)",
		debug.BuildSetting{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, debug.BuildSetting{Key: "vcs.modified", Value: "false"})))
	require.Equal(t, "dev+1a2b3c4d5e6f-dirty", fromBuildInfo(info("",
		debug.BuildSetting{Key: "vcs.revision", Value: "1a2b3c4d5e6f7a8b9c0d"}, debug.BuildSetting{Key: "vcs.modified", Value: "true"})))
}
