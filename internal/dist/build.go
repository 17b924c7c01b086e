package dist

import (
	"context"
	"fmt"
	"os"
	"os/exec"
)

// VersionPackage is the package whose Version variable the build stamps.
const VersionPackage = "github.com/kargo-fleet/kargo-fleet/internal/version"

// BuildBinary cross-compiles cmd/kargo-fleet for p into out: static
// (CGO_ENABLED=0), trimmed paths, no symbol tables, version stamped. dir is
// the module's top folder.
func BuildBinary(ctx context.Context, dir string, p Platform, version, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", fmt.Sprintf("-s -w -X %s.Version=%s", VersionPackage, version),
		"-o", out, "./cmd/kargo-fleet")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, "GOTOOLCHAIN=local")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("error building kargo-fleet for %s: %w", p, err)
	}
	return nil
}
