//go:build integration

// Package api_test checks kargo-fleet's CRDs (schema and CEL rules) and
// Kargo's CRDs on a real kube-apiserver.
package api_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/kargo-fleet/kargo-fleet/test/envtest"
)

var env *envtest.Env

func TestMain(m *testing.M) {
	var err error
	env, err = envtest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("envtest: kube-apiserver %s started at %s with %s Kargo CRDs\n", envtest.K8sVersion, env.Config.Host, env.KargoCRDs)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
