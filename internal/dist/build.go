package dist

import (
	"context"
	"fmt"
	"os"
	"os/exec"
)

// VersionPackage is the package whose Version variable the build stamps.
const VersionPackage = "github.com/kargo-fleet/kargo-fleet/internal/version"

// MainPackage is the kargo-fleet command, relative to the module's top
// folder.
const MainPackage = "./cmd/kargo-fleet"

// BuildBinary cross-compiles cmd/kargo-fleet for p into out: static
// (CGO_ENABLED=0), trimmed paths, no symbol tables, version stamped. dir is
// the module's top folder.
func BuildBinary(ctx context.Context, dir string, p Platform, version, out string) error {
	return BuildPackage(ctx, dir, MainPackage, p, version, out)
}

// BuildPackage builds the main package pkg (relative to dir, the module's
// top folder) the way BuildBinary builds kargo-fleet. Tests build a small
// main package with it to check the build and what carries its output
// without compiling the whole command.
func BuildPackage(ctx context.Context, dir, pkg string, p Platform, version, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", fmt.Sprintf("-s -w -X %s.Version=%s", VersionPackage, version),
		"-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, "GOTOOLCHAIN=local")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("error building %s for %s: %w", pkg, p, err)
	}
	return nil
}
