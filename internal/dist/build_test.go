package dist

import (
	"context"
	"debug/elf"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBuildPackage builds a small main package for this machine as the
// release builds kargo-fleet and checks what the release promises: the
// version is stamped, the binary is static and stripped, and it runs.
func TestBuildPackage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "printversion")
	p := Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	require.NoError(t, BuildPackage(ctx, filepath.Join("..", ".."), "./internal/dist/testdata/printversion", p, "v9.8.7", out))

	got, err := exec.CommandContext(ctx, out).CombinedOutput()
	require.NoError(t, err, string(got))
	require.Equal(t, "v9.8.7", strings.TrimSpace(string(got)))

	if runtime.GOOS != "linux" {
		return
	}
	f, err := elf.Open(out)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	for _, prog := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, prog.Type, "a static binary names no dynamic loader")
	}
	require.Nil(t, f.Section(".symtab"), "-s strips the symbol table")
}
