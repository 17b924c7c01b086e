package hack_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const k8sVersion = "v1.37.1"

// envtestArchive is a tar.gz laid out as envtest's releases are
// (controlplane/<binary>), holding small programs that answer --version
// as the real ones do.
func envtestArchive(t *testing.T, apiserverVersion string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"kube-apiserver": "#!/bin/sh\necho 'Kubernetes " + apiserverVersion + "'\n",
		"etcd":           "#!/bin/sh\necho 'etcd Version: 3.6.16'\n",
		"kubectl":        "#!/bin/sh\necho 'Client Version: " + apiserverVersion + "'\n",
	} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "controlplane/" + name, Mode: 0o755, Size: int64(len(body)),
			Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// envtestIndex serves, on loopback, setup-envtest's release index listing
// archive for version on this machine's platform (hash: its SHA-512, or
// hash when given), and the archive itself.
func envtestIndex(t *testing.T, version string, archive []byte, hash string) *httptest.Server {
	t.Helper()
	name := fmt.Sprintf("envtest-%s-%s-%s.tar.gz", version, runtime.GOOS, runtime.GOARCH)
	if hash == "" {
		sum := sha512.Sum512(archive)
		hash = hex.EncodeToString(sum[:])
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	mux.HandleFunc("/envtest-releases.yaml", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, "releases:\n  %s:\n    %s:\n      hash: %s\n      selfLink: %s/archives/%s\n",
			version, name, hash, srv.URL, name)
	})
	mux.HandleFunc("/archives/"+name, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(archive) })
	t.Cleanup(srv.Close)
	return srv
}

// controlPlaneScript runs hack/build-control-plane.sh into dest with env.
func controlPlaneScript(t *testing.T, dest string, env ...string) *exec.Cmd {
	t.Helper()
	script, err := filepath.Abs("build-control-plane.sh")
	require.NoError(t, err)
	cmd := exec.Command(script, dest)
	// TMPDIR: a build stopped by the test leaves its scratch folder there.
	cmd.Env = append(os.Environ(), append([]string{"K8S_VERSION=" + k8sVersion, "ENVTEST_STORE=" + t.TempDir(),
		"TMPDIR=" + t.TempDir()}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// Test_buildControlPlane checks the control-plane script's choice against
// a release index served on loopback: envtest's prebuilt binaries when the
// index has them, a build from the module proxy when it has not, answers
// too late or offers something wrong.
func Test_buildControlPlane(t *testing.T) {
	t.Run("prebuilt binaries from the index, then a no-op", func(t *testing.T) {
		archive := envtestArchive(t, k8sVersion)
		srv := envtestIndex(t, k8sVersion, archive, "")
		dest := filepath.Join(t.TempDir(), "k8s")
		cmd := controlPlaneScript(t, dest, "ENVTEST_INDEX="+srv.URL+"/envtest-releases.yaml", "CONTROL_PLANE_SOURCE=auto")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, stderr.String())
		require.Equal(t, dest, strings.TrimSpace(string(out)))
		require.Contains(t, stderr.String(), "installed envtest's prebuilt binaries")
		require.NotContains(t, stderr.String(), "building etcd")
		for _, bin := range []string{"kube-apiserver", "etcd", "kubectl"} {
			got, err := exec.Command(filepath.Join(dest, bin), "--version").Output()
			require.NoError(t, err, bin)
			require.NotEmpty(t, got, bin)
		}
		stamp, err := os.ReadFile(filepath.Join(dest, ".stamp"))
		require.NoError(t, err)
		require.Equal(t, "kube-apiserver=v1.37.1 etcd=envtest source=setup-envtest\n", string(stamp))

		srv.Close()
		again := controlPlaneScript(t, dest, "ENVTEST_INDEX=http://127.0.0.1:1/none", "CONTROL_PLANE_SOURCE=envtest")
		out, err = again.Output()
		require.NoError(t, err, "a second run needs no index")
		require.Equal(t, dest, strings.TrimSpace(string(out)))
	})

	refusals := []struct {
		name    string
		index   func(t *testing.T) string
		timeout string
		wantLog string
	}{
		{
			name: "no archive of this version",
			index: func(t *testing.T) string {
				return envtestIndex(t, "v1.36.0", envtestArchive(t, "v1.36.0"), "").URL + "/envtest-releases.yaml"
			},
			wantLog: "no prebuilt binaries for v1.37.1",
		},
		{
			name: "an archive whose kube-apiserver is another version",
			index: func(t *testing.T) string {
				return envtestIndex(t, k8sVersion, envtestArchive(t, "v1.36.0"), "").URL + "/envtest-releases.yaml"
			},
			wantLog: "reports 'Kubernetes v1.36.0', not Kubernetes v1.37.1",
		},
		{
			name: "an archive that does not match its hash",
			index: func(t *testing.T) string {
				return envtestIndex(t, k8sVersion, envtestArchive(t, k8sVersion), strings.Repeat("ab", 64)).URL + "/envtest-releases.yaml"
			},
			wantLog: "checksum mismatch",
		},
		{
			name: "an index that never answers",
			index: func(t *testing.T) string {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				accepted := make(chan net.Conn, 16)
				go func() {
					for {
						c, err := l.Accept()
						if err != nil {
							return
						}
						accepted <- c // held open, never answered
					}
				}()
				t.Cleanup(func() {
					_ = l.Close()
					for len(accepted) > 0 {
						_ = (<-accepted).Close()
					}
				})
				return "http://" + l.Addr().String() + "/envtest-releases.yaml"
			},
			timeout: "3",
			wantLog: "no prebuilt binaries for v1.37.1 within 3s",
		},
	}
	for _, tt := range refusals {
		t.Run(tt.name+": envtest only fails", func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "k8s")
			cmd := controlPlaneScript(t, dest, "ENVTEST_INDEX="+tt.index(t), "CONTROL_PLANE_SOURCE=envtest",
				"ENVTEST_TIMEOUT="+cmpOr(tt.timeout, "60"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			start := time.Now()
			err := cmd.Run()
			require.Error(t, err)
			require.Contains(t, stderr.String(), tt.wantLog)
			require.Contains(t, stderr.String(), "CONTROL_PLANE_SOURCE=envtest: not building")
			require.NoFileExists(t, filepath.Join(dest, ".stamp"))
			require.NoFileExists(t, filepath.Join(dest, "kube-apiserver"))
			if tt.timeout != "" {
				require.Less(t, time.Since(start), 20*time.Second, "the download is bounded by ENVTEST_TIMEOUT")
			}
		})
	}

	t.Run("no archive of this version: auto builds from the module proxy", func(t *testing.T) {
		srv := envtestIndex(t, "v1.36.0", envtestArchive(t, "v1.36.0"), "")
		dest := filepath.Join(t.TempDir(), "k8s")
		cmd := controlPlaneScript(t, dest, "ENVTEST_INDEX="+srv.URL+"/envtest-releases.yaml", "CONTROL_PLANE_SOURCE=auto")
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var lines []string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), "building etcd") {
				break
			}
		}
		// The build itself takes minutes and is what `make control-plane`
		// exercises: the choice is made, stop it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		log := strings.Join(lines, "\n")
		require.Contains(t, log, "no prebuilt binaries for v1.37.1")
		require.Contains(t, log, "falling back to building from the Go module proxy")
		require.Contains(t, log, "building etcd v3.6.16")
	})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
