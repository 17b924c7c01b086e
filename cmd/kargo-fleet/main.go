// Command kargo-fleet runs the fleet controller and step server, runs fleet
// steps for custom step runners, and lets operators inspect and steer fleet
// rollouts (also usable as the kubectl plugin `kubectl fleet`).
package main

import (
	"errors"
	"os"

	"github.com/kargo-fleet/kargo-fleet/internal/cli"
)

func main() {
	if err := cli.NewRootCommand(os.Stdout, os.Stderr).Execute(); err != nil {
		var exit *cli.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.Code)
		}
		os.Exit(1)
	}
}
