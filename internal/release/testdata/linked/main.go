// Command linked stands in for kargo-fleet in the release tests: a small
// binary that links a few modules under each licence kargo-fleet ships
// (Apache-2.0, BSD-3-Clause, MIT, ISC, and a file holding several), so a
// release of it exercises the SBOM and the notices in seconds.
package main

import (
	"fmt"

	"github.com/davecgh/go-spew/spew"
	"github.com/go-logr/logr"
	"github.com/robfig/cron/v3"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/kargo-fleet/kargo-fleet/internal/version"
)

func main() {
	out, _ := yaml.Marshal(map[string]string{"version": version.Version})
	_, _ = cron.ParseStandard("@daily")
	pflag.Parse()
	logr.Discard().Info("linked")
	fmt.Print(string(out), spew.Sdump(1))
}
