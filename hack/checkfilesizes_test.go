// Package hack_test tests the scripts of hack/ by running them as make does.
package hack_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// git runs git in dir and fails the test on an error.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
}

// Test_checkFileSizes runs hack/check-file-sizes.sh in a scratch repository:
// a file of exactly 1 MiB passes; one byte more fails, staged or grown in
// the work tree, and the failure names the file; untracked and ignored
// files are not its business.
func Test_checkFileSizes(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("check-file-sizes.sh")
	require.NoError(t, err)
	const mib = 1 << 20

	tests := []struct {
		name     string
		setup    func(t *testing.T, dir string)
		wantFail string
	}{
		{
			name: "small and exactly 1 MiB files pass",
			setup: func(t *testing.T, dir string) {
				write(t, dir, "README.md", 10)
				write(t, dir, "docs/img/big but fine.png", mib)
				git(t, dir, "add", ".")
			},
		},
		{
			name: "a staged file one byte over fails",
			setup: func(t *testing.T, dir string) {
				write(t, dir, "scale", mib+1)
				git(t, dir, "add", ".")
			},
			wantFail: "scale (1048577 bytes staged)",
		},
		{
			name: "a committed file that grew in the work tree fails",
			setup: func(t *testing.T, dir string) {
				write(t, dir, "data/table.csv", 100)
				git(t, dir, "add", ".")
				git(t, dir, "commit", "-qm", "table")
				write(t, dir, "data/table.csv", 2*mib)
			},
			wantFail: "data/table.csv (2097152 bytes in the work tree)",
		},
		{
			name: "untracked and ignored files are left alone",
			setup: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("/bin/\n"), 0o644))
				write(t, dir, "bin/kube-apiserver", 2*mib)
				write(t, dir, "scratch.tar", 2*mib)
				git(t, dir, "add", ".gitignore")
			},
		},
		{
			name: "a deleted tracked file is judged by its staged size",
			setup: func(t *testing.T, dir string) {
				write(t, dir, "old.bin", mib+10)
				git(t, dir, "add", ".")
				require.NoError(t, os.Remove(filepath.Join(dir, "old.bin")))
			},
			wantFail: "old.bin (1048586 bytes staged)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			git(t, dir, "init", "-q")
			tt.setup(t, dir)
			cmd := exec.Command(script)
			cmd.Dir = dir
			if sub := filepath.Join(dir, "data"); isDir(sub) {
				cmd.Dir = sub // the script finds the repository's top itself
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if tt.wantFail == "" {
				require.NoError(t, err, stderr.String())
				return
			}
			require.Error(t, err)
			require.Contains(t, stderr.String(), "tracked files larger than 1048576 bytes")
			require.Contains(t, stderr.String(), "  "+tt.wantFail+"\n")
			require.Equal(t, 1, strings.Count(stderr.String(), "bytes "), "each file is named once: %s", stderr.String())
		})
	}
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// write creates dir/name holding size bytes.
func write(t *testing.T, dir, name string, size int) {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte("x"), size), 0o644))
}
