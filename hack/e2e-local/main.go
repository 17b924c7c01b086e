// Command e2e-local runs the end-to-end suite (test/e2e) against a local
// fleet environment: a kube-apiserver and etcd, the Kargo simulator and
// kargo-fleet's controller and step server (internal/fleetenv). It writes the
// environment's kubeconfig, serves a controller restart endpoint on the
// loopback interface for the restart scenario, runs `go test -tags e2e
// ./test/e2e` with them and exits with its status.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
)

func main() {
	if err := run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "e2e-local:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "bin/e2e-local", "Where the kubeconfig is written.")
	goTestArgs := flag.String("args", "", "Extra arguments for go test, e.g. '-run TestApproval -e2e.auto-window=30s'; split on spaces.")
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.WarnLevel)))
	env, err := fleetenv.Start(context.Background(), fleetenv.Options{Simulator: kargosim.Options{Seed: 11}})
	if err != nil {
		return err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e-local: stopping the environment:", err)
		}
	}()
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	kubeconfig, err := filepath.Abs(filepath.Join(*dir, "kubeconfig"))
	if err != nil {
		return err
	}
	if err := fleetenv.WriteKubeconfig(env.Config, kubeconfig); err != nil {
		return err
	}
	restartURL, stopRestart, err := serveRestart(env)
	if err != nil {
		return err
	}
	defer stopRestart()
	fmt.Printf("e2e-local: control plane %s, kubeconfig %s\n", env.Config.Host, kubeconfig)

	args := []string{"test", "-count=1", "-tags", "e2e", "-timeout", "30m", "-v", "./test/e2e/"}
	if *goTestArgs != "" {
		args = append(args, strings.Fields(*goTestArgs)...)
	}
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "E2E_KUBECONFIG="+kubeconfig, "E2E_RESTART_URL="+restartURL)
	return cmd.Run()
}

// serveRestart serves POST /restart-controller: stop kargo-fleet's
// controller as a crash would and start a fresh one.
func serveRestart(env *fleetenv.Env) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("POST /restart-controller", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if err := env.StopController(); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "e2e-local: the controller stopped with:", err)
		}
		if err := env.StartController(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = fmt.Fprintln(w, "restarted")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String() + "/restart-controller", func() { _ = srv.Close() }, nil
}
