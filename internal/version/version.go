// Package version reports the build's version.
package version

import "runtime/debug"

// Version is set at build time with -ldflags "-X .../internal/version.Version=v1.2.3".
var Version = ""

// Get returns the version of this build: the stamped one (make build,
// make dist, make image), else the module version (go install
// ...@version), else "dev" with the commit the Go toolchain recorded, if
// any ("dev+1a2b3c4d5e6f", "+dirty" for uncommitted changes).
func Get() string {
	if Version != "" {
		return Version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return fromBuildInfo(info)
}

func fromBuildInfo(info *debug.BuildInfo) string {
	if info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	v := "dev"
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		v += "+" + rev[:min(len(rev), 12)]
		if settings["vcs.modified"] == "true" {
			v += "-dirty"
		}
	}
	return v
}
