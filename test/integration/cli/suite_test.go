//go:build integration

// Package cli_test runs kargo-fleet's verbs the way an operator does, through
// a kubeconfig and kubectl's connection flags, against a real kube-apiserver
// holding FleetStages and the inventory objects they list.
package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
)

var (
	env *envtest.Env
	// kubeconfig reaches the API server as a cluster administrator.
	kubeconfig string
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	env, err = envtest.Start()
	if err != nil {
		return 0, err
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	fmt.Printf("envtest: kube-apiserver %s started at %s with %s Kargo CRDs\n", envtest.K8sVersion, env.Config.Host,
		env.KargoCRDs)
	dir, err := os.MkdirTemp("", "kargo-fleet-cli-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	admin, err := env.AddUser("cli-admin", "system:masters")
	if err != nil {
		return 0, err
	}
	kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := fleetenv.WriteKubeconfig(admin, kubeconfig); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// kargoFleet runs the kargo-fleet command with args through the kubeconfig
// and returns what it wrote to standard output and standard error.
func kargoFleet(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(&out, &errOut)
	cmd.SetArgs(append(args, "--kubeconfig", kubeconfig))
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func ctx() context.Context { return context.Background() }
